"""Symbols to bytes and back with constriction's range coder (the ``codec`` extra), each code
dimension's model exactly its prior's integer table, the bytes ended at the shortest length
that decodes.

A sequence's symbols (T, L) are coded dimension by dimension: the T table columns of
dimension l (``Prior.indices``), then the values of those that were escaped, each
``symbol + Q`` in 16 bits. constriction's categorical model at 24 bits, built without its
optimisation (``perfect=False``), takes the symbol i to the slot ⌊C_i·s⌋ + i, C_i the sum of
the weights before i and s = (2^24 − n) / Σ weights; given the weights f_i − 1 of a table
summing to 2^24 (P = 24), s is 1 and every slot is exactly f_i wide: the table itself.

The coder's state is a 64-bit interval [lower, lower + range) behind the 32-bit words it has
written; every value in the final interval decodes to the symbols coded, and its decoder reads
the words past the end of its data as zeros. So the bytes end (``ended``) at the shortest
big-endian prefix whose value, padded with zero bytes, lies in the final interval: the
interval's lower end rounded up to a whole byte, at the first byte where that stays below its
upper end (Opus ends its range coder the same way). The reader pads the bytes with zeros to
whole words (``opened``). Both facts of constriction are pinned (constraints.txt) and held by
committed bytes in the tests.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from frae.codec.prior import Prior
from frae.quantization import SYMBOL_LIMIT

CODER_PRECISION = 24
"""The fixed-point precision of constriction's categorical models."""
ESCAPE_BITS = 16
"""The bits of an escaped symbol's value."""
ROUNDING_BITS = -math.log2(1 - 2**-8)
"""The most a coded value (a symbol, or an escape's value) costs beyond its information: the
coder scales its range, at least 2^32, by ⌊range / 2^24⌋ / (range / 2^24) ≥ 1 − 2^−8."""
ENDING_BITS = 8
"""The most the ending costs beyond the final interval's information: a byte boundary lies
within any interval at least a byte's unit wide."""


_QUEUE: Any = None
"""constriction's ``stream.queue`` module, once imported."""


def _constriction() -> Any:
    try:
        import constriction
    except ImportError as error:
        raise ImportError(
            "frae.codec codes with constriction: pip install 'frae[codec]'"
        ) from error
    return constriction


def _queue() -> Any:
    global _QUEUE
    if _QUEUE is None:
        _QUEUE = _constriction().stream.queue
    return _QUEUE


def _models(prior: Prior) -> tuple[list[Any], Any]:
    """Each dimension's categorical model, and the escaped values' uniform one."""
    model = _constriction().stream.model
    assert prior.precision == CODER_PRECISION
    weights = prior.frequencies.astype(np.float64) - 1.0
    tables = [model.Categorical(row, perfect=False) for row in weights]
    return tables, model.Uniform(2**ESCAPE_BITS)


def start() -> Any:
    """An empty range encoder."""
    return _queue().RangeEncoder()


def ended(encoder: Any) -> bytes:
    """``encoder``'s bytes, big-endian, ended at the shortest length whose value, padded with
    zero bytes, lies in its final interval: the lower end rounded up to a whole byte."""
    position: tuple[int, tuple[int, int]] = encoder.pos()
    written, (lower, width) = position
    if written == 0 and width == 2**64 - 1:
        return b""  # nothing coded
    before = 0
    if written:  # words held back wait for a carry: then the interval's lower end passed 2^64
        words = encoder.get_compressed()[:written]
        before = int.from_bytes(np.asarray(words, ">u4").tobytes(), "big")
        if lower + 2**32 - 1 >= 2**64:
            before -= 1  # the seal carried into the words it had held back
    low: int = (before << 64) + lower
    high, size = low + width, 4 * written + 8
    shared = size - ((low ^ (high - 1)).bit_length() + 7) // 8
    exact = size - ((low & -low).bit_length() - 1) // 8 if low else 0
    for length in range(min(shared, exact), size + 1):
        unit = 8 * (size - length)
        value = -(-low >> unit)
        if value << unit < high:
            return value.to_bytes(length, "big")
    raise AssertionError("a whole interval holds its lower end")


