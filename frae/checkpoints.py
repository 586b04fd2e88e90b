"""Checkpoints (the contract's "Training state"): the weights and the training state in one
safetensors file, written whole or not at all, read through its header before any data.

The file holds the weights under their canonical names, Adam's moments as ``adam/m/<name>``
and ``adam/v/<name>``, and string metadata: the format and its version, the optimizer, its
step and epoch, Adam's constants and the config's fields. A file without a training state
holds ``"optimizer": ""``. A prior over the model's symbols (``frae.codec.Prior``) rides
beside the weights as ``codec/prior/lo`` (int32) and ``codec/prior/frequencies`` (uint32),
its step and precision in the metadata. ``load_checkpoint`` also reads today's ``.npz``
weights files (``frae.save_weights``), which hold no training state.
"""

from __future__ import annotations

import json
import os
import reprlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from frae import validation
from frae.codec.prior import Prior
from frae.config import FRAEConfig
from frae.files import write_atomically
from frae.optimizers import ADAM
from frae.params import Weights, infer_config, load_weights
from frae.training_state import MOMENTS, TrainingState, check_training_state

FORMAT = "frae-checkpoint"
VERSION = 1
"""The version ``save_checkpoint`` writes and the one ``load_checkpoint`` reads."""
ADAM_CONSTANTS = {"beta_1": ADAM.beta_1, "beta_2": ADAM.beta_2, "epsilon": ADAM.epsilon}
_ZIP_MAGIC = b"PK\x03\x04"
_SHORT = reprlib.Repr(maxlist=6, maxstring=60)
PRIOR_TENSORS = {"codec/prior/lo": "I32", "codec/prior/frequencies": "U32"}
"""The prior's tables in a checkpoint, by name, and their dtypes."""


def moment_key(moment: str, name: str) -> str:
    """The tensor name of Adam's ``moment`` (``"m"`` or ``"v"``) of the weight ``name``."""
    return f"adam/{moment}/{name}"


def save_checkpoint(
    path: str | os.PathLike[str],
    weights: Mapping[str, object],
    training_state: TrainingState | None = None,
    *,
    config: FRAEConfig | None = None,
    prior: Prior | None = None,
) -> Path:
    """Write ``weights``, ``training_state`` and ``prior`` to ``path``, one safetensors file,
    atomically (``frae.files.write_atomically``); returns the path.

    ``config`` (default: the one the weights' shapes imply, its ``code_step`` the prior's
    step where a prior is given) is checked against the weights and recorded in the metadata;
    ``prior`` must code its symbols. Every argument is checked before anything is written.
    """
    from safetensors.numpy import save

    if config is None:
        inferred = infer_config(weights)
        layout = inferred if prior is None else replace(inferred, code_step=prior.step)
    else:
        layout = validation.check_config(config)
    checked = validation.check_weights(weights, layout.parameter_shapes())
    tensors: dict[str, np.ndarray] = dict(checked)
    metadata = {
        "format": FORMAT,
        "format_version": str(VERSION),
        "config": json.dumps(layout.to_dict()),
        "optimizer": "",
    }
    if training_state is not None:
        optimizer = str(getattr(training_state, "optimizer", ""))
        state = check_training_state(training_state, optimizer, layout)
        for moment in MOMENTS:
            for name, value in getattr(state, moment).items():
                tensors[moment_key(moment, name)] = value
        metadata |= {"optimizer": state.optimizer, "step": str(state.step)}
        metadata |= {"epoch": str(state.epoch)}
        metadata |= {key: repr(value) for key, value in ADAM_CONSTANTS.items()}
    if prior is not None:
        if (prior.step, prior.latent_dim) != (layout.code_step, layout.latent_dim):
            raise ValueError(
                f"the prior codes {prior.latent_dim} symbols a step of {prior.step}, the "
                f"config {layout.latent_dim} a step of {layout.code_step}"
            )
        tensors |= dict(zip(PRIOR_TENSORS, (prior.lo, prior.frequencies), strict=True))
        metadata |= {"prior_step": repr(prior.step), "prior_precision": str(prior.precision)}
    data = save(tensors, metadata=metadata)
    return write_atomically(path, lambda stream: stream.write(data))


def load_checkpoint(
    path: str | os.PathLike[str], config: FRAEConfig | None = None
) -> tuple[Weights, TrainingState | None]:
    """The weights and training state (``None`` if the file holds none) at ``path``.

    The header (names, float32, shapes against ``config`` or the file's own, offsets) is
    checked before any tensor is read. A ``.npz`` weights file reads with no training state.

    Raises:
        ValueError: naming the path, for a file that is not a readable checkpoint, or that
            holds other names or shapes than the config's, or a training state it refuses.
        TypeError: naming the path, for a tensor that is not float32.
    """
    source = Path(path)
    if config is not None:
        validation.check_config(config)
    try:
        with open(source, "rb") as stream:
            magic = stream.read(len(_ZIP_MAGIC))
    except OSError as error:
        raise ValueError(f"checkpoint {source} cannot be read: {error.strerror}") from error
    if magic == _ZIP_MAGIC:
        return load_weights(source, config), None
    try:
        return _read(source, config)
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(f"checkpoint {source}: {error}") from error


