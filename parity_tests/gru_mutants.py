"""Mutants of the state-feedback model's GRU, one realistic mistake each (see
``parity_tests.mutants``)."""

from __future__ import annotations

import numpy as np

from frae.backend import Array
from frae.config import GRU
from impls.reference.model import GRUTrace, Params, gru_step, sigmoid
from parity_tests.mutants import Float32Reference, float32_unroll


def _reset_before_recurrent_product(
    params: Params, gru: GRU, code: Array, state: Array
) -> tuple[Array, None]:
    """Keras' ``reset_after=False``: n = tanh(a_n + (r ⊙ s_{t-1}) @ U_n + b_Un)."""
    a = code @ params[gru.kernel] + params[gru.bias]
    c = state @ params[gru.recurrent_kernel] + params[gru.recurrent_bias]
    width = gru.state_dim
    reset = sigmoid(a[:, :width] + c[:, :width])
    update = sigmoid(a[:, width : 2 * width] + c[:, width : 2 * width])
    recurrent_n = params[gru.recurrent_kernel][:, 2 * width :]
    candidate = np.tanh(
        a[:, 2 * width :] + (reset * state) @ recurrent_n + params[gru.recurrent_bias][2 * width :]
    )
    return (1.0 - update) * candidate + update * state, None


def _update_gate_inverted(
    params: Params, gru: GRU, code: Array, state: Array
) -> tuple[Array, GRUTrace]:
    """s_t = p ⊙ n + (1 − p) ⊙ s_{t-1}: the update gate's two sides exchanged."""
    trace = gru_step(params, gru, code, state)[1]
    return trace.update * trace.candidate + (1.0 - trace.update) * state, trace


def _input_carry_returned(
    params: Params, gru: GRU, code: Array, state: Array
) -> tuple[Array, GRUTrace]:
    """s_{t-1} where s_t belongs: the state from before the step is fed back and carried."""
    return state, gru_step(params, gru, code, state)[1]


class ResetBeforeRecurrentProduct(Float32Reference):
    """The GRU applies its reset gate to s_{t-1} before the recurrent product (Keras'
    ``reset_after=False``), not after it as the contract's GRU does."""

    breaks = "outputs"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        cell = _reset_before_recurrent_product
        return float32_unroll(self.config, self.params, x, state, cell=cell)


class UpdateGateInverted(Float32Reference):
    """The GRU keeps the candidate where the update gate is open: h' = u⊙n + (1−u)⊙h."""

    breaks = "decoder"

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        cell = _update_gate_inverted
        return float32_unroll(self.config, self.params, z, state, cell=cell, codes_given=True)


class StateFedBackFromBeforeGRU(Float32Reference):
    """The state fed back to the encoder (and carried on) is the one from before the GRU's
    step, s_{t-1}, not its new state s_t: a cell that returns its input carry."""

    breaks = "codes"

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        _, codes, last = self._unroll(x, state, cell=_input_carry_returned)
        return codes.astype(np.float32), last.astype(np.float32)


MUTANTS = [ResetBeforeRecurrentProduct, UpdateGateInverted, StateFedBackFromBeforeGRU]
