"""A signal to bytes and back (the contract's "Coding: the model as a codec"): the model's
symbols, coded under the prior, in the whole-signal format of ``byte_format``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from frae.codec import byte_format
from frae.codec.checks import (
    check_codes,
    check_model_digest,
    check_pair,
    check_prior_digest,
    checked_signal,
    header_of,
)
from frae.codec.coder import SymbolCoder
from frae.codec.prior import Prior
from frae.quantization import symbols

Progress = Callable[[int], object]
"""Called with the number of sequences each step of a long input finished."""
GROUP = 64
"""The sequences encoded or decoded at a time, between two reports of progress."""


def compress(
    model: Any, prior: Prior, x: npt.ArrayLike, *, progress: Progress | None = None
) -> bytes:
    """``x`` (B, T, F) or one sequence (T, F) as bytes: ``model.encode``'s symbols under
    ``prior``, each sequence's coding apart; ``GROUP`` sequences encoded at a time. Codes
    that are not finite are a ``ValueError`` naming the first such frame."""
    check_pair(model, prior)
    sequences, one = checked_signal(model, x)
    coder, coded = SymbolCoder(prior), []
    for start in range(0, len(sequences), GROUP):
        codes = np.asarray(model.encode(sequences[start : start + GROUP]))
        check_codes(codes)
        coded += [coder.encode(sequence) for sequence in symbols(codes, prior.step)]
        if progress is not None:
            progress(len(codes))
    header = header_of(model, prior, *sequences.shape[:2], one=one)
    return byte_format.pack(header, coded)


def _read(prior: Prior, data: bytes) -> tuple[byte_format.Header, npt.NDArray[np.int32]]:
    stream = byte_format.unpack(bytes(data))
    check_prior_digest(stream.header, prior)
    coder, frames = SymbolCoder(prior), stream.header.frames
    return stream.header, np.stack([stream.decode(coder, one, frames) for one in stream.sequences])


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
