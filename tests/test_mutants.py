"""The suite rejects every deliberately broken implementation, for the property it breaks.

Each mutant of ``parity_tests.mutants`` runs, in a subprocess, through the tests of the
property it names; at least one of them must fail. The control (the unbroken
``Float32Reference``) must pass the whole backend-generic suite, so a failure is the
mutation's doing. The kill rate is printed at the end of the run.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from parity_tests.mutants import MUTANTS
from parity_tests.properties import PROPERTIES, markdown_table

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "parity_tests"
DATA_PARALLEL_MUTANTS = ("GradientsSummedOverDevices", "LastShardDropped")
"""``parity_tests.data_parallel_mutants``: ``jax_scan`` averaging the devices' gradients
wrongly (named here, so that collecting this file imports no framework)."""
ONE_PROCESS = ["test_data_parallel_equals_one_device"]
"""The data-parallel test the data-parallel mutants and their control run: four devices in
one process, where either wrong mean shows; the kit's test across processes needs two more
processes of the framework, and checks the same combination."""
TARGETS = {
    mutant.__name__: (f"parity_tests.mutants:{mutant.__name__}", mutant.breaks)
    for mutant in MUTANTS
} | {
    name: (f"parity_tests.data_parallel_mutants:{name}", "data_parallel")
    for name in DATA_PARALLEL_MUTANTS
}
"""Mutant name -> (its import path, the property it breaks)."""


def run_suite(backend: str, junit: Path, names: list[str] | None = None) -> dict[str, bool]:
    """Run the generic tests against ``backend``; test id -> passed."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(KIT)]
    command += ["--backend", backend, "--other-backend", "reference", f"--junitxml={junit}"]
    if names:
        command += ["-k", " or ".join(names)]
    subprocess.run(command, cwd=ROOT, capture_output=True, timeout=900, check=False)
    return {
        case.attrib["name"]: not any(child.tag in ("failure", "error") for child in case)
        for case in ElementTree.parse(junit).getroot().iter("testcase")
        if not any(child.tag == "skipped" for child in case)
    }


def test_every_property_has_a_mutant() -> None:
    assert {breaks for _, breaks in TARGETS.values()} == set(PROPERTIES)


@pytest.mark.nested
def test_control_passes_the_whole_suite(tmp_path: Path) -> None:
    results = run_suite("parity_tests.mutants:Float32Reference", tmp_path / "control.xml")
    assert len(results) > 100
    assert all(results.values()), [test for test, passed in results.items() if not passed]
    for key, prop in PROPERTIES.items():
        assert any(prop.selects(test) for test in results), f"no test checks {key}"


@pytest.mark.nested
@pytest.mark.parametrize("mutant", list(TARGETS))
def test_suite_rejects_mutant(
    mutant: str, tmp_path: Path, mutant_verdicts: dict[str, bool]
) -> None:
    target, breaks = TARGETS[mutant]
    prop = PROPERTIES[breaks]
    names = sorted({pattern.partition("[")[0] for pattern in prop.tests})
    if mutant in DATA_PARALLEL_MUTANTS:
        names = ONE_PROCESS
    results = run_suite(target, tmp_path / "run.xml", names)
    checked = {test: passed for test, passed in results.items() if prop.selects(test)}
    assert checked, f"no test of {breaks!r} ran"
    mutant_verdicts[mutant] = not all(checked.values())
    assert not all(checked.values()), f"{mutant} passed every {breaks!r} test"


@pytest.mark.nested
def test_data_parallel_control_passes(tmp_path: Path) -> None:
    """The data-parallel mutants' own step, combining the devices' gradients rightly, passes:
    their failures are their mutations' doing."""
    results = run_suite(
        "parity_tests.data_parallel_mutants:CorrectlyAveraged",
        tmp_path / "control.xml",
        ONE_PROCESS,
    )
    assert len(results) == 1 and all(results.values()), results


def test_readme_lists_every_property_and_mutant() -> None:
    readme = (ROOT / "parity_tests" / "README.md").read_text()
    assert markdown_table() in readme
    for mutant in TARGETS:
        assert f"| `{mutant}` |" in readme
