"""The integer prior from a learned one (the contract's "Rate: training the codec for its
bits"): computed once, in float64 NumPy, where the checkpoint is made, and sent as integers,
so that no receiver evaluates a float model that another platform might round otherwise.

The rule, for each code dimension l with p_l the discretized logistic of ``frae.codec.rate``:

1. the window is the symbols k within ±Q whose p_l(kΔ) ≥ 2^−P; where that range spans more
   than ``MAX_TABLE_SYMBOLS``, the window of that width centred on rint(μ_l / Δ) (the lower
   half one shorter), moved inside the range; every dimension's window is then widened
   upwards to the widest (downwards where it would pass Q);
2. a window symbol whose p_l(kΔ) · 2^P rounds to 0 gets frequency 1; with m of those, every
   other gets max(1, rint(p_l(kΔ) · (2^P − m − 1))) (nearest, ties to even), which leaves the
   escape (what is left of 2^P) about 1 plus the mass outside the window;
3. where rounding leaves the escape less than 1, the shortfall is taken one at a time from
   the largest frequencies above 1 (the lowest symbol first among equals), round after round.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from frae.codec.prior import MAX_TABLE_SYMBOLS, PRECISION, Prior
from frae.codec.rate import information, prior_parameters
from frae.quantization import SYMBOL_LIMIT

Window = tuple[int, int]
"""(first symbol, number of symbols) of a table."""


def prior_from_model(model: Any) -> Prior:
    """The integer ``Prior`` (P = 24) of a model trained with ``rate_weight`` set, by the
    module's rule, from its ``prior/location`` and ``prior/log_scale``."""
    location, log_scale, step = prior_parameters(model)
    return prior_from_parameters(location, log_scale, step)


def prior_from_parameters(location: npt.ArrayLike, log_scale: npt.ArrayLike, step: float) -> Prior:
    """The integer ``Prior`` of the logistics (μ, ρ) (each (L,)) on the grid of ``step``."""
    mu, rho = (np.asarray(value, np.float64).reshape(-1) for value in (location, log_scale))
    windows = [_window(m, r, step) for m, r in zip(mu, rho, strict=True)]
    covered = max(width for _, width in windows)
    lo = [min(start, SYMBOL_LIMIT - covered + 1) for start, _ in windows]
    tables = [
        _frequencies(information(step * np.arange(first, first + covered), m, r, step))
        for first, m, r in zip(lo, mu, rho, strict=True)
    ]
    return Prior(step, np.array(lo, np.int32), np.stack(tables))


def _window(location: float, log_scale: float, step: float) -> Window:
    """Rule 1 for one dimension, before the widening."""
    centre = int(np.clip(np.rint(location / step), -SYMBOL_LIMIT, SYMBOL_LIMIT))
    low = max(-SYMBOL_LIMIT, centre - MAX_TABLE_SYMBOLS)
    candidates = np.arange(low, min(SYMBOL_LIMIT, centre + MAX_TABLE_SYMBOLS) + 1)
    kept = candidates[information(step * candidates, location, log_scale, step) <= PRECISION]
    if kept.size == 0:  # a scale so wide that no symbol reaches 2^−P: the centre alone
        return centre, 1
    first, last = int(kept[0]), int(kept[-1])
    if last - first + 1 <= MAX_TABLE_SYMBOLS:
        return first, last - first + 1
    start = centre - MAX_TABLE_SYMBOLS // 2
    start = min(max(start, first), last - MAX_TABLE_SYMBOLS + 1)
    return start, MAX_TABLE_SYMBOLS


def _frequencies(bits: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Rules 2 and 3: the window's frequencies from its symbols' bits, then the escape."""
    total = 2**PRECISION
    forced = np.rint(np.exp2(PRECISION - bits)) < 1
    scale = total - int(forced.sum()) - 1
    shares = np.where(forced, 1, np.maximum(1, np.rint(np.exp2(-bits) * scale))).astype(np.int64)
    shortfall = int(shares.sum()) + 1 - total
    order = [int(i) for i in np.lexsort((np.arange(len(shares)), -shares))]
    while shortfall > 0:
        for index in order:
            if shortfall > 0 and shares[index] > 1:
                shares[index] -= 1
                shortfall -= 1
    return np.append(shares, total - int(shares.sum()))
