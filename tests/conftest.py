"""The project's own tests: each backend's internals, the benchmark, the floors, the layout,
the demo and the command line (the conformance kit is ``parity_tests/``).

Under ``pytest -n`` (``make test``), the tests of one backend's internals share a worker,
where its compiled functions are cached.
"""

from __future__ import annotations

import pytest

from frae.quiet import load_triton_before_tensorflow

# tests import TensorFlow themselves; torch.compile's Triton must be loaded before it
load_triton_before_tensorflow()

MUTANT_VERDICTS = pytest.StashKey[dict[str, bool]]()
"""Mutant name -> whether the kit rejected it, filled by ``test_mutants.py``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    # the kit's ini option (parity_tests/conftest.py), which pyproject.toml sets: declared
    # here too, so that a run of tests/ alone, which loads no kit conftest, knows it
    parser.addini("training_only_backends", "the kit's: parity_tests/conftest.py", type="linelist")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        specific = item.get_closest_marker("backend_specific")
        if specific is not None and item.get_closest_marker("nested") is None:
            item.add_marker(pytest.mark.xdist_group(specific.args[0]))


@pytest.fixture
def mutant_verdicts(request: pytest.FixtureRequest) -> dict[str, bool]:
    return request.config.stash.setdefault(MUTANT_VERDICTS, {})


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a ``pytest -n`` worker, hand the mutant verdicts to the controller."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["mutant_verdicts"] = session.config.stash.get(
            MUTANT_VERDICTS, {}
        )


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """pytest-xdist's controller: gather each worker's mutant verdicts for the summary."""
    verdicts = getattr(node, "workeroutput", {}).get("mutant_verdicts", {})
    node.config.stash.setdefault(MUTANT_VERDICTS, {}).update(verdicts)  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    verdicts = terminalreporter.config.stash.get(MUTANT_VERDICTS, {})
    if verdicts:
        killed = sum(verdicts.values())
        terminalreporter.write_line(
            f"mutants rejected by the suite: {killed}/{len(verdicts)} "
            f"({100 * killed / len(verdicts):.0f}%)"
            + "".join(f"; survived: {name}" for name, dead in verdicts.items() if not dead)
        )
