"""``tests/scheduling.py`` under ``pytest -n 2 --dist loadgroup --no-loadscope-reorder`` (what
``make test`` runs), on a small suite written here: every ``xdist_group`` on one worker, and
the ``nested`` tests after the others, the ``processes`` tests last."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from tests.processes import ROOT, python

SUITE = """
import time
import pytest

@pytest.mark.processes
def test_processes_first_in_the_file():
    pass

@pytest.mark.nested
def test_nested_first_in_the_file():
    pass

@pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(8))
def test_one(i):
    time.sleep(0.01)

@pytest.mark.xdist_group("two")
@pytest.mark.parametrize("i", range(8))
def test_two(i):
    time.sleep(0.01)

@pytest.mark.parametrize("i", range(8))
def test_free(i):
    time.sleep(0.01)

"""
PASSED = re.compile(r"^\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+)", re.MULTILINE)


def run_suite(tmp_path: Path) -> list[tuple[str, str]]:
    """(worker, test id) of each passed test, in the order they finished."""
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    nested: nested\n    processes: processes\n"
    )
    command = ["-m", "pytest", "-v", "-p", "no:cacheprovider"]
    command += ["-p", "tests.scheduling", "-n", "2", "--dist", "loadgroup"]
    command += ["--no-loadscope-reorder", str(tmp_path)]
    environment = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    result = python(*command, cwd=tmp_path, env=environment, timeout=300)
    return PASSED.findall(result.stdout)


def test_each_group_runs_on_one_worker_nested_tests_late_processes_last(tmp_path: Path) -> None:
    passed = run_suite(tmp_path)
    assert len(passed) == 26
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, test_id in passed:
        group = test_id.rpartition("@")[2] if "@" in test_id else test_id
        workers[group].add(worker)
    assert workers["one"] and len(workers["one"]) == 1, passed
    assert workers["two"] and len(workers["two"]) == 1, passed
    # handed out last but one: only the test on the other worker may finish after it
    finished = [test_id for _, test_id in passed]
    assert "test_suite.py::test_nested_first_in_the_file" in finished[-3:], passed
    last_of_its_worker = dict(passed)
    assert any("test_processes_first" in t for t in last_of_its_worker.values()), passed
