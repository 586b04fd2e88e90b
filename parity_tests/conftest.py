"""Backend selection for the parity suite.

``pytest parity_tests --backend NAME_OR_PATH`` (repeatable) runs the suite against registered
backends or any ``package.module:attribute`` that follows the contract. Without it, every
registered backend whose framework is installed runs; the header names the others and why.
Modules are found in the directory pytest was started from too, so a port outside the
repository needs no ``PYTHONPATH``; a backend that cannot be imported stops the run at
start-up with the import error, instead of failing every test.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import pytest

import frae
from frae.quiet import load_triton_before_tensorflow

# tests import TensorFlow themselves; torch.compile's Triton must be loaded before it
load_triton_before_tensorflow()

MakeBackend = Callable[..., frae.Backend]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        action="append",
        default=None,
        metavar="NAME_OR_PATH",
        help="backend to test: a registered name or 'package.module:attribute' (repeatable)",
    )
    parser.addoption(
        "--other-backend",
        action="append",
        default=None,
        metavar="NAME_OR_PATH",
        help="backend to transfer weights to and from (repeatable; default: every installed "
        "backend other than those under test, or the reference)",
    )


def selected_backends(config: pytest.Config) -> list[str]:
    return config.getoption("backend") or frae.installed_backends()


def pytest_configure(config: pytest.Config) -> None:
    # as `python -m pytest` does, and as the `pythonpath` ini option does for the project root
    started_in = str(config.invocation_params.dir)
    if started_in not in sys.path:
        sys.path.insert(0, started_in)
    for option in ("backend", "other_backend"):
        for spec in config.getoption(option) or ():
            _check_importable(f"--{option.replace('_', '-')}", spec)


def _check_importable(option: str, spec: str) -> None:
    """A ``pytest.UsageError`` (exit status 4, one message) if ``spec`` cannot be imported:
    a registered name whose framework is missing, or an import path that does not resolve."""
    try:
        if ":" in spec:
            frae.registry._load(spec)  # what frae.create(spec) imports
            return
        reason = frae.unavailable_reason(spec)
    except Exception as error:  # a port's import can fail in any way its code can
        reason = f"{type(error).__name__}: {error}"
    if reason is not None:
        raise pytest.UsageError(f"{option} {spec!r} cannot be imported: {reason}")


HAND_WRITTEN_TWINS = {"tf_while_bptt", "jax_scan_bptt", "torch_scan_bptt"}
"""Registered backends that differ from their twin (``tf_while`` …) only in a backward pass
written by hand for output feedback: with state feedback they run their twin's functions,
inference included, so only the state-feedback tests of what they train are theirs to run."""
TRAINING_PROPERTIES = ("gradients", "sgd", "adam", "data_parallel")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--backend``, run the contract's tests for those backends and nothing else;
    leave out the state-feedback inference tests of ``HAND_WRITTEN_TWINS`` unless they are
    named; under ``pytest -n`` (``make test``), keep each backend's tests on one worker, where
    its compiled functions are cached (a torch_scan config compiles for some 17 s)."""
    from parity_tests.properties import PROPERTIES

    chosen = config.getoption("backend")
    training = [PROPERTIES[key] for key in TRAINING_PROPERTIES]

    def twin_runs_it(item: pytest.Item) -> bool:
        test_id = item.name
        return (
            not chosen
            and "state" in test_id
            and backend_of(item) in HAND_WRITTEN_TWINS
            and not any(prop.selects(test_id) for prop in training)
        )

    deselected = [item for item in items if twin_runs_it(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not twin_runs_it(item)]
    for item in items:
        if item.get_closest_marker("nested") is None and (backend := backend_of(item)):
            item.add_marker(pytest.mark.xdist_group(backend))


def backend_of(item: pytest.Item) -> str | None:
    """The backend a test checks: its ``backend_spec``."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "backend_spec" in callspec.params:
        return callspec.params["backend_spec"]
    return None


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"backends under test: {', '.join(selected_backends(config))}"]
    if not config.getoption("backend"):
        lines += [
            f"backend not tested: {name}: {frae.unavailable_reason(name)}"
            for name in frae.available_backends()
            if frae.unavailable_reason(name)
        ]
    return lines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    selected = selected_backends(metafunc.config)
    if "backend_spec" in metafunc.fixturenames:
        metafunc.parametrize("backend_spec", selected)
    if "other_spec" in metafunc.fixturenames:
        others = [
            name for name in ["reference", *frae.installed_backends()] if name not in selected
        ]
        others = list(dict.fromkeys(others)) or ["reference"]
        metafunc.parametrize("other_spec", others)


@pytest.fixture
def make_backend(backend_spec: str) -> MakeBackend:
    """``make_backend(config=None, *, seed=0, weights=None)`` builds the backend under test."""
    return functools.partial(frae.create, backend_spec)


@pytest.fixture
def other_backend(other_spec: str) -> MakeBackend:
    """Another backend than the one under test, for transfers between the two."""
    return functools.partial(frae.create, other_spec)


@pytest.fixture
def reference() -> MakeBackend:
    """The float64 oracle, built like the backend under test."""
    return functools.partial(frae.create, "reference")
