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
from frae.quantization import SYMBOL_LIMIT

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


BEYOND = f"symbols must be integers within ±{SYMBOL_LIMIT}"


def _sequence(prior: Prior, values: npt.ArrayLike) -> npt.NDArray[np.integer[Any]]:
    """``values`` as an array of integers (T, L); their range is checked where they are read
    (``_within``, or ``SymbolCoder._encode_few``)."""
    array = np.asarray(values)
    if array.ndim != 2 or array.shape[1] != prior.latent_dim:
        raise ValueError(f"symbols must be (T, {prior.latent_dim}), got {array.shape}")
    if array.dtype.kind not in "iu":
        raise ValueError(BEYOND)
    return array


def _within(array: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int32]:
    """``array`` as int32, each symbol within ±Q, else a ``ValueError``."""
    if array.size and (array.min() < -SYMBOL_LIMIT or array.max() > SYMBOL_LIMIT):
        raise ValueError(BEYOND)
    return array.astype(np.int32)


FEW_SYMBOLS = 32
"""A sequence of at most this many symbols is coded a symbol a call, in Python: cheaper than
NumPy's cost per call for a packet of a frame or a few. Both ways make the same words."""


class SymbolCoder:
    """A prior's models, built once, coding sequences of symbols to words and back: what a
    stream's ends hold, so that a packet of a frame pays for its symbols alone."""

    def __init__(self, prior: Prior) -> None:
        self.prior, self.lo, self.escape = prior, prior.lo.tolist(), prior.escape
        self.tables, self.uniform = _models(prior)

    def encode(self, values: npt.NDArray[np.integer[Any]]) -> bytes:
        """One sequence's symbols (T, L) as little-endian 32-bit words."""
        array = _sequence(self.prior, values)
        encoder = _constriction().stream.queue.RangeEncoder()
        if array.size <= FEW_SYMBOLS:
            self._encode_few(encoder, array.T.tolist())
        else:
            self._encode_many(encoder, _within(array))
        return bytes(encoder.get_compressed().astype("<u4", copy=False).tobytes())

    def _encode_many(self, encoder: Any, values: npt.NDArray[np.int32]) -> None:
        columns = self.prior.indices(values)
        escapes = columns == self.escape
        for dimension, table in enumerate(self.tables):
            encoder.encode(columns[:, dimension], table)
            if escapes[:, dimension].any():
                escaped = values[escapes[:, dimension], dimension]
                encoder.encode(escaped + np.int32(SYMBOL_LIMIT), self.uniform)

    def _encode_few(self, encoder: Any, rows: list[list[int]]) -> None:
        """``_encode_many``'s symbols in its order, ``rows`` the symbols of each dimension,
        each checked within ±Q as it comes (the encoder is the caller's alone)."""
        escape, limit = self.escape, SYMBOL_LIMIT
        for row, lo, table in zip(rows, self.lo, self.tables, strict=True):
            escaped = []
            for symbol in row:
                if 0 <= symbol - lo < escape:
                    encoder.encode(symbol - lo, table)
                elif -limit <= symbol <= limit:
                    encoder.encode(escape, table)
                    escaped.append(symbol + limit)
                else:
                    raise ValueError(BEYOND)
            for value in escaped:
                encoder.encode(value, self.uniform)

    def decode(self, data: bytes, frames: int) -> npt.NDArray[np.int32]:
        """The ``frames`` × L symbols ``encode`` made into ``data``."""
        if len(data) % 4:
            raise ValueError(f"coded symbols are 32-bit words, got {len(data)} bytes")
        words = np.frombuffer(data, "<u4").astype(np.uint32)
        decoder = _constriction().stream.queue.RangeDecoder(words)
        if frames * len(self.lo) <= FEW_SYMBOLS:
            decoded = np.array(self._decode_few(decoder, frames), np.int32).T
        else:
            decoded = self._decode_many(decoder, frames)
        if not decoder.maybe_exhausted():
            raise ValueError(f"the coded words do not end with the {frames} frames declared")
        return decoded

    def _decode_many(self, decoder: Any, frames: int) -> npt.NDArray[np.int32]:
        decoded = np.empty((frames, len(self.lo)), np.int32)
        for dimension, table in enumerate(self.tables):
            columns = np.asarray(decoder.decode(table, frames), np.int64)
            escaped = columns == self.escape
            decoded[:, dimension] = columns + self.lo[dimension]
            if escaped.any():
                values = np.asarray(decoder.decode(self.uniform, int(escaped.sum())), np.int64)
                decoded[escaped, dimension] = _checked(values - SYMBOL_LIMIT)
        return decoded

    def _decode_few(self, decoder: Any, frames: int) -> list[list[int]]:
        """``_decode_many``'s symbols, each dimension's as a list."""
        rows = []
        for lo, table in zip(self.lo, self.tables, strict=True):
            row = [decoder.decode(table) + lo for _ in range(frames)]
            escape = self.escape + lo  # no symbol of the table: an escape's column, shifted
            if escape in row:
                count = row.count(escape)
                values = [decoder.decode(self.uniform) - SYMBOL_LIMIT for _ in range(count)]
                escaped = iter(_checked(values))
                row = [next(escaped) if symbol == escape else symbol for symbol in row]
            rows.append(row)
        return rows


def _checked(escaped: Any) -> Any:
    """Escaped symbols, each within ±Q, else a ``ValueError`` (16 bits reach Q + 1)."""
    if max(escaped, default=0) > SYMBOL_LIMIT:
        raise ValueError(f"an escaped symbol decodes beyond ±{SYMBOL_LIMIT}")
    return escaped


def encode_symbols(prior: Prior, values: npt.NDArray[np.integer[Any]]) -> bytes:
    """One sequence's symbols (T, L) as little-endian 32-bit words."""
    return SymbolCoder(prior).encode(values)


def decode_symbols(prior: Prior, data: bytes, frames: int) -> npt.NDArray[np.int32]:
    """The ``frames`` × L symbols ``encode_symbols`` made into ``data``."""
    return SymbolCoder(prior).decode(data, frames)


def information_bits(prior: Prior, values: npt.NDArray[np.integer[Any]]) -> float:
    """The symbols' information under the prior, Σ −log2(f / 2^P), an escape's 16 bits too:
    the least any coder of this prior can spend on them."""
    columns = prior.indices(_within(_sequence(prior, values)))
    chosen = np.take_along_axis(prior.frequencies.T, columns, axis=0)
    escapes = int((columns == prior.escape).sum())
    bits = prior.precision * chosen.size - float(np.log2(chosen.astype(np.float64)).sum())
    return bits + ESCAPE_BITS * escapes
