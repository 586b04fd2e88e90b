"""Quantization mutants (the contract's "Quantized codes"), one realistic mistake each (see
``parity_tests.mutants``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from frae import codec
from frae.backend import Array
from impls.reference import train
from impls.reference.model import unroll
from parity_tests.mutants import Float32Reference, float32_unroll


class OpenLoop(Float32Reference):
    """The codes rounded after the loop, not inside it: the decoder and the feedback read the
    unrounded code, so the sender's loop never sees what the receiver gets."""

    breaks = "quantized_codes"

    def _unroll(self, sequences: Array, state: Array, **options: Any) -> tuple[Array, Array, Array]:
        if options.get("codes_given"):  # decode rounds what it is given, as it should
            return super()._unroll(sequences, state, **options)
        raw = dataclasses.replace(self.config, code_step=None)
        outputs, codes, last = unroll(raw, self.params, sequences, state=state)
        return outputs, codec.quantize(codes, self.config.code_step), last


class DecodeTrustsItsInput(Float32Reference):
    """``decode`` feeds the codes it is given to the decoder as they are: right for grid
    values, wrong for any other."""

    breaks = "quantized_decode"

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        raw = dataclasses.replace(self.config, code_step=None)
        return float32_unroll(raw, self.params, z, state, codes_given=True)


def _half_away_from_zero(codes: Array, code_step: float) -> Array:
    """``round`` as C's ``round`` and Python 2 did it: ties away from zero."""
    scaled = codes / code_step
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    return np.clip(rounded, -codec.SYMBOL_LIMIT, codec.SYMBOL_LIMIT) * code_step


class TiesAwayFromZero(Float32Reference):
    """A code at k + ½ steps of Δ rounded away from zero (C's ``round``), not to the even
    symbol."""

    breaks = "ties"

    def _unroll(self, sequences: Array, state: Array, **options: Any) -> tuple[Array, Array, Array]:
        return super()._unroll(sequences, state, quantize=_half_away_from_zero, **options)


class _StraightThroughBroken(Float32Reference):
    """Gradients whose pass through the quantizer is ``passes_gradient``."""

    passes_gradient: Callable[[Array, float], npt.NDArray[np.bool_]]

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = train.loss_and_grads(self.config, self.params, x, y, self.passes_gradient)
        return loss, {name: grad.astype(np.float32) for name, grad in grads.items()}


class NoGradientThroughRounding(_StraightThroughBroken):
    """The rounding's true derivative, zero almost everywhere: the encoder learns nothing
    from the reconstruction."""

    breaks = "straight_through"
    passes_gradient = staticmethod(lambda codes, code_step: np.zeros(codes.shape, bool))


class ClipGradientPassedOutside(_StraightThroughBroken):
    """Straight through everywhere, the clip's range ignored: clipped codes still pull on
    the encoder."""

    breaks = "straight_through"
    passes_gradient = staticmethod(lambda codes, code_step: np.ones(codes.shape, bool))


MUTANTS = [
    OpenLoop,
    DecodeTrustsItsInput,
    TiesAwayFromZero,
    NoGradientThroughRounding,
    ClipGradientPassedOutside,
]
