"""The rate term's curve beside the counted prior's (the contract's "Rate: training the codec
for its bits").

The counted curve is the float model quantized after training at each Δ, its bytes coded under
the prior counted from its symbols of the training windows (``frae.codec.fit_prior``). The
trained curve is the same model trained at one Δ (``RATE_CODE_STEP``) for distortion and rate
together, ``FRAEConfig(code_step=Δ, rate_weight=λ)`` at each of ``RATE_WEIGHTS``:

    loss = mean over (B, T, F) of (x − x̂)²  +  λ · mean over (B, T) of bits_t

its bytes coded under the integer tables of its learned prior (``frae.codec.prior_from_model``).
Each λ model is trained as every model of the demo is, from the same initial weights (its
prior's at their initial values) with the same Adam steps, so that both curves' models had
the same training: continued from the float model's trained weights, the λ models would have
twice the steps, and the steps alone lift the held-out SNR by a few tenths of a dB, more than
the counted curve's top decibel is worth in bits. The models trained with Δ alone, from the
same start (the worker's), part the cost of training through the rounding from what the rate
term does. The curves are compared at equal SNR (``counted_bits_at``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy.typing as npt

import frae
from apps.demo.rate_distortion import Keep, RatePoint, rate_point
from frae import codec
from frae.config import FRAEConfig

RATE_CODE_STEP = 2**-4
"""The Δ of the trained curve: the counted curve's point at 1/16 keeps all but a few
hundredths of a dB of the float model, at 4 to 5 bits a code dimension, so the rate term
has every rate of the counted curve's knee below it to trade for, by narrowing the codes
rather than coarsening the grid; and the counted curve and the models trained with Δ alone
(``TRAINED_CODE_STEPS``) have a point at the same Δ."""
RATE_WEIGHTS = (0.001, 0.004, 0.016, 0.064)
"""The λ of the trained curve, in (per-element MSE in standardised units) per (bit a frame):
the counted curve's slope −dMSE/dbits runs from about 0.001 at Δ = 1/16 to about 0.08 at
Δ = 1, so these span its range from high rate to low."""

Fitted = Callable[[FRAEConfig], frae.Backend]
"""A model of a config, trained: the demo's initial weights and Adam steps on the training
windows."""


def rate_trained(
    config: FRAEConfig,
    x: npt.NDArray[Any],
    train: npt.NDArray[Any],
    fitted: Fitted,
    keep: Keep | None = None,
) -> list[RatePoint]:
    """At each of ``RATE_WEIGHTS``, the model of ``config`` with Δ = ``RATE_CODE_STEP`` and
    that λ, trained by ``fitted``; its rate point on ``x`` under its learned prior's tables
    (each stream handed to ``keep``), beside its payload under the prior its symbols of
    ``train`` count."""
    points = []
    for weight in RATE_WEIGHTS:
        model = fitted(dataclasses.replace(config, code_step=RATE_CODE_STEP, rate_weight=weight))
        points.append(rate_point(model, x, train, keep, codec.prior_from_model(model)))
    return points


def counted_bits_at(curve: Sequence[tuple[float, float]], snr: float) -> float | None:
    """The counted curve's bits a frame at ``snr``: linear in SNR between the two points of
    ``curve`` ((SNR dB, bits a frame) each, over Δ) on either side; ``None`` beyond its ends.
    The counted curve gains SNR with every bit, so its points ordered by SNR are ordered by
    bits too."""
    ordered = sorted(curve)
    for (low_snr, low_bits), (high_snr, high_bits) in itertools.pairwise(ordered):
        if low_snr <= snr <= high_snr:
            if high_snr == low_snr:
                return min(low_bits, high_bits)
            share = (snr - low_snr) / (high_snr - low_snr)
            return low_bits + share * (high_bits - low_bits)
    return None
