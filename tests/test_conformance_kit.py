"""The suite as a conformance kit for ports of one's own: a backend that cannot be imported
stops the run once, at start-up, with the import error; a port in the directory pytest is
started from is found without ``PYTHONPATH``; ``--case`` narrows the cases; a port without the
optional members, or whose factory leaves out the optional ``devices`` parameter (the
contract's "Public interface"), is judged on what it has."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from frae.config import FRAEConfig
from frae.params import Weights
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


class WrappedJaxScan:
    """A port as a user might write one: every required member of the contract delegated to
    a jax_scan backend, and none of the optional ones (``export``, ``export_formats``,
    ``devices``)."""

    name = "wrapped_jax_scan"

    def __init__(
        self,
        config: frae.FRAEConfig | None = None,
        *,
        seed: int = 0,
        weights: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self._inner = frae.create("jax_scan", config, seed=seed, weights=weights)
        self.config = self._inner.config

    def get_weights(self) -> dict[str, np.ndarray]:
        return self._inner.get_weights()

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        self._inner.set_weights(weights)

    def initial_state(self, batch: int | None = None) -> np.ndarray:
        return self._inner.initial_state(batch)

    def predict(self, x: np.ndarray, **options: Any) -> Any:
        return self._inner.predict(x, **options)

    def encode(self, x: np.ndarray, **options: Any) -> Any:
        return self._inner.encode(x, **options)

    def decode(self, z: np.ndarray, **options: Any) -> Any:
        return self._inner.decode(z, **options)

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray | None = None) -> Any:
        return self._inner.loss_and_grads(x, y)

    def fit(self, x: np.ndarray, y: np.ndarray | None = None, **options: Any) -> Any:
        return self._inner.fit(x, y, **options)


@pytest.mark.nested
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="the port wraps jax_scan")
def test_a_port_without_the_optional_members_passes_the_kit() -> None:
    """``WrappedJaxScan``: the kit's tests of the interface, of exports (refused, naming why,
    nothing written) and of ``devices`` (refused, naming it) pass on it. ``make parity
    BACKEND=tests.test_conformance_kit:WrappedJaxScan`` runs the whole kit on it."""
    modules = (str(SUITE / f"test_{name}.py") for name in ("interface", "exports", "data_parallel"))
    result = _run_suite(*modules, "--backend", f"{__name__}:WrappedJaxScan", cwd=ROOT)
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


def reference_without_devices(
    config: FRAEConfig | None = None, *, seed: int = 0, weights: Weights | None = None
) -> frae.Backend:
    """The reference, built by a factory without a ``devices`` parameter."""
    return frae.create("reference", config, seed=seed, weights=weights)


def devices_ignored(
    config: FRAEConfig | None = None,
    *,
    seed: int = 0,
    weights: Weights | None = None,
    **options: object,
) -> frae.Backend:
    """The reference on one device whatever ``devices`` it is given: nothing refuses 2."""
    return frae.create("reference", config, seed=seed, weights=weights)


PORTS = {f"{__name__}:reference_without_devices": "PASSED", f"{__name__}:devices_ignored": "FAILED"}
"""Each port, and the kit's verdict on it."""


@pytest.mark.nested
def test_the_kit_passes_a_port_without_devices_and_fails_one_that_ignores_them() -> None:
    command = [str(SUITE / "test_data_parallel.py"), "-k", "refused", "-rA"]
    for port in PORTS:
        command += ["--backend", port]
    result = _run_suite(*command, cwd=ROOT)
    output = result.stdout + result.stderr
    verdict = re.compile(
        r"^(PASSED|FAILED) \S+::test_devices_refused_without_engine\[(\S+)\]", re.M
    )
    verdicts = {port: outcome for outcome, port in verdict.findall(output)}
    assert verdicts == PORTS, output
    assert "DID NOT RAISE" in output, output  # the port that ignores devices: not refused
