"""The suite as a conformance kit for ports of one's own: a backend that cannot be imported
stops the run once, at start-up, with the import error; a port in the directory pytest is
started from is found without ``PYTHONPATH``; ``--case`` narrows the cases."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.processes import ROOT, python

SUITE = ROOT / "parity_tests"


def _run_suite(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The suite in a fresh interpreter, without ``PYTHONPATH`` and, through ``-P``, without
    the working directory on ``sys.path``: only the suite itself may put it there."""
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    command = ["-P", "-m", "pytest", *args, "-p", "no:cacheprovider", "-q"]
    return python(*command, cwd=cwd, env=environment, timeout=300, check=False)


@pytest.mark.nested
def test_an_unimportable_backend_stops_the_run_once_naming_the_error(tmp_path: Path) -> None:
    result = _run_suite(str(SUITE), "--backend", "no_such_module:Port", cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert output.count("ModuleNotFoundError: No module named 'no_such_module'") == 1, output
    assert "--backend 'no_such_module:Port'" in output
    assert "failed" not in output and "passed" not in output, output


@pytest.mark.nested
@pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("jax", "optax")),
    reason="the example port needs jax and optax: pip install 'frae[jax]'",
)
def test_a_port_outside_the_repository_runs_from_its_own_directory(tmp_path: Path) -> None:
    shutil.copy(ROOT / "examples" / "plain_jax.py", tmp_path / "my_port.py")
    command = [str(SUITE / "test_interface.py"), "--backend", "my_port:PlainJaxFRAE"]
    command += ["-k", "test_one_sequence_gives_two_dimensional_outputs"]
    result = _run_suite(*command, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.OK, output
    passed = re.search(r"(\d+) passed", output)
    assert passed is not None and int(passed.group(1)) > 0, output


@pytest.mark.nested
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="the port wraps jax_scan")
def test_a_port_without_the_optional_members_passes_the_kit() -> None:
    """``tests/wrapped_port.py``, a faithful wrapper of jax_scan with the required members
    alone (no ``export``, ``export_formats`` nor ``devices``): the kit's tests of the
    interface, of exports (refused, naming why, nothing written) and of ``devices`` (refused,
    naming it) pass on it. ``make parity BACKEND=tests.wrapped_port:WrappedJaxScan`` runs the
    whole kit on it."""
    modules = (str(SUITE / f"test_{name}.py") for name in ("interface", "exports", "data_parallel"))
    result = _run_suite(*modules, "--backend", "tests.wrapped_port:WrappedJaxScan", cwd=ROOT)
    output = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.OK, output[-3000:]
    passed = re.search(r"(\d+) passed", output)
    assert passed is not None and int(passed.group(1)) > 10, output[-3000:]
    assert "failed" not in output, output[-3000:]


@pytest.mark.nested
def test_case_runs_the_tests_of_a_case_on_the_cases_named_alone(tmp_path: Path) -> None:
    """``--case`` narrows the tests that take a case of ``cases.py``, and only those: a test
    on a config of its own (the random configs) is collected either way."""
    collect = [str(SUITE), "--backend", "reference", "--collect-only"]
    every, named = (_run_suite(*collect, *cases, cwd=ROOT) for cases in ([], ["--case", "state"]))
    every_ids, named_ids = (set(run.stdout.split()) for run in (every, named))
    assert named.returncode == every.returncode == pytest.ExitCode.OK, named.stdout[-2000:]
    interface = {i for i in every_ids if i.startswith("parity_tests/test_interface.py::")}
    assert {i for i in interface if i in named_ids} == {
        i for i in interface if i.endswith("-state]")
    }
    random_configs = {i for i in every_ids if "test_random_configs.py::" in i}
    assert random_configs and random_configs <= named_ids