def opened(data: bytes) -> Any:
    """A range decoder over ``data``, padded with zero bytes to whole 32-bit words."""
    padded = data + bytes(-len(data) % 4)
    return _queue().RangeDecoder(np.frombuffer(padded, ">u4").astype(np.uint32))


@contextlib.contextmanager
def refusing_invalid_bytes() -> Iterator[None]:
    """constriction's assertion on bytes no encoder of these models makes, as a
    ``ValueError``."""
    try:
        yield
    except AssertionError as error:
        raise ValueError(f"the coded bytes are not a coding under this prior: {error}") from None


BEYOND = f"symbols must be integers within ±{SYMBOL_LIMIT}"


def _sequence(prior: Prior, values: npt.ArrayLike) -> npt.NDArray[np.integer[Any]]:
    """``values`` as an array of integers (T, L); their range is checked where they are read
    (``_within``, or ``SymbolCoder.write_rows``)."""
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
NumPy's cost per call for a packet of a frame or a few. Both ways make the same bytes."""


class SymbolCoder:
    """A prior's models, built once, coding sequences of symbols to bytes and back: what a
    stream's ends hold, so that a packet of a frame pays for its symbols alone. ``write`` and
    ``read`` code into a coder the caller holds (a packet codes several things in one);
    ``encode`` and ``decode``, one sequence alone."""

    def __init__(self, prior: Prior) -> None:
        self.prior, self.lo, self.escape = prior, prior.lo.tolist(), prior.escape
        self.tables, self.uniform = _models(prior)

    def encode(self, values: npt.NDArray[np.integer[Any]]) -> bytes:
        """One sequence's symbols (T, L) as bytes, ended at the shortest length."""
        encoder = start()
        self.write(encoder, values)
        return ended(encoder)

    def decode(self, data: bytes, frames: int) -> npt.NDArray[np.int32]:
        """The ``frames`` × L symbols ``encode`` made into ``data``; bytes no encoder makes
        are a ``ValueError`` or decode to other symbols."""
        return self.read(opened(data), frames)

    def write(self, encoder: Any, values: npt.NDArray[np.integer[Any]]) -> None:
        """One sequence's symbols (T, L) into ``encoder``."""
        array = _sequence(self.prior, values)
        if array.size <= FEW_SYMBOLS:
            self.write_rows(encoder, array.T.tolist())
        else:
            self._write_many(encoder, _within(array))

    def read(self, decoder: Any, frames: int) -> npt.NDArray[np.int32]:
        """The ``frames`` × L symbols ``write`` put into the decoder's bytes."""
        if frames * len(self.lo) <= FEW_SYMBOLS:
            rows = self.read_rows(decoder, frames)
            return np.array(rows, np.int32).reshape(len(self.lo), frames).T
        with refusing_invalid_bytes():
            return self._read_many(decoder, frames)

    def write_values(self, encoder: Any, values: npt.NDArray[np.integer[Any]]) -> None:
        """Integers within ±Q, each in 16 bits, as escaped symbols are."""
        encoder.encode(_within(np.asarray(values).ravel()) + np.int32(SYMBOL_LIMIT), self.uniform)

    def read_values(self, decoder: Any, count: int) -> npt.NDArray[np.int32]:
        """``count`` integers ``write_values`` wrote."""
        with refusing_invalid_bytes():
            values = np.asarray(decoder.decode(self.uniform, count), np.int64) - SYMBOL_LIMIT
        return np.asarray(_checked(values), np.int32)

    def _write_many(self, encoder: Any, values: npt.NDArray[np.int32]) -> None:
        columns = self.prior.indices(values)
        escapes = columns == self.escape
        for dimension, table in enumerate(self.tables):
            encoder.encode(columns[:, dimension], table)
            if escapes[:, dimension].any():
                escaped = values[escapes[:, dimension], dimension]
                encoder.encode(escaped + np.int32(SYMBOL_LIMIT), self.uniform)

    def write_rows(self, encoder: Any, rows: list[list[int]]) -> None:
        """``write``'s symbols in its order, ``rows`` the symbols of each dimension (L lists of
        T Python ints), each checked within ±Q as it comes: a few symbols' fast way."""
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

    def _read_many(self, decoder: Any, frames: int) -> npt.NDArray[np.int32]:
        decoded = np.empty((frames, len(self.lo)), np.int32)
        for dimension, table in enumerate(self.tables):
            columns = np.asarray(decoder.decode(table, frames), np.int64)
            escaped = columns == self.escape
            decoded[:, dimension] = columns + self.lo[dimension]
            if escaped.any():
                values = np.asarray(decoder.decode(self.uniform, int(escaped.sum())), np.int64)
                decoded[escaped, dimension] = _checked(values - SYMBOL_LIMIT)
        return decoded

    def read_rows(self, decoder: Any, frames: int) -> list[list[int]]:
        """``read``'s symbols, each dimension's as a list: a few symbols' fast way."""
        try:
            return self._read_rows(decoder, frames)
        except AssertionError as error:
            raise ValueError(
                f"the coded bytes are not a coding under this prior: {error}"
            ) from None

    def _read_rows(self, decoder: Any, frames: int) -> list[list[int]]:
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
    """Escaped values, each within ±Q, else a ``ValueError`` (16 bits reach Q + 1)."""
    if max(escaped, default=0) > SYMBOL_LIMIT:
        raise ValueError(f"an escaped value decodes beyond ±{SYMBOL_LIMIT}")
    return escaped


