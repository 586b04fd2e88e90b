"""The two test folders' own rules (``parity_tests/``, ``tests/``).

Every marker a test carries is registered once, in ``pyproject.toml``, for both folders: a
run of ``tests/`` alone, which loads no kit conftest, and a port's run of the kit from its
own folder, where pytest finds the project's configuration above the kit's folder, both
select by any of them under ``--strict-markers`` (``pytest -m "not processes" tests/``).

No module of theirs imports a test module: what several share lives in a helper module
(``parity_tests/cases.py``, ``checks.py``; ``tests/processes.py``, ``codec/small_model.py``).
"""

from __future__ import annotations

import ast
import tomllib

from tests.processes import ROOT

PYTESTS_OWN = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}
TEST_FOLDERS = ("parity_tests", "tests")
CATALOGUE_READERS = {"tests/test_docs.py"}
"""Test modules that read other test modules' catalogues, not their helpers: the documents'
counts of the hostile inputs the suite tries are those catalogues' sizes."""


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


def imported_test_modules(source: str) -> set[str]:
    """The modules ``source`` imports whose last name starts ``test_``: ``import a.test_b``,
    ``from a.test_b import c`` and ``from a import test_b`` (where ``a/test_b.py`` is a file
    of the project, not a name defined in ``a``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            folder = ROOT.joinpath(*node.module.split("."))
            found.add(node.module)
            found |= {
                f"{node.module}.{alias.name}"
                for alias in node.names
                if (folder / f"{alias.name}.py").is_file()
            }
    return {name for name in found if name.rpartition(".")[2].startswith("test_")}


def python_files() -> dict[str, str]:
    """Each Python file of the test folders, by path, and its source."""
    paths = sorted(p for folder in TEST_FOLDERS for p in (ROOT / folder).rglob("*.py"))
    return {str(p.relative_to(ROOT)): p.read_text() for p in paths}


def test_every_marker_is_registered_once_in_pyproject() -> None:
    known = registered()
    for name, source in python_files().items():
        assert markers_used(source) <= known, f"{name}: {markers_used(source) - known}"
        assert not registers_markers(source), f"{name} registers a marker of its own"


def test_no_module_imports_a_test_module() -> None:
    for name, source in python_files().items():
        if name not in CATALOGUE_READERS:
            assert imported_test_modules(source) == set(), name


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
    imports = "from parity_tests.test_quantized import margin_checked\nimport tests.codec.test_b"
    imports += "\nfrom tests import test_docs, processes\nfrom parity_tests.cases import test_c"
    assert imported_test_modules(imports) == {
        "parity_tests.test_quantized",
        "tests.codec.test_b",
        "tests.test_docs",
    }
    assert imported_test_modules("from parity_tests.checks import streamed") == set()
