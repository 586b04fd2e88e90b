"""The suite rejects every deliberately broken implementation, for the property it breaks.

Each mutant of ``parity_tests.mutants``, ``gru_mutants``, ``stream_mutants`` and
``data_parallel_mutants`` runs through the tests of the property it names; at least one of
them must fail. The control (the unbroken ``Float32Reference``) must pass the whole kit, so
a failure is the mutation's doing. All run in one subprocess of the kit
(``tests/kit_plan.py``), which starts once. The kill rate is printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from parity_tests import gru_mutants, mutants, stream_mutants
from parity_tests.properties import PROPERTIES, markdown_table
from tests import kit_plan

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
    mutant.__name__: (f"{module.__name__}:{mutant.__name__}", mutant.breaks)
    for module in (mutants, gru_mutants, stream_mutants)
    for mutant in module.MUTANTS
} | {
    name: (f"parity_tests.data_parallel_mutants:{name}", "data_parallel")
    for name in DATA_PARALLEL_MUTANTS
}
"""Mutant name -> (its import path, the property it breaks)."""


ONE_RUN = pytest.mark.xdist_group("kit_over_mutants")
"""Under ``pytest -n``, the tests that read ``kit_results`` share one worker, and so one run."""
CONTROLS = {
    "parity_tests.mutants:Float32Reference": None,
    "parity_tests.data_parallel_mutants:CorrectlyAveraged": ONE_PROCESS,
}
"""The unbroken controls and the tests each runs (``None``: the whole kit)."""


def plan() -> dict[str, list[str] | None]:
    """Each backend of the one run and the test functions it runs (``tests/kit_plan.py``):
    the controls, and each mutant through the tests of the property it breaks."""
    mutants: dict[str, list[str] | None] = {}
    for name, (target, breaks) in TARGETS.items():
        patterns = PROPERTIES[breaks].tests
        names = sorted({pattern.partition("[")[0] for pattern in patterns})
        mutants[target] = ONE_PROCESS if name in DATA_PARALLEL_MUTANTS else names
    return CONTROLS | mutants


@pytest.fixture(scope="session")
def kit_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bool]]:
    """One run of the kit over the controls and every mutant: backend -> test id -> passed."""
    folder = tmp_path_factory.mktemp("mutants")
    (folder / "plan.json").write_text(json.dumps(plan()))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(KIT)]
    command += ["-p", "tests.kit_plan", "--other-backend", "reference"]
    command += [f"--junitxml={folder / 'run.xml'}"]
    for backend in plan():
        command += ["--backend", backend]
    environment = {**os.environ, kit_plan.PLAN: str(folder / "plan.json")}
    subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, timeout=2400)
    results: dict[str, dict[str, bool]] = {backend: {} for backend in plan()}
    for case in ElementTree.parse(folder / "run.xml").getroot().iter("testcase"):
        if any(child.tag == "skipped" for child in case):
            continue
        backend = kit_plan.backend_of(case.attrib["name"], list(plan()))
        failed = any(child.tag in ("failure", "error") for child in case)
        results.setdefault(backend or "", {})[case.attrib["name"]] = not failed
    return results


def test_every_property_has_a_mutant() -> None:
    assert {breaks for _, breaks in TARGETS.values()} == set(PROPERTIES)


@pytest.mark.nested
@ONE_RUN
def test_control_passes_the_whole_suite(kit_results: dict[str, dict[str, bool]]) -> None:
    results = kit_results["parity_tests.mutants:Float32Reference"] | kit_results.get("", {})
    assert len(results) > 100
    assert all(results.values()), [test for test, passed in results.items() if not passed]
    for key, prop in PROPERTIES.items():
        assert any(prop.selects(test) for test in results), f"no test checks {key}"


@pytest.mark.nested
@ONE_RUN
@pytest.mark.parametrize("mutant", list(TARGETS))
def test_suite_rejects_mutant(
    mutant: str, kit_results: dict[str, dict[str, bool]], mutant_verdicts: dict[str, bool]
) -> None:
    target, breaks = TARGETS[mutant]
    prop = PROPERTIES[breaks]
    checked = {test: passed for test, passed in kit_results[target].items() if prop.selects(test)}
    assert checked, f"no test of {breaks!r} ran"
    mutant_verdicts[mutant] = not all(checked.values())
    assert not all(checked.values()), f"{mutant} passed every {breaks!r} test"


@pytest.mark.nested
@ONE_RUN
def test_data_parallel_control_passes(kit_results: dict[str, dict[str, bool]]) -> None:
    """The data-parallel mutants' own step, combining the devices' gradients rightly, passes:
    their failures are their mutations' doing."""
    results = kit_results["parity_tests.data_parallel_mutants:CorrectlyAveraged"]
    assert len(results) == 1 and all(results.values()), results


@pytest.mark.nested
@ONE_RUN
def test_the_plan_runs_each_backend_through_its_tests_alone(
    kit_results: dict[str, dict[str, bool]],
) -> None:
    """Every test of the one run is its backend's planned tests (or, for the control, the
    whole kit): no mutant runs another property's tests, none runs nothing."""
    for backend, names in plan().items():
        ran = {test.partition("[")[0] for test in kit_results[backend]}
        assert ran, f"{backend} ran no test"
        if names is not None:
            assert ran <= set(names), (backend, sorted(ran - set(names)))


def test_readme_lists_every_property_and_mutant() -> None:
    readme = (ROOT / "parity_tests" / "README.md").read_text()
    assert markdown_table() in readme
    for mutant in TARGETS:
        assert f"| `{mutant}` |" in readme
