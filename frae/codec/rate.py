"""The rate a learned prior gives the codes (the contract's "Rate: training the codec for its
bits"), in float64 NumPy: the reference's maths and ``bits``.

For each code dimension l the prior is a logistic of location μ_l and scale s_l = exp(ρ_l),
discretized to the grid of Δ. A code u = Δ·q costs::

    a = (u − μ + Δ/2) / s,   b = (u − μ − Δ/2) / s,   c = Δ / s
    p(u) = σ(a) − σ(b) = σ(a) · σ(−b) · (−expm1(−c))
    I(u) = −log2 p(u) = −(log σ(a) + log σ(−b) + log(−expm1(−c))) / ln 2

bits, in the product's form, each factor's log computed without cancellation, so a code many
scales from μ costs its true bits, not a difference of two sigmoids that rounds to 0. A symbol
costs ``FLOOR_BITS`` at most: beyond, it is floored and passes no gradient. The slopes::

    ∂I/∂u = (σ(b) − σ(−a)) / (s · ln 2),   ∂I/∂μ = −∂I/∂u
    ∂I/∂ρ = (a·σ(−a) − b·σ(b) + c / expm1(c)) / ln 2
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from frae.codec.prior import PRECISION

FLOOR_BITS = PRECISION
"""The most a symbol costs: the bits of the integer table's smallest frequency, 1 in 2^P."""

Array = npt.NDArray[np.float64]


def log_sigmoid(value: npt.ArrayLike) -> Array:
    """log σ(x) = −log(1 + e^−x), finite and exact in both tails."""
    return np.asarray(-np.logaddexp(0.0, -np.asarray(value, np.float64)))


def sigmoid(value: npt.ArrayLike) -> Array:
    """σ(x), to full relative precision in both tails (not 1 − σ(−x))."""
    return np.asarray(np.exp(log_sigmoid(value)))


class Standardized(NamedTuple):
    """a, b and c = Δ/s of each code, and the scale s (the module's formulas)."""

    a: Array
    b: Array
    c: Array
    scale: Array


def standardized(
    codes: npt.ArrayLike, location: npt.ArrayLike, log_scale: npt.ArrayLike, step: float
) -> Standardized:
    """The codes' ends of their bins in scales from μ, in float64."""
    scale = np.exp(np.asarray(log_scale, np.float64))
    centred = np.asarray(codes, np.float64) - np.asarray(location, np.float64)
    return Standardized(
        (centred + step / 2) / scale, (centred - step / 2) / scale, step / scale, scale
    )


def information(
    codes: npt.ArrayLike, location: npt.ArrayLike, log_scale: npt.ArrayLike, step: float
) -> Array:
    """I = −log2 p of each code (…, L) under the prior (μ, ρ) (L,), unfloored."""
    a, b, c, _ = standardized(codes, location, log_scale, step)
    log_p = log_sigmoid(a) + log_sigmoid(-b) + np.log(-np.expm1(-c))
    return np.asarray(-log_p / math.log(2.0))


def symbol_bits(
    codes: npt.ArrayLike, location: npt.ArrayLike, log_scale: npt.ArrayLike, step: float
) -> Array:
    """Each code's bits, ``min(FLOOR_BITS, I)``."""
    return np.minimum(FLOOR_BITS, information(codes, location, log_scale, step))


class Slopes(NamedTuple):
    """∂ bits / ∂ code, ∂ bits / ∂ μ and ∂ bits / ∂ ρ of each code (…, L), zero where floored."""

    code: Array
    location: Array
    log_scale: Array


def slopes(
    codes: npt.ArrayLike, location: npt.ArrayLike, log_scale: npt.ArrayLike, step: float
) -> Slopes:
    """The exact slopes of ``symbol_bits`` in u, μ and ρ (the module's formulas)."""
    a, b, c, scale = standardized(codes, location, log_scale, step)
    unfloored = information(codes, location, log_scale, step) <= FLOOR_BITS
    ln2 = math.log(2.0)
    d_code = (sigmoid(b) - sigmoid(-a)) / (scale * ln2) * unfloored
    with np.errstate(over="ignore"):  # expm1 of a huge Δ/s is inf, and c / inf the limit 0
        mass_slope = c / np.expm1(c)
    d_log_scale = (a * sigmoid(-a) - b * sigmoid(b) + mass_slope) / ln2 * unfloored
    return Slopes(d_code, -d_code, d_log_scale)


def prior_parameters(model: Any) -> tuple[Array, Array, float]:
    """(μ, ρ, Δ) of a model trained with ``rate_weight`` set; any other is a ``ValueError``."""
    config = model.config
    if config.rate_weight is None or config.code_step is None:
        raise ValueError(
            "the model has no learned prior: its config needs rate_weight (and code_step) set"
        )
    weights = model.get_weights()
    location, log_scale = (weights[name].astype(np.float64) for name in config.prior_parameters)
    return location, log_scale, float(config.code_step)


def bits(model: Any, x: npt.ArrayLike) -> Array:
    """bits_t = Σ_l min(FLOOR_BITS, −log2 p_l(ẑ_{t,l})) of ``model.encode(x)``: (B, T) for x
    (B, T, F), (T,) for x (T, F); float64, from the model's learned prior."""
    location, log_scale, step = prior_parameters(model)
    return np.asarray(symbol_bits(model.encode(x), location, log_scale, step).sum(axis=-1))
