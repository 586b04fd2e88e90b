"""The suite rejects every deliberately broken implementation, for the property it breaks.

Each mutant of ``parity_tests.mutants``, ``gru_mutants``, ``stream_mutants``,
``resume_mutants``, ``quantized_mutants``, ``rate_mutants``, ``codec_mutants``,
``torch_mutants``, ``data_parallel_mutants`` and ``export_mutants`` runs through the tests of
the property it names; at least one of them must fail. The control (the unbroken
``Float32Reference``) must pass the whole kit, and the unbroken ``jax_scan`` of the
data-parallel and export mutants their tests, so a failure is the mutation's doing. All run
in one subprocess of the kit (``tests/kit_plan.py``), which starts once. The kill rate is
printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from parity_tests import (
    codec_mutants,
    gru_mutants,
    mutants,
    quantized_mutants,
    rate_mutants,
    resume_mutants,
    stream_mutants,
)
from parity_tests.properties import PROPERTIES, markdown_table
from tests import kit_plan
from tests.processes import ROOT, python

KIT = ROOT / "parity_tests"
DATA_PARALLEL_MUTANTS = ("GradientsSummedOverDevices", "LastShardDropped")
"""``parity_tests.data_parallel_mutants``: ``jax_scan`` averaging the devices' gradients
wrongly (named here, so that collecting this file imports no framework)."""
EXPORT_MUTANTS = ("WeightsFromCreation", "StateInputIgnored", "UnrolledForOneT")
"""``parity_tests.export_mutants``: ``jax_scan``'s StableHLO exporter broken (named here too)."""
EXPORT_TESTS = sorted({pattern.partition("[")[0] for pattern in PROPERTIES["exports"].tests})
"""The tests the export mutants and their control run."""
ONE_PROCESS = ["test_data_parallel_equals_one_device"]
"""The data-parallel test the data-parallel mutants and their control run: four devices in
one process, where either wrong mean shows; the kit's test across processes needs two more
processes of the framework, and checks the same combination."""
TORCH_MUTANTS = ("MomentsInTorchsLayout",)
"""``parity_tests.torch_mutants``: ``torch_scan`` moving Adam's moments without the transpose
its weights get (named here too); its control is torch_scan's own run of the kit."""
RESUMED = "test_a_checkpoint_resumes_fit_where_it_stopped[parity_tests.torch_mutants"
TORCH_RESUME_TESTS = [f"{RESUMED}:MomentsInTorchsLayout-reference-output-adam]"]
"""The resume test the torch mutant runs: Adam's moments crossing to the reference and back,
where a layout of its own shows (SGD keeps none; each other test compiles torch_scan anew)."""

TARGETS = (
    {
        mutant.__name__: (f"{module.__name__}:{mutant.__name__}", mutant.breaks)
        for module in (
            mutants,
            gru_mutants,
            stream_mutants,
            resume_mutants,
            quantized_mutants,
            rate_mutants,
            codec_mutants,
        )
        for mutant in module.MUTANTS
    }
    | {
        name: (f"parity_tests.data_parallel_mutants:{name}", "data_parallel")
        for name in DATA_PARALLEL_MUTANTS
    }
    | {name: (f"parity_tests.export_mutants:{name}", "exports") for name in EXPORT_MUTANTS}
    | {name: (f"parity_tests.torch_mutants:{name}", "resume") for name in TORCH_MUTANTS}
)
"""Mutant name -> (its import path, the property it breaks)."""


CONTROLS = {
    "parity_tests.mutants:Float32Reference": None,
    "parity_tests.data_parallel_mutants:CorrectlyAveraged": ONE_PROCESS,
    "parity_tests.export_mutants:CorrectlyExported": EXPORT_TESTS,
}
"""The unbroken controls and the tests each runs (``None``: the whole kit)."""
Results = dict[str, dict[str, bool]]
"""Backend -> test id -> passed, from the one run; ``""``: the tests that check no backend."""