def _read(path: Path, config: FRAEConfig | None) -> tuple[Weights, TrainingState | None]:
    from safetensors import SafetensorError, safe_open

    try:
        opened = safe_open(str(path), framework="numpy")
    except (SafetensorError, OSError) as error:
        raise ValueError(f"not a readable safetensors file: {error}") from error
    with opened as file:
        metadata = file.metadata() or {}
        layout = _layout(metadata, config)
        optimizer = metadata.get("optimizer", "")
        expected = _expected_shapes(layout, optimizer)
        _check_header(file, expected, PRIOR_TENSORS if "prior_step" in metadata else {})
        counts = (_whole(metadata, "step"), _whole(metadata, "epoch")) if optimizer else None
        if optimizer:
            _check_constants(metadata)
        tensors = {name: file.get_tensor(name) for name in expected}
    names = layout.parameter_shapes()
    weights = validation.check_weights({name: tensors[name] for name in names}, names)
    if counts is None:
        return weights, None
    m, v = (
        {name: tensors[moment_key(moment, name)] for name in names} if optimizer == "adam" else {}
        for moment in MOMENTS
    )
    return weights, check_training_state(TrainingState(optimizer, *counts, m, v), optimizer, layout)


def _layout(metadata: Mapping[str, str], config: FRAEConfig | None) -> FRAEConfig:
    """The config the file must match: ``config``, else the one its metadata records."""
    if metadata.get("format") != FORMAT:
        raise ValueError(
            f"metadata must name the format {FORMAT!r}, got {_SHORT.repr(dict(metadata))}"
        )
    if metadata.get("format_version") != str(VERSION):
        raise ValueError(
            f"format version {_SHORT.repr(metadata.get('format_version'))} is not one this "
            f"version reads ({VERSION})"
        )
    if config is not None:
        return config
    try:
        return FRAEConfig.from_dict(json.loads(metadata["config"]))
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"metadata's config is unreadable: {error}") from error


def _expected_shapes(layout: FRAEConfig, optimizer: str) -> dict[str, tuple[int, ...]]:
    shapes = dict(layout.parameter_shapes())
    if optimizer not in ("", "sgd", "adam"):
        raise ValueError(f"metadata's optimizer must be '', 'sgd' or 'adam', got {optimizer!r}")
    if optimizer == "adam":
        for moment in MOMENTS:
            shapes |= {moment_key(moment, name): s for name, s in layout.parameter_shapes().items()}
    return shapes


def _check_header(
    file: Any, expected: Mapping[str, tuple[int, ...]], prior: Mapping[str, str]
) -> None:
    """Names, dtypes and shapes from the header alone (no tensor is read)."""
    what = "tensors must be exactly the weights' canonical names (and Adam's moments, a prior)"
    validation.check_names(file.keys(), {**expected, **prior}, what)
    for name, dtype in prior.items():
        if file.get_slice(name).get_dtype() != dtype:
            raise TypeError(f"{name!r} must be {dtype}, got {file.get_slice(name).get_dtype()}")
    for name, shape in expected.items():
        piece = file.get_slice(name)
        if piece.get_dtype() != "F32":
            raise TypeError(f"{name!r} must be float32 (F32), got {piece.get_dtype()}")
        if tuple(piece.get_shape()) != shape:
            raise ValueError(f"{name!r} must have shape {shape}, got {tuple(piece.get_shape())}")


def _check_constants(metadata: Mapping[str, str]) -> None:
    """Adam's constants in the file must be the contract's (another Adam is not this one)."""
    for key, value in ADAM_CONSTANTS.items():
        if metadata.get(key) != repr(value):
            raise ValueError(
                f"metadata's {key} must be the contract's {value!r}, "
                f"got {_SHORT.repr(metadata.get(key))}"
            )


def _whole(metadata: Mapping[str, str], key: str) -> int:
    text = metadata.get(key, "")
    if not text.isdigit():
        raise ValueError(f"metadata's {key} must be a whole number, got {_SHORT.repr(text)}")
    return int(text)


def load_config(path: str | os.PathLike[str]) -> FRAEConfig:
    """The config a checkpoint records (``code_step`` included, which shapes cannot tell)."""
    from safetensors import safe_open

    load_checkpoint(path)
    with safe_open(str(path), framework="numpy") as file:
        return _layout(file.metadata() or {}, None)


def load_prior(path: str | os.PathLike[str]) -> Prior | None:
    """The prior a checkpoint holds beside its weights, ``None`` if it holds none; checked as
    ``load_checkpoint`` checks the file, then as ``Prior`` checks its tables."""
    from safetensors import safe_open

    load_checkpoint(path)
    with safe_open(str(path), framework="numpy") as file:
        metadata = file.metadata() or {}
        if "prior_step" not in metadata:
            return None
        lo, frequencies = (file.get_tensor(name) for name in PRIOR_TENSORS)
    try:
        step, precision = float(metadata["prior_step"]), int(metadata["prior_precision"])
        return Prior(step, lo, frequencies, precision)
    except (KeyError, ValueError) as error:
        raise ValueError(f"checkpoint {path}: its prior is malformed: {error}") from error
