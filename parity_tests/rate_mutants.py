"""Rate mutants (the contract's "Rate: training the codec for its bits"), one realistic mistake
each (see ``parity_tests.mutants``): the reference's rate term with its bits or slopes broken
(``impls.reference.train.loss_and_grads``'s ``rate_term``), or its training."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from frae.backend import Array, Moments, TrainStep
from frae.codec import rate
from frae.training_state import TrainingState
from impls.reference import train
from impls.reference.model import unroll
from parity_tests.mutants import Float32Reference

Float32 = npt.NDArray[np.float32]


class _RateTermBroken(Float32Reference):
    """Gradients whose rate term is ``rate_term``: the bits of each code and their slopes."""

    rate_term: ClassVar[train.RateTerm]

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = train.loss_and_grads(self.config, self.params, x, y, rate_term=self.rate_term)
        return loss, {name: grad.astype(np.float32) for name, grad in grads.items()}


def _slopes_of_a_stopped_code(
    codes: Any, location: Any, log_scale: Any, step: float
) -> rate.Slopes:
    """``rate.slopes``, but none in the code: the bits of ``stop_gradient(ẑ)``."""
    slopes = rate.slopes(codes, location, log_scale, step)
    return slopes._replace(code=np.zeros_like(slopes.code))


class RateOfAStoppedCode(_RateTermBroken):
    """The rate computed on a stopped ẑ (``stop_gradient``, ``.detach()``, a code read back
    from the forward pass): μ and ρ learn, but the rate never pulls on the encoder."""

    breaks = "rate"
    rate_term = (rate.symbol_bits, _slopes_of_a_stopped_code)


class PriorGradientsWithoutTheWeight(Float32Reference):
    """A hand-written backward that weights the rate's pull on the code by λ and forgets λ in
    μ's and ρ's gradients: the mean of the bits' slopes over (B, T), unweighted."""

    breaks = "rate"

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = train.loss_and_grads(self.config, self.params, x, y)
        step, names = float(self.config.code_step or 0.0), self.config.prior_parameters
        location, log_scale = (self.params[name] for name in names)
        _, codes, _ = unroll(self.config, self.params, x)
        slopes = rate.slopes(codes, location, log_scale, step)
        frames = codes.shape[0] * codes.shape[1]
        for name, slope in zip(names, slopes[1:], strict=True):
            grads[name] = slope.sum(axis=(0, 1)) / frames
        return loss, {name: grad.astype(np.float32) for name, grad in grads.items()}


def _float32_sigmoid(value: Float32) -> Float32:
    return np.asarray(1 / (1 + np.exp(-value)), np.float32)


def _float32_difference(
    codes: Any, location: Any, log_scale: Any, step: float
) -> tuple[Float32, Float32, Float32, Float32]:
    """a, b, s and p = σ(a) − σ(b), all in float32."""
    centred = np.asarray(codes, np.float32) - np.asarray(location, np.float32)
    scale = np.asarray(np.exp(np.asarray(log_scale, np.float32)), np.float32)
    half = np.float32(step / 2)
    a = np.asarray((centred + half) / scale, np.float32)
    b = np.asarray((centred - half) / scale, np.float32)
    p = np.asarray(_float32_sigmoid(a) - _float32_sigmoid(b), np.float32)
    return a, b, scale, p


@np.errstate(divide="ignore")
def _bits_of_a_difference(codes: Any, location: Any, log_scale: Any, step: float) -> Any:
    """min(24, −log2(σ(a) − σ(b))) in float32: a p that rounds to 0 is floored."""
    *_, p = _float32_difference(codes, location, log_scale, step)
    return np.minimum(rate.FLOOR_BITS, -np.log2(p)).astype(np.float64)


@np.errstate(divide="ignore", invalid="ignore")
def _slopes_of_a_difference(codes: Any, location: Any, log_scale: Any, step: float) -> Any:
    """What autodiff makes of −log2(σ(a) − σ(b)) in float32, zero where floored: σ'(x) =
    σ(x)·σ(−x), ∂p/∂u = (σ'(a) − σ'(b)) / s, ∂p/∂ρ = −(a·σ'(a) − b·σ'(b))."""
    a, b, scale, p = _float32_difference(codes, location, log_scale, step)
    slope_a, slope_b = (_float32_sigmoid(v) * _float32_sigmoid(-v) for v in (a, b))
    kept = (p > 0) & (-np.log2(p) <= rate.FLOOR_BITS)
    ln2 = np.float32(math.log(2.0))
    d_code = np.where(kept, -(slope_a - slope_b) / (scale * p * ln2), 0).astype(np.float64)
    d_log_scale = np.where(kept, (a * slope_a - b * slope_b) / (p * ln2), 0)
    return rate.Slopes(d_code, -d_code, d_log_scale.astype(np.float64))


class DifferenceOfSigmoidsInFloat32(_RateTermBroken):
    """p = σ(a) − σ(b) in float32, the first form of the contract: in the tails above μ both
    sigmoids lie a few ulp below 1, and a symbol of 15 to 24 bits is off by up to a bit (or
    floored, where p rounds to 0); near the centre with Δ/s small p keeps a few digits, and
    its slopes fewer."""

    breaks = "rate_tails"
    rate_term = (_bits_of_a_difference, _slopes_of_a_difference)


def _slopes_without_the_floor(codes: Any, location: Any, log_scale: Any, step: float) -> Any:
    """The module's slopes, written out without the floor's mask."""
    scale = np.exp(np.asarray(log_scale, np.float64))
    centred = np.asarray(codes, np.float64) - np.asarray(location, np.float64)
    a, b, c = (centred + step / 2) / scale, (centred - step / 2) / scale, step / scale
    ln2 = math.log(2.0)
    d_code = (rate.sigmoid(b) - rate.sigmoid(-a)) / (scale * ln2)
    d_log_scale = (a * rate.sigmoid(-a) - b * rate.sigmoid(b) + c / np.expm1(c)) / ln2
    return rate.Slopes(d_code, -d_code, d_log_scale)


class FloorPassesGradient(_RateTermBroken):
    """A floored symbol costs 24 bits but still pulls on μ, ρ and the code, as
    ``24 + (I − stop_gradient(I))`` or slopes taken without the floor's mask do."""

    breaks = "rate_tails"
    rate_term = (rate.symbol_bits, _slopes_without_the_floor)


class PriorLeftOutOfTraining(Float32Reference):
    """``fit`` never updates μ and ρ, their gradients computed all the same (a
    ``trainable=False`` prior, or an optimizer's variable list without them): Adam keeps no
    moments of them."""

    breaks = "rate_training"

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        step, moments = super()._train_step(optimizer, learning_rate, start)
        frozen = self.config.prior_parameters

        def without_prior(x: Array, y: Array) -> float:
            kept = {name: self.params[name] for name in frozen}
            loss = step(x, y)
            self.params.update(kept)
            return loss

        def moments_without_prior() -> tuple[Any, Any]:
            first, second = moments()
            zeros = {name: np.zeros_like(first[name]) for name in frozen if name in first}
            return first | zeros, second | zeros

        return without_prior, moments_without_prior


MUTANTS = [
    RateOfAStoppedCode,
    PriorGradientsWithoutTheWeight,
    DifferenceOfSigmoidsInFloat32,
    FloorPassesGradient,
    PriorLeftOutOfTraining,
]
