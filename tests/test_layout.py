"""The project's shape: the same files in every backend folder (and an ``export.py`` where
its framework exports), one ``unroll`` signature, dependencies that point one way (the core
imports no implementation, by any means), and the contract's facts written once, in ``frae``.

Each check reads the source (``ast``), imports nothing, and is shown to reject a planted
violation.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BACKEND_FOLDERS = sorted(p for p in (ROOT / "impls").iterdir() if (p / "__init__.py").exists())
FILE_ROLES = {"__init__.py", "model.py", "train.py", "backend.py"}
OPTIONAL_ROLES = {"export.py", "optimizers.py"}
"""The artifacts of a backend whose framework has deployment formats (the contract's
"Exports");
the optimizers of a backend that adapts its framework's own classes (keras_rnn)."""
UNROLL = (["config", "weights", "sequences"], ["codes_given", "state"])
"""``unroll(config, weights, sequences, *, codes_given=False, state=None, ...)``."""


def imported_modules(source: str) -> set[str]:
    """Every absolute module an ``import`` or ``from ... import`` in ``source`` names."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def reaches_into(source: str, packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in imported_modules(source) if within(m, packages))


IMPORTERS = ("import_module", "__import__")
"""The calls that import a module by name: ``importlib.import_module`` (however it is
reached) and the builtin ``__import__``."""


def imported_by_name(source: str) -> list[str]:
    """Modules ``source`` imports by ``importlib.import_module("name")`` or
    ``__import__("name")``, a literal name."""
    return sorted(
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", "")) in IMPORTERS
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def private_attributes(source: str) -> list[str]:
    """``x._name`` reads of another object's ``_``-prefixed attribute (not ``self``'s,
    ``cls``'s or ``super()``'s, and not dunders)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") or (
            isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        ):
            continue
        if isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "super":
            continue
        found.append(f"line {node.lineno}: .{node.attr}")
    return found


def unroll_signature(source: str) -> tuple[list[str], list[str]] | None:
    """Positional and keyword-only parameter names of ``unroll`` in ``source``."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "unroll":
            return [a.arg for a in node.args.args], [a.arg for a in node.args.kwonlyargs]
    return None


def _sources(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(folder.rglob("*.py"))}


@pytest.mark.parametrize("folder", BACKEND_FOLDERS, ids=lambda p: p.name)
def test_every_backend_folder_has_the_same_files(folder: Path) -> None:
    found = {p.name for p in folder.glob("*.py")}
    assert FILE_ROLES <= found <= FILE_ROLES | OPTIONAL_ROLES, sorted(found)


@pytest.mark.parametrize("folder", BACKEND_FOLDERS, ids=lambda p: p.name)
def test_every_backend_enters_its_loop_through_one_unroll(folder: Path) -> None:
    signature = unroll_signature((folder / "model.py").read_text())
    assert signature is not None, f"{folder.name}/model.py defines no unroll"
    positional, keyword_only = signature
    assert positional == UNROLL[0]
    assert keyword_only[:2] == UNROLL[1]


@pytest.mark.parametrize("folder", BACKEND_FOLDERS, ids=lambda p: p.name)
def test_a_backend_uses_frae_and_nothing_else_of_the_project(folder: Path) -> None:
    others = tuple(f"impls.{p.name}" for p in BACKEND_FOLDERS if p != folder)
    for path, source in _sources(folder).items():
        reached = reaches_into(source, ("apps", "bench", "parity_tests", "examples", *others))
        assert reached == [], path


OUTSIDE_THE_CORE = ("apps", "bench", "impls", "parity_tests", "examples", "tests")
COMPOSERS = {"frae/cli.py": ("apps", "bench")}
"""The core's one module that composes it with the rest, its command line, and what it may
reach: the benchmark and the applications, never an implementation (the registry names
those as strings)."""


def test_the_core_imports_the_rest_only_in_its_command_line_and_no_implementation() -> None:
    """By ``import``, ``importlib.import_module`` or ``__import__`` alike."""
    for path, source in _sources(ROOT / "frae").items():
        reached = reaches_into(source, OUTSIDE_THE_CORE)
        reached += [name for name in imported_by_name(source) if within(name, OUTSIDE_THE_CORE)]
        assert [name for name in reached if not within(name, COMPOSERS.get(path, ()))] == [], path


def test_the_applications_use_frae_and_impls_alone() -> None:
    for path, source in _sources(ROOT / "apps").items():
        reached = reaches_into(source, ("bench", "parity_tests", "examples", "tests"))
        assert reached == [], path


def test_bench_reads_no_private_attribute_of_another_object() -> None:
    for path, source in _sources(ROOT / "bench").items():
        assert private_attributes(source) == [], path


def test_the_checks_reject_planted_violations() -> None:
    assert reaches_into("from bench.runner import run\nimport os", ("bench",)) == ["bench.runner"]
    assert reaches_into("import impls.tf_while.model as m", ("impls.tf_while",)) != []
    assert reaches_into("import benchmarks", ("bench",)) == []
    by_name = 'importlib.import_module("impls.reference.model")\n__import__("impls.jax_scan")'
    assert imported_by_name(by_name) == ["impls.jax_scan", "impls.reference.model"]
    assert imported_by_name("from importlib import import_module\nimport_module('bench')") == [
        "bench"
    ]
    assert imported_by_name("importlib.import_module(name)") == []  # a registry's target
    assert within("impls.reference", ("impls",)) and not within("implsx", ("impls",))
    assert private_attributes("backend._adam_slots\nself._ok\nsuper()._ok\nx.__dict__") == [
        "line 1: ._adam_slots"
    ]
    assert unroll_signature("def unroll(config, params, x, *, codes_given=False): ...") == (
        ["config", "params", "x"],
        ["codes_given"],
    )


ADAM_LITERALS = re.compile(r"\b0\.999\b|\b1e-7\b|\b0\.9\b")


def test_adam_constants_and_the_activation_rule_are_written_only_in_frae() -> None:
    """Outside ``frae/`` no code defines β₁, β₂ or ε, nor decides which layer gets which
    activation (``output_activation`` is read only by the core's layer table)."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    # the kit, the config's test and this one hold the contract's constants up to frae's
    checks = ("frae/", "parity_tests/", "tests/test_config.py", "tests/test_layout.py")
    code = [p for p in tracked if not p.startswith(checks)]
    for path in code:
        source = (ROOT / path).read_text()
        assert not ADAM_LITERALS.search(source), path
        assert ".output_activation" not in source, path
    assert ADAM_LITERALS.search("beta_2 = 0.999")
