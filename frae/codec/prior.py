"""The prior over a model's symbols (the contract's "Coding: the model as a codec"): for each
code dimension l, integer frequencies over the contiguous symbols ``lo_l … lo_l + n − 2`` and
one escape (the last column), each at least 1, summing to 2^P.

The rule, in integers from the symbol counts alone (never from floats):

1. each dimension's window is its symbols' range, or, where that spans more than
   ``MAX_TABLE_SYMBOLS``, the window of that width holding the most symbols (the lowest such);
   n − 1 is the widest window, and every dimension's window is widened upwards to it (downwards
   where it would pass Q);
2. with c_i the counts of the window's symbols, then of the symbols outside it (the escape),
   N = Σ c_i and R = 2^P − n: f_i = 1 + ⌊c_i·R / N⌋, and the R − Σ⌊c_i·R / N⌋ left over go one
   each to the largest remainders c_i·R mod N (the lowest index first among equals).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from frae.quantization import SYMBOL_LIMIT, symbols
from frae.validation import check_code_step

PRECISION = 24
"""P: each dimension's frequencies sum to 2^P (constriction's own precision, so a table
widened to cover symbols never seen costs at most 2^−12 of its mass)."""
MAX_TABLE_SYMBOLS = 4096
"""The most symbols a table covers (n − 1); the rest of a dimension's symbols are escaped."""

Table = npt.NDArray[np.uint32]


@dataclass(frozen=True, eq=False)
class Prior:
    """Integer tables over the symbols of a model whose ``code_step`` is ``step``:
    ``frequencies`` (L, n), the last column the escape, and ``lo`` (L,) the first symbol each
    row covers. Checked when made: a malformed prior is a ``ValueError`` that says what."""

    step: float
    lo: npt.NDArray[np.int32]
    frequencies: Table
    precision: int = PRECISION

    def __post_init__(self) -> None:
        check_code_step(self.step)
        object.__setattr__(self, "lo", _integers(self.lo, "lo", ndim=1).astype(np.int32))
        table = _integers(self.frequencies, "frequencies", ndim=2)
        _check_tables(table, self.lo, self.precision)
        object.__setattr__(self, "frequencies", table.astype(np.uint32))

    @property
    def latent_dim(self) -> int:
        return len(self.lo)

    @property
    def escape(self) -> int:
        """The escape's column: n − 1, the number of symbols each table covers."""
        return int(self.frequencies.shape[1] - 1)

    def indices(self, symbols: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int32]:
        """Each symbol's column in its dimension's table (``symbols`` (…, L), each within
        ±Q), the escape's for a symbol outside it."""
        # symbols within ±Q: a symbol below lo wraps, as uint32, past every column
        offsets = (np.asarray(symbols, np.int32) - self.lo).astype(np.uint32)
        return np.minimum(offsets, self.escape).view(np.int32)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Prior)
            and (self.step, self.precision) == (other.step, other.precision)
            and np.array_equal(self.lo, other.lo)
            and np.array_equal(self.frequencies, other.frequencies)
        )

    __hash__ = None  # type: ignore[assignment]


def _integers(value: Any, name: str, *, ndim: int) -> npt.NDArray[np.int64]:
    array = np.asarray(value)
    if array.ndim != ndim or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"prior {name} must be {ndim}-D integers, got {array.dtype} {array.shape}")
    return array.astype(np.int64)


def _check_tables(table: npt.NDArray[np.int64], lo: npt.NDArray[np.int32], precision: int) -> None:
    if precision != PRECISION:
        raise ValueError(f"prior precision must be {PRECISION}, got {precision}")
    if table.shape[0] != len(lo) or table.shape[0] == 0:
        raise ValueError(f"prior frequencies {table.shape} do not match lo {lo.shape}")
    if not 2 <= table.shape[1] <= MAX_TABLE_SYMBOLS + 1:
        raise ValueError(
            f"prior tables must cover 1 to {MAX_TABLE_SYMBOLS} symbols and the escape, "
            f"got {table.shape[1]} columns"
        )
    if table.min() < 1:
        raise ValueError("prior frequencies must each be at least 1")
    sums = table.sum(axis=1)
    if np.any(sums != 2**precision):
        raise ValueError(f"prior frequencies must sum to 2^{precision}, got {sums.tolist()}")
    last = lo.astype(np.int64) + table.shape[1] - 2
    if lo.min() < -SYMBOL_LIMIT or last.max() > SYMBOL_LIMIT:
        raise ValueError(f"prior tables must lie within ±{SYMBOL_LIMIT}, got lo {lo.tolist()}")


def fit_prior(model: Any, x: npt.ArrayLike) -> Prior:
    """The prior of the symbols of ``model.encode(x)`` (a model with ``code_step`` set)."""
    step = model.config.code_step
    if step is None:
        raise ValueError("fit_prior needs a model with code_step set: it codes symbols")
    return prior_of_symbols(symbols(model.encode(x), step), step)


def prior_of_symbols(values: npt.ArrayLike, step: float) -> Prior:
    """The prior of symbols (…, L) by the module's rule."""
    array = np.asarray(values)
    if array.ndim < 2 or array.size == 0 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"symbols must be non-empty integers (..., L), got {array.shape}")
    columns = array.reshape(-1, array.shape[-1]).astype(np.int64).T
    if np.abs(columns).max() > SYMBOL_LIMIT:
        raise ValueError(f"symbols must lie within ±{SYMBOL_LIMIT}")
    windows = [_densest_window(column) for column in columns]
    covered = max(width for _, width in windows)
    lo = np.array([min(start, SYMBOL_LIMIT - covered + 1) for start, _ in windows], np.int32)
    tables = [
        _frequencies(_counts(column, int(start), covered))
        for column, start in zip(columns, lo, strict=True)
    ]
    return Prior(step, lo, np.stack(tables))


def _densest_window(column: npt.NDArray[np.int64]) -> tuple[int, int]:
    """(first symbol, width) of the window rule 1 picks for one dimension."""
    low, span = int(column.min()), int(column.max() - column.min()) + 1
    if span <= MAX_TABLE_SYMBOLS:
        return low, span
    cumulative = np.concatenate([[0], np.cumsum(np.bincount(column - low))])
    held = cumulative[MAX_TABLE_SYMBOLS:] - cumulative[:-MAX_TABLE_SYMBOLS]
    return low + int(np.argmax(held)), MAX_TABLE_SYMBOLS


def _counts(column: npt.NDArray[np.int64], start: int, covered: int) -> npt.NDArray[np.int64]:
    """The counts of symbols ``start … start + covered − 1``, then of those outside."""
    offsets = column - start
    inside = (offsets >= 0) & (offsets < covered)
    counts = np.bincount(offsets[inside], minlength=covered)
    return np.append(counts, len(column) - int(inside.sum()))


def _frequencies(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Rule 2: counts to frequencies, each at least 1, summing to 2^P."""
    total, free = int(counts.sum()), 2**PRECISION - len(counts)
    scaled = counts * free
    shares: npt.NDArray[np.int64] = scaled // total
    remainders = scaled % total
    order = np.lexsort((np.arange(len(counts)), -remainders))
    shares[order[: free - int(shares.sum())]] += 1
    return shares + 1