def decode_words(coder: SymbolCoder, data: bytes, frames: int) -> npt.NDArray[np.int32]:
    """Format 1's coding of one sequence: constriction's sealed 32-bit words, little-endian,
    which must end with the ``frames`` × L symbols."""
    if len(data) % 4:
        raise ValueError(f"format 1 codes symbols as 32-bit words, got {len(data)} bytes")
    words = np.frombuffer(data, "<u4").astype(np.uint32)
    decoder = _queue().RangeDecoder(words)
    decoded = coder.read(decoder, frames)
    if not decoder.maybe_exhausted():
        raise ValueError(f"the coded words do not end with the {frames} frames declared")
    return decoded


def encode_symbols(prior: Prior, values: npt.NDArray[np.integer[Any]]) -> bytes:
    """One sequence's symbols (T, L) as bytes, ended at the shortest length."""
    return SymbolCoder(prior).encode(values)


def decode_symbols(prior: Prior, data: bytes, frames: int) -> npt.NDArray[np.int32]:
    """The ``frames`` × L symbols ``encode_symbols`` made into ``data``."""
    return SymbolCoder(prior).decode(data, frames)


def size_bound_bits(information: float, coded_values: int) -> float:
    """The contract's bound on one coding's bits: its information under the prior, plus
    ``ROUNDING_BITS`` for each coded value (symbols and escaped values), plus
    ``ENDING_BITS``."""
    return information + ROUNDING_BITS * coded_values + ENDING_BITS


def information_bits(prior: Prior, values: npt.NDArray[np.integer[Any]]) -> float:
    """The symbols' information under the prior, Σ −log2(f / 2^P), an escape's 16 bits too:
    the least any coder of this prior can spend on them."""
    columns = prior.indices(_within(_sequence(prior, values)))
    chosen = np.take_along_axis(prior.frequencies.T, columns, axis=0)
    escapes = int((columns == prior.escape).sum())
    bits = prior.precision * chosen.size - float(np.log2(chosen.astype(np.float64)).sum())
    return bits + ESCAPE_BITS * escapes
