"""The code a receiver sees (the contract's "Quantized codes"): symbols on the grid of Δ.

With ``FRAEConfig(code_step=Δ)`` every step quantizes its code, ``q = clip(rint(z / Δ), −Q,
Q)`` (round half to even) and ``ẑ = Δ·q``, and the decoder and the feedback read ẑ. In the
backward pass round is the identity and the clip passes the gradient where ``|z / Δ| ≤ Q``:
the straight-through estimator. Here: the rule in NumPy, free of every framework."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

SYMBOL_LIMIT = 2**15 - 1
"""Q: the largest symbol's magnitude; codes beyond ±Q·Δ are clipped."""


def symbols(codes: npt.ArrayLike, code_step: float) -> npt.NDArray[np.int32]:
    """The integer symbols of codes ``ẑ``: ``clip(rint(ẑ / Δ), −Q, Q)`` as int32 (exact for
    grid values, which ``encode`` returns)."""
    scaled = np.rint(np.asarray(codes) / code_step)
    return np.clip(scaled, -SYMBOL_LIMIT, SYMBOL_LIMIT).astype(np.int32)


def symbol_rows(codes: list[list[float]], code_step: float) -> list[list[int]]:
    """``symbols`` of one sequence's codes given as Python lists (T lists of L floats), each
    dimension's symbols as a list of ints, by the same rule in Python (``round`` is half to
    even; z / Δ is exact, Δ a power of two): cheaper than NumPy's calls for a few codes. A
    code that is not finite is a ``ValueError``."""
    limit = SYMBOL_LIMIT
    try:
        return [
            [max(-limit, min(limit, round(code / code_step))) for code in row]
            for row in zip(*codes, strict=True)
        ]
    except OverflowError as error:
        raise ValueError("a code is infinite") from error


def quantize(codes: npt.NDArray[Any], code_step: float) -> npt.NDArray[Any]:
    """``Δ · symbols(codes, Δ)`` in the codes' dtype (exact: Δ is a power of two)."""
    return (symbols(codes, code_step) * code_step).astype(codes.dtype)


def passes_gradient(codes: npt.NDArray[Any], code_step: float) -> npt.NDArray[np.bool_]:
    """Where the straight-through estimator passes d loss / d ẑ to z: ``|z / Δ| ≤ Q``."""
    return np.abs(codes / code_step) <= SYMBOL_LIMIT


def tie_margin(codes: npt.NDArray[Any], code_step: float) -> float:
    """How far the codes lie from a decision, in steps of Δ: from a rounding tie k + ½ within
    the clip, and from the clip's edge ±Q, where the gradient changes (codes beyond the clip
    round to ±Q whatever their fraction). Comparisons across backends need at least 1e-4."""
    scaled = np.abs(np.asarray(codes, np.float64) / code_step)
    to_tie = np.abs(scaled - (np.floor(scaled) + 0.5))[scaled < SYMBOL_LIMIT]
    to_edge = np.abs(scaled - SYMBOL_LIMIT)
    return float(min(np.min(to_tie, initial=np.inf), np.min(to_edge, initial=np.inf)))
