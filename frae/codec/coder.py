"""Symbols to words and back with constriction's range coder (the ``codec`` extra), each code
dimension's model exactly its prior's integer table.

A sequence's symbols (T, L) are coded dimension by dimension: the T table columns of
dimension l (``Prior.indices``), then the values of those that were escaped, each
``symbol + Q`` in 16 bits. constriction's categorical model at 24 bits, built without its
optimisation (``perfect=False``), takes the symbol i to the slot ⌊C_i·s⌋ + i, C_i the sum of
the weights before i and s = (2^24 − n) / Σ weights; given the weights f_i − 1 of a table
summing to 2^24 (P = 24), s is 1 and every slot is exactly f_i wide: the table itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from frae.codec.prior import Prior
from frae.codec.quantization import SYMBOL_LIMIT

CODER_PRECISION = 24
"""The fixed-point precision of constriction's categorical models."""
ESCAPE_BITS = 16
"""The bits of an escaped symbol's value."""


def _constriction() -> Any:
    try:
        import constriction
    except ImportError as error:
        raise ImportError(
            "frae.codec codes with constriction: pip install 'frae[codec]'"
        ) from error
    return constriction


def _models(prior: Prior) -> tuple[list[Any], Any]:
    """Each dimension's categorical model, and the escaped values' uniform one."""
    model = _constriction().stream.model
    assert prior.precision == CODER_PRECISION
    weights = prior.frequencies.astype(np.float64) - 1.0
    tables = [model.Categorical(row, perfect=False) for row in weights]
    return tables, model.Uniform(2**ESCAPE_BITS)


def _sequence(prior: Prior, values: npt.ArrayLike) -> npt.NDArray[np.int64]:
    array = np.asarray(values)
    if array.ndim != 2 or array.shape[1] != prior.latent_dim:
        raise ValueError(f"symbols must be (T, {prior.latent_dim}), got {array.shape}")
    if not np.issubdtype(array.dtype, np.integer) or np.abs(array).max(initial=0) > SYMBOL_LIMIT:
        raise ValueError(f"symbols must be integers within ±{SYMBOL_LIMIT}")
    return array.astype(np.int64)


def encode_symbols(prior: Prior, values: npt.NDArray[np.integer[Any]]) -> bytes:
    """One sequence's symbols (T, L) as little-endian 32-bit words."""
    values = _sequence(prior, values)
    tables, uniform = _models(prior)
    columns = prior.indices(values)
    encoder = _constriction().stream.queue.RangeEncoder()
    for dimension, table in enumerate(tables):
        encoder.encode(columns[:, dimension], table)
        escaped = values[columns[:, dimension] == prior.escape, dimension]
        if len(escaped):
            encoder.encode((escaped + SYMBOL_LIMIT).astype(np.int32), uniform)
    return bytes(encoder.get_compressed().astype("<u4").tobytes())


def decode_symbols(prior: Prior, data: bytes, frames: int) -> npt.NDArray[np.int32]:
    """The ``frames`` × L symbols ``encode_symbols`` made into ``data``."""
    if len(data) % 4:
        raise ValueError(f"coded symbols are 32-bit words, got {len(data)} bytes")
    tables, uniform = _models(prior)
    words = np.frombuffer(data, "<u4").astype(np.uint32)
    decoder = _constriction().stream.queue.RangeDecoder(words)
    decoded = np.empty((frames, prior.latent_dim), np.int32)
    for dimension, table in enumerate(tables):
        columns = np.asarray(decoder.decode(table, frames), np.int64)
        escaped = columns == prior.escape
        decoded[:, dimension] = columns + prior.lo[dimension]
        if escaped.any():
            values = np.asarray(decoder.decode(uniform, int(escaped.sum())), np.int64)
            if values.max() > 2 * SYMBOL_LIMIT:
                raise ValueError(f"an escaped symbol decodes beyond ±{SYMBOL_LIMIT}")
            decoded[escaped, dimension] = values - SYMBOL_LIMIT
    if not decoder.maybe_exhausted():
        raise ValueError(f"the coded words do not end with the {frames} frames declared")
    return decoded


def information_bits(prior: Prior, values: npt.NDArray[np.integer[Any]]) -> float:
    """The symbols' information under the prior, Σ −log2(f / 2^P), an escape's 16 bits too:
    the least any coder of this prior can spend on them."""
    columns = prior.indices(_sequence(prior, values))
    chosen = np.take_along_axis(prior.frequencies.T, columns, axis=0)
    escapes = int((columns == prior.escape).sum())
    bits = prior.precision * chosen.size - float(np.log2(chosen.astype(np.float64)).sum())
    return bits + ESCAPE_BITS * escapes
