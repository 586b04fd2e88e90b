"""The backend registry and factory: names to lazily imported ``"module:Class"`` targets."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from frae import validation
from frae.backend import Array
from frae.config import FRAEConfig
from frae.protocol import Backend


@dataclass(frozen=True)
class BackendEntry:
    """Where a backend lives, the frameworks it imports and the pip extra that brings them."""

    target: str
    frameworks: tuple[str, ...] = ()
    extra: str | None = None


REGISTRY: dict[str, BackendEntry] = {
    "reference": BackendEntry("impls.reference:ReferenceBackend"),
    "tf_while": BackendEntry("impls.tf_while:TFWhileBackend", ("tensorflow",), "tf"),
    "jax_scan": BackendEntry("impls.jax_scan:JaxScanBackend", ("jax", "flax", "optax"), "jax"),
    "keras_rnn": BackendEntry("impls.keras_rnn:KerasRNNBackend", ("keras",), "keras"),
    "torch_scan": BackendEntry("impls.torch_scan:TorchScanBackend", ("torch",), "torch"),
}


BACKEND_METHODS = (
    "get_weights",
    "set_weights",
    "initial_state",
    "predict",
    "encode",
    "decode",
    "loss_and_grads",
    "fit",
)
BACKEND_ATTRIBUTES = ("name", "config")
"""The members of ``Backend``: its methods, and the attributes it reads as values."""


def available_backends() -> list[str]:
    """Every registered backend name, whether or not its framework is installed."""
    return list(REGISTRY)


def module_of(backend: str) -> str:
    """The module ``create(backend)`` imports: a registered name's, or an import path's."""
    return _target(backend).partition(":")[0]


def frameworks_of(backend: str) -> tuple[str, ...]:
    """The frameworks a registered backend imports (none known for an import path)."""
    entry = REGISTRY.get(backend)
    return entry.frameworks if entry else ()


def unavailable_reason(backend: str, *, needs: Iterable[str] = ()) -> str | None:
    """Why ``create(backend)`` would fail to import, or ``None`` if it can. Imports nothing.

    ``backend`` is a registered name or a ``"package.module:attribute"`` path; ``needs``
    adds modules that must be importable too (the frameworks of a backend given by path).
    """
    entry = REGISTRY.get(backend)
    required = [*(entry.frameworks if entry else ()), *needs]
    missing = [module for module in dict.fromkeys(required) if not _findable(module)]
    if missing:
        extra = f"pip install 'frae[{entry.extra}]'" if entry and entry.extra else "not installed"
        return f"needs {', '.join(missing)}: {extra}"
    module = module_of(backend)
    if not _findable(module):
        what = "not implemented in this version" if entry else "not importable"
        return f"{what} ({module} is absent)"
    return None


def installed_backends() -> list[str]:
    """The registered backends whose implementation and frameworks are importable."""
    return [name for name in REGISTRY if unavailable_reason(name) is None]


def create(
    backend: str,
    config: FRAEConfig | None = None,
    *,
    seed: int = 0,
    weights: Mapping[str, Array] | None = None,
    devices: int | None = None,
) -> Backend:
    """Build a backend by registered name or by ``"package.module:attribute"`` import path.

    The attribute is a class or factory taking ``(config, *, seed, weights)``, and
    ``devices`` too when it is given: ``devices=N`` trains data-parallel on N of the
    process's devices (the contract's "Public interface"). Only the chosen backend's framework is
    imported.
    """
    devices = validation.check_devices(devices)
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a str, got {validation.describe(backend)}")
    if ":" in backend:
        factory = _load(backend)
    else:
        try:
            factory = _load(_target(backend))
        except ModuleNotFoundError as error:
            reason = unavailable_reason(backend) or str(error)
            raise ImportError(f"backend {backend!r} cannot be imported: {reason}") from error
    _check_factory(backend, factory, devices is not None)
    placement = {} if devices is None else {"devices": devices}
    model = factory(config, seed=seed, weights=weights, **placement)
    missing = missing_members(model)
    if missing:
        raise TypeError(
            f"{backend!r} built a {type(model).__name__}, which lacks the Backend API: "
            f"it has no {', '.join(missing)}"
        )
    return cast(Backend, model)


def factory_of(backend: str) -> Any:
    """The class or factory ``create(backend)`` calls, imported (a registered name or an
    import path)."""
    return _load(_target(backend))


def missing_members(model: object) -> list[str]:
    """The ``Backend`` members ``model`` lacks, looked up as its callers look them up, by
    ``getattr``: each of ``BACKEND_ATTRIBUTES`` present, each of ``BACKEND_METHODS``
    callable. An object that delegates through ``__getattr__`` (a logging or caching proxy)
    has what it delegates, where ``isinstance(model, Backend)`` would refuse it: since
    Python 3.12 a runtime-checkable protocol looks members up statically."""
    absent = [name for name in BACKEND_ATTRIBUTES if not hasattr(model, name)]
    return absent + [name for name in BACKEND_METHODS if not callable(getattr(model, name, None))]


def _check_factory(backend: str, factory: object, placed: bool = False) -> None:
    """A ``Backend`` class, or a function taking ``(config, *, seed, weights)`` (and
    ``devices`` if ``placed``); anything else is a ``TypeError`` saying what ``backend``
    names, before it is called (``"os:getcwd"``)."""
    what = f"backend import path {backend!r} names {validation.describe(factory)}"
    if isinstance(factory, type):
        missing = [name for name in BACKEND_METHODS if not callable(getattr(factory, name, None))]
        if missing:
            raise TypeError(f"{what}, a class without the Backend methods {missing}")
    elif not callable(factory):
        raise TypeError(f"{what}, not a backend class or factory")
    elif not {"seed", "weights"} <= set(_parameters(factory)):
        raise TypeError(
            f"{what}, which is not a backend class or factory: a factory takes "
            "(config, *, seed, weights)"
        )
    if placed and not takes_devices(factory):
        raise ValueError(
            f"backend {backend!r} takes no devices argument: it has no data-parallel engine, "
            "so devices must be None"
        )


def takes_devices(factory: object) -> bool:
    """Whether a backend class or factory takes ``devices`` (by name, or through ``**kwargs``)."""
    return any(
        parameter.name == "devices" or parameter.kind is inspect.Parameter.VAR_KEYWORD
        for parameter in _parameters(factory).values()
    )


def _parameters(factory: Any) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a callable without a signature: not a factory of ours
        return {}


def _target(backend: str) -> str:
    """``"module:attribute"`` of a registered name, or the import path itself."""
    if ":" in backend:
        return backend
    if backend not in REGISTRY:
        raise ValueError(
            f"backend must be one of {available_backends()} or 'package.module:attribute', "
            f"got {validation.describe(backend)}"
        )
    return REGISTRY[backend].target


def _findable(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (its parents may be)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # a parent package is missing, or "" given
        return False


def _load(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(
            "backend import path must look like 'package.module:attribute', "
            f"got {validation.describe(target)}"
        )
    module = importlib.import_module(module_name)
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ImportError(f"backend import path {target!r}: {module_name} has no {attribute!r}")
        found = getattr(found, part)
    return found