def plan() -> dict[str, list[str] | None]:
    """Each backend of the one run and the test functions it runs (``tests/kit_plan.py``):
    the controls, and each mutant through the tests of the property it breaks."""
    mutants: dict[str, list[str] | None] = {}
    for name, (target, breaks) in TARGETS.items():
        patterns = PROPERTIES[breaks].tests
        names = sorted({pattern.partition("[")[0] for pattern in patterns})
        if name in DATA_PARALLEL_MUTANTS:
            names = ONE_PROCESS
        elif name in TORCH_MUTANTS:
            names = TORCH_RESUME_TESTS
        mutants[target] = names
    return CONTROLS | mutants


def run_kit_over_mutants(folder: Path) -> Results:
    """One run of the kit over the controls and every mutant, each through its tests."""
    (folder / "plan.json").write_text(json.dumps(plan()))
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(KIT)]
    command += ["-p", "tests.kit_plan", "--other-backend", "reference"]
    command += [f"--junitxml={folder / 'run.xml'}"]
    for backend in plan():
        command += ["--backend", backend]
    environment = {**os.environ, kit_plan.PLAN: str(folder / "plan.json")}
    python(*command, env=environment, timeout=2400, check=False)
    results: Results = {backend: {} for backend in plan()}
    for case in ElementTree.parse(folder / "run.xml").getroot().iter("testcase"):
        if any(child.tag == "skipped" for child in case):
            continue
        backend = kit_plan.backend_of(case.attrib["name"], list(plan()))
        failed = any(child.tag in ("failure", "error") for child in case)
        results.setdefault(backend or "", {})[case.attrib["name"]] = not failed
    return results


def test_every_property_has_a_mutant() -> None:
    assert {breaks for _, breaks in TARGETS.values()} == set(PROPERTIES)


def control_failures(results: Results) -> list[str]:
    """What the controls got wrong: a failed test, a property no test checked, a run too
    small to be the whole kit, the data-parallel control not passing its one test."""
    control = results["parity_tests.mutants:Float32Reference"] | results.get("", {})
    failures = [f"control failed {test}" for test, passed in control.items() if not passed]
    failures += [
        f"no test checks {key}"
        for key, p in PROPERTIES.items()
        if not any(p.selects(test) for test in control)
    ]
    failures += [f"the control ran {len(control)} tests"] if len(control) <= 100 else []
    averaged = results["parity_tests.data_parallel_mutants:CorrectlyAveraged"]
    if len(averaged) != 1 or not all(averaged.values()):
        failures.append(f"the data-parallel control: {averaged}")
    exported = results["parity_tests.export_mutants:CorrectlyExported"]
    if len(exported) < len(EXPORT_TESTS) or not all(exported.values()):
        failures.append(f"the export control: {exported}")
    return failures


def survivors(results: Results, verdicts: dict[str, bool]) -> list[str]:
    """The mutants that passed every test of the property they break (or ran none of them
    or another property's tests), each verdict recorded in ``verdicts``."""
    found = []
    for mutant, (target, breaks) in TARGETS.items():
        prop, names = PROPERTIES[breaks], plan()[target] or []
        checked = {test: ok for test, ok in results[target].items() if prop.selects(test)}
        strays = {t for t in results[target] if t not in names and t.partition("[")[0] not in names}
        verdicts[mutant] = bool(checked) and not all(checked.values()) and not strays
        if not verdicts[mutant]:
            found.append(f"{mutant} ({breaks}): ran {len(checked)}, strays {sorted(strays)}")
    return found


@pytest.mark.nested
def test_the_kit_rejects_every_mutant_and_passes_its_controls(
    tmp_path: Path, mutant_verdicts: dict[str, bool]
) -> None:
    """One run of the kit: the controls pass the whole kit (the data-parallel one its one
    test), and each mutant fails at least one test of the property it breaks, running no
    other property's tests."""
    results = run_kit_over_mutants(tmp_path)
    wrong, alive = control_failures(results), survivors(results, mutant_verdicts)
    assert not wrong, wrong
    assert not alive, alive


def test_readme_lists_every_property_and_mutant() -> None:
    readme = (KIT / "README.md").read_text()
    assert markdown_table() in readme
    for mutant in TARGETS:
        assert f"| `{mutant}` |" in readme
