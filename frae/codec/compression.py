"""A signal to bytes and back (the contract's "Coding: the model as a codec"): the model's
symbols, coded under the prior, in format 1 (``byte_format``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from frae.codec import byte_format
from frae.codec.coder import decode_symbols, encode_symbols
from frae.codec.prior import Prior
from frae.quantization import symbols


def check_pair(model: Any, prior: Prior) -> None:
    """A ``ValueError`` unless ``prior`` codes the symbols of ``model``'s config."""
    config = model.config
    if config.code_step is None:
        raise ValueError("a codec needs a model with code_step set")
    if (config.code_step, config.latent_dim) != (prior.step, prior.latent_dim):
        raise ValueError(
            f"the prior codes {prior.latent_dim} symbols a step of {prior.step}, the model "
            f"{config.latent_dim} a step of {config.code_step}"
        )


def header_of(
    model: Any, prior: Prior, values: npt.NDArray[np.int32], *, one: bool
) -> byte_format.Header:
    """The header of symbols ``values`` (B, T, L) of ``model`` under ``prior``."""
    return byte_format.Header(
        code_exponent=-int(math.log2(prior.step)),
        flags=byte_format.ONE_SEQUENCE if one else 0,
        latent_dim=prior.latent_dim,
        sequences=values.shape[0],
        frames=values.shape[1],
        model_digest=byte_format.model_digest(model.config, model.get_weights()),
        prior_digest=byte_format.prior_digest(prior),
    )


def check_prior_digest(header: byte_format.Header, prior: Prior) -> None:
    expected = byte_format.prior_digest(prior)
    if header.prior_digest != expected:
        raise ValueError(
            f"the stream was coded under prior {header.prior_digest.hex()}, "
            f"this prior is {expected.hex()}"
        )
    if (2.0**-header.code_exponent, header.latent_dim) != (prior.step, prior.latent_dim):
        raise ValueError(f"the stream's header disagrees with its prior: {header}")


def check_model_digest(header: byte_format.Header, model: Any) -> None:
    expected = byte_format.model_digest(model.config, model.get_weights())
    if header.model_digest != expected:
        raise ValueError(
            f"the stream was made by model {header.model_digest.hex()}, "
            f"this model is {expected.hex()}"
        )


Progress = Callable[[int], object]
"""Called with the number of sequences each step of a long input finished."""
GROUP = 64
"""The sequences encoded or decoded at a time, between two reports of progress."""


def compress(
    model: Any, prior: Prior, x: npt.ArrayLike, *, progress: Progress | None = None
) -> bytes:
    """``x`` (B, T, F) or one sequence (T, F) as bytes: ``model.encode``'s symbols under
    ``prior``, each sequence's words apart; ``GROUP`` sequences encoded at a time."""
    check_pair(model, prior)
    one = np.ndim(x) == 2
    sequences = np.asarray(x)[None] if one else np.asarray(x)
    values, words = [], []
    for start in range(0, len(sequences), GROUP):
        group = symbols(model.encode(sequences[start : start + GROUP]), prior.step)
        values.append(group)
        words += [encode_symbols(prior, sequence) for sequence in group]
        if progress is not None:
            progress(len(group))
    header = header_of(model, prior, np.concatenate(values), one=one)
    return byte_format.pack(header, words)


def _read(prior: Prior, data: bytes) -> tuple[byte_format.Header, npt.NDArray[np.int32]]:
    header, sequences = byte_format.unpack(bytes(data))
    check_prior_digest(header, prior)
    decoded = [decode_symbols(prior, words, header.frames) for words in sequences]
    return header, np.stack(decoded)


def read(prior: Prior, data: bytes) -> npt.NDArray[np.int32]:
    """The symbols (B, T, L) of a stream, from the bytes and the prior alone: no model."""
    return _read(prior, data)[1]


def decompress(
    model: Any, prior: Prior, data: bytes, *, progress: Progress | None = None
) -> npt.NDArray[Any]:
    """The signal ``model.decode`` rebuilds from a stream's symbols, in the layout compressed,
    ``GROUP`` sequences at a time; ``model`` must hold the config and weights the stream was
    made with."""
    check_pair(model, prior)
    header, values = _read(prior, data)
    check_model_digest(header, model)
    codes = (values * prior.step).astype(np.float32)
    groups = []
    for start in range(0, len(codes), GROUP):
        groups.append(model.decode(codes[start : start + GROUP]))
        if progress is not None:
            progress(len(groups[-1]))
    outputs = np.concatenate(groups)
    return outputs[0] if header.flags & byte_format.ONE_SEQUENCE else outputs
