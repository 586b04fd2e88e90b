"""The backend registry and factory: names to lazily imported ``"module:Class"`` targets."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from frae.backend import Array, Backend
from frae.config import FRAEConfig


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
}


def available_backends() -> list[str]:
    """Every registered backend name, whether or not its framework is installed."""
    return list(REGISTRY)


def unavailable_reason(name: str) -> str | None:
    """Why ``create(name)`` would fail to import, or ``None`` if it can. Imports nothing."""
    entry = _entry(name)
    missing = [module for module in entry.frameworks if importlib.util.find_spec(module) is None]
    if missing:
        return f"needs {', '.join(missing)}: pip install 'frae[{entry.extra}]'"
    module = entry.target.partition(":")[0]
    if importlib.util.find_spec(module) is None:
        return f"not implemented in this version ({module} is absent)"
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
) -> Backend:
    """Build a backend by registered name or by ``"package.module:attribute"`` import path.

    The attribute is a class or factory taking ``(config, *, seed, weights)``. Only the
    chosen backend's framework is imported.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a str, got {backend!r} ({type(backend).__name__})")
    if ":" in backend:
        factory = _load(backend)
    else:
        entry = _entry(backend)
        try:
            factory = _load(entry.target)
        except ModuleNotFoundError as error:
            reason = unavailable_reason(backend) or str(error)
            raise ImportError(f"backend {backend!r} cannot be imported: {reason}") from error
    model = factory(config, seed=seed, weights=weights)
    if not isinstance(model, Backend):
        raise TypeError(f"{backend!r} built a {type(model).__name__}, which lacks the Backend API")
    return model


def _entry(name: str) -> BackendEntry:
    if name not in REGISTRY:
        raise ValueError(
            f"backend must be one of {available_backends()} or 'package.module:attribute', "
            f"got {name!r}"
        )
    return REGISTRY[name]


def _load(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(
            f"backend import path must look like 'package.module:attribute', got {target!r}"
        )
    module = importlib.import_module(module_name)
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ImportError(f"backend import path {target!r}: {module_name} has no {attribute!r}")
        found = getattr(found, part)
    return found
