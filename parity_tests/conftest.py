"""Backend selection for the parity suite: ``--backend``, ``--other-backend``, ``--case`` and
the ini option ``training_only_backends`` (``parity_tests/README.md``)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import pytest

import frae
from frae.quiet import load_triton_before_tensorflow
from parity_tests.cases import CASES, Case

# tests import TensorFlow themselves; torch.compile's Triton must be loaded before it
load_triton_before_tensorflow()

MakeBackend = Callable[..., frae.Backend]
CASE_NAMES = {case.config: name for name, case in CASES.items()}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        action="append",
        metavar="NAME_OR_PATH",
        help="backend to test: a registered name or 'package.module:attribute' (repeatable)",
    )
    parser.addoption(
        "--other-backend",
        action="append",
        metavar="NAME_OR_PATH",
        help="backend to transfer weights to and from (repeatable; default: every installed "
        "backend other than those under test, or the reference)",
    )
    parser.addoption(
        "--case",
        action="append",
        choices=list(CASES),
        metavar="NAME",
        help="run the tests that take a case of cases.py on the cases named alone "
        "(repeatable; default: every case); the others run as they are",
    )
    parser.addini(
        TRAINING_ONLY,
        "import paths of backends checked for the training properties alone (gradients, SGD, "
        "Adam, data-parallel training) in a run without --backend; one that cannot be imported "
        "is skipped, saying why",
        type="linelist",
        default=[],
    )


def selected_backends(config: pytest.Config) -> list[str]:
    return config.getoption("backend") or frae.installed_backends()


def training_only_backends(config: pytest.Config) -> list[str]:
    """The ``training_only_backends`` that run beside the selected ones: none with
    ``--backend``, which runs the backends named and nothing else."""
    if config.getoption("backend"):
        return []
    selected = set(selected_backends(config))
    return [spec for spec in config.getini(TRAINING_ONLY) if spec not in selected]


def pytest_configure(config: pytest.Config) -> None:
    # as `python -m pytest` does, and as the `pythonpath` ini option does for the project root
    started_in = str(config.invocation_params.dir)
    if started_in not in sys.path:
        sys.path.insert(0, started_in)
    for option in ("backend", "other_backend"):
        for spec in config.getoption(option) or ():
            if (reason := _import_failure(spec)) is not None:  # exit status 4, one message
                flag = option.replace("_", "-")
                raise pytest.UsageError(f"--{flag} {spec!r} cannot be imported: {reason}")


@functools.cache
def _import_failure(spec: str) -> str | None:
    """Why ``frae.create(spec)`` cannot import ``spec``, or ``None`` if it can."""
    try:
        if ":" in spec:
            frae.registry._load(spec)  # what frae.create(spec) imports
            return None
        return frae.unavailable_reason(spec)
    except Exception as error:  # a port's import can fail in any way its code can
        return f"{type(error).__name__}: {error}"


TRAINING_ONLY = "training_only_backends"
"""The ini option naming the backends whose own part is their output-feedback gradient and
the training it drives (the hand-written-backward twins)."""
TRAINING_PROPERTIES = ("gradients", "straight_through", "sgd", "adam")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the cases ``--case`` does not name, and for the ``training_only_backends``
    all but the tests of ``TRAINING_PROPERTIES`` on output-feedback cases (named by
    ``--backend``, they run every test but those of a rate case, which they refuse); under
    ``pytest -n``, keep each backend's tests of one config on one worker, where that config
    is compiled."""
    from parity_tests.properties import PROPERTIES

    training = [PROPERTIES[key] for key in TRAINING_PROPERTIES]
    training_only = set(training_only_backends(config))
    cases = set(config.getoption("case") or CASES)

    def not_theirs(item: pytest.Item) -> bool:
        case = getattr(item, "callspec", None) and item.callspec.params.get("case")
        if isinstance(case, Case) and CASE_NAMES.get(case.config, "") not in cases | {""}:
            return True
        if backend_of(item) not in training_only:
            return False
        state = case is not None and case.config.feedback == "state"
        return state or not any(prop.selects(item.name) for prop in training)

    deselected = [item for item in items if not_theirs(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not not_theirs(item)]
    refusing = set(config.getini(TRAINING_ONLY))
    for item in items:
        if backend_of(item) in refusing and rate_case(item):
            item.add_marker(pytest.mark.skip(reason=f"{backend_of(item)} refuses rate_weight"))
        if item.get_closest_marker("nested") is None and (group := compilation_group(item)):
            item.add_marker(pytest.mark.xdist_group(group))


def rate_case(item: pytest.Item) -> bool:
    """Whether the test takes a case whose config has a rate weight."""
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    return isinstance(case, Case) and case.config.rate_weight is not None


def compilation_group(item: pytest.Item) -> str | None:
    """The backend a test checks and the config it checks it on, for a test with a ``case``:
    the tests that share that backend's compiled functions of that config."""
    backend = backend_of(item)
    case = backend and item.callspec.params.get("case")
    if not isinstance(case, Case):
        return None
    return f"{backend} on {CASE_NAMES.get(case.config, repr(case.config))}"


def backend_of(item: pytest.Item) -> str | None:
    """The backend a test checks: its ``backend_spec``."""
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("backend_spec")


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"backends under test: {', '.join(selected_backends(config))}"]
    if training_only := training_only_backends(config):
        lines.append(f"for the training properties alone: {', '.join(training_only)}")
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
        training_only = [
            pytest.param(spec, marks=_skip_unless_importable(spec))
            for spec in training_only_backends(metafunc.config)
        ]
        metafunc.parametrize("backend_spec", [*selected, *training_only])
    if "partner_spec" in metafunc.fixturenames:
        partners = [*selected, "reference", *(metafunc.config.getoption("other_backend") or ())]
        metafunc.parametrize("partner_spec", list(dict.fromkeys(partners)))
    if "other_spec" in metafunc.fixturenames:
        others = metafunc.config.getoption("other_backend") or [
            name for name in ["reference", *frae.installed_backends()] if name not in selected
        ]
        others = list(dict.fromkeys(others)) or ["reference"]
        metafunc.parametrize("other_spec", others)


def _skip_unless_importable(spec: str) -> list[pytest.MarkDecorator]:
    """A skip saying why, for a ``training_only_backends`` entry that cannot be imported."""
    reason = _import_failure(spec)
    return [] if reason is None else [pytest.mark.skip(reason=f"{spec}: {reason}")]


@pytest.fixture
def training_only(backend_spec: str, pytestconfig: pytest.Config) -> bool:
    """Whether the backend under test is one of the ``training_only_backends``, whose
    inference and data-parallel engine are another backend's (its twin's)."""
    return backend_spec in pytestconfig.getini(TRAINING_ONLY)


@pytest.fixture
def make_backend(backend_spec: str) -> MakeBackend:
    """``make_backend(config=None, *, seed=0, weights=None)`` builds the backend under test."""
    return functools.partial(frae.create, backend_spec)


@pytest.fixture
def other_backend(other_spec: str) -> MakeBackend:
    """Another backend than the one under test, for transfers between the two."""
    return functools.partial(frae.create, other_spec)


@pytest.fixture
def partner(partner_spec: str) -> MakeBackend:
    """A backend a stream moves to and from: each backend under test (itself included: a
    second object), the reference, and each ``--other-backend``."""
    return functools.partial(frae.create, partner_spec)


@pytest.fixture
def reference() -> MakeBackend:
    """The float64 oracle, built like the backend under test."""
    return functools.partial(frae.create, "reference")
