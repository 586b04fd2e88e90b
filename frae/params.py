"""Canonical weights: the contract's initial values and validated, atomic ``.npz`` files."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt

from frae import validation
from frae.config import FRAEConfig

Weights = dict[str, npt.NDArray[np.float32]]

INIT_STDDEV = 0.05


def initial_weights(config: FRAEConfig, seed: int = 0) -> Weights:
    """Draw every weight from ``numpy.random.default_rng(seed)``, N(0, 0.05), table order.

    Each layer's kernel then bias, encoder then decoder, as ``FRAEConfig.parameter_shapes``
    lists them; so every backend starts from the same float32 values.
    """
    rng = np.random.default_rng(validation.check_seed(seed))
    return {
        name: rng.normal(0.0, INIT_STDDEV, size=shape).astype(np.float32)
        for name, shape in config.parameter_shapes().items()
    }


def infer_config(weights: Mapping[str, object]) -> FRAEConfig:
    """The sizes that a set of canonical weights describes (activations left at defaults).

    Raises ``ValueError`` if the names or shapes are not those of any config.
    """
    if not isinstance(weights, Mapping):
        raise TypeError(f"weights must be a dict of numpy arrays, got {type(weights).__name__}")

    def width(name: str) -> int:
        bias = weights.get(f"{name}/bias")
        shape = getattr(bias, "shape", None)
        if shape is None or len(shape) != 1:
            raise ValueError(f"weights must hold a 1-D array {name}/bias, got {shape}")
        return int(shape[0])

    def hidden(side: str) -> tuple[int, ...]:
        count = 0
        while f"{side}/dense_{count}/bias" in weights:
            count += 1
        return tuple(width(f"{side}/dense_{i}") for i in range(count))

    config = FRAEConfig(
        input_dim=width("decoder/output"),
        encoder_units=hidden("encoder"),
        latent_dim=width("encoder/latent"),
        decoder_units=hidden("decoder"),
    )
    validation.check_weights(weights, config.parameter_shapes())
    return config


def save_weights(path: str | os.PathLike[str], weights: Mapping[str, object]) -> None:
    """Write canonical float32 weights to ``path`` (``.npz``), atomically.

    The file is written beside its destination and renamed over it, so a reader sees the old
    file or the new one, never half of one.
    """
    checked = validation.check_weights(weights, infer_config(weights).parameter_shapes())
    target = Path(path)
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".npz"
    )
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, **checked)  # type: ignore[arg-type]  # names, not options
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_weights(path: str | os.PathLike[str], config: FRAEConfig | None = None) -> Weights:
    """Read canonical weights; names, shapes (against ``config`` when given) and dtypes checked.

    Every array in the file must already be float32: a file is the exchange format, and a
    different dtype means it was not written by ``save_weights``.
    """
    with np.load(Path(path), allow_pickle=False) as archive:
        weights = {name: archive[name] for name in archive.files}
    for name, array in weights.items():
        if array.dtype != np.float32:
            raise TypeError(f"weights file {path}: {name} must be float32, got {array.dtype}")
    shapes = (config or infer_config(weights)).parameter_shapes()
    return validation.check_weights(weights, shapes)
