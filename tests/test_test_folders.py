"""Every marker a test carries is registered once, in ``pyproject.toml``, for both test
folders: a run of ``tests/`` alone, which loads no kit conftest, and a port's run of the kit
from its own folder, where pytest finds the project's configuration above the kit's folder,
both select by any of them under ``--strict-markers`` (``pytest -m "not processes" tests/``).
"""

from __future__ import annotations

import ast
import tomllib

from tests.processes import ROOT

PYTESTS_OWN = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}
TEST_FOLDERS = ("parity_tests", "tests")


def markers_used(source: str) -> set[str]:
    """The markers ``source`` names, pytest's own aside: ``pytest.mark.NAME``, and the
    ``"NAME"`` of ``get_closest_marker`` or ``iter_markers``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "pytest"
        ):
            found.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") in ("get_closest_marker", "iter_markers")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(node.args[0].value)
    return found - PYTESTS_OWN


def registers_markers(source: str) -> bool:
    """Whether ``source`` registers a marker itself: ``addinivalue_line("markers", ...)``."""
    return any(
        isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "addinivalue_line"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "markers"
        for node in ast.walk(ast.parse(source))
    )


def registered() -> set[str]:
    """The markers ``pyproject.toml`` registers: each line's name, before its ``(`` or ``:``."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    return {line.partition(":")[0].partition("(")[0] for line in options["ini_options"]["markers"]}


def test_every_marker_is_registered_once_in_pyproject() -> None:
    known = registered()
    for folder in TEST_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            source, name = path.read_text(), str(path.relative_to(ROOT))
            assert markers_used(source) <= known, f"{name}: {markers_used(source) - known}"
            assert not registers_markers(source), f"{name} registers a marker of its own"


def test_the_checks_reject_planted_violations() -> None:
    planted = """
@pytest.mark.processes
@pytest.mark.parametrize("x", [1])
def test(request):
    request.node.get_closest_marker("nested")
"""
    assert markers_used(planted) == {"processes", "nested"}
    assert markers_used("mark.slow\nother.mark.slow") == set()
    assert registers_markers('config.addinivalue_line("markers", "slow: ...")')
    assert not registers_markers('config.addinivalue_line("filterwarnings", "ignore")')
    assert {"slow", "xdist_group"} <= registered()
