"""Mutants of the state-feedback model's GRU, one realistic mistake each (see
``parity_tests.mutants``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from frae.backend import Array
from frae.config import GRU, FRAEConfig
from impls.reference.model import Params, dense_stack, gru_step, sigmoid
from parity_tests.mutants import Float32Reference

GRUCell = Callable[[Params, GRU, Array, Array], Array]
"""z_t, s_{t-1} -> s_t, with the GRU's canonical weights."""


def _reset_before_recurrent_product(params: Params, gru: GRU, code: Array, state: Array) -> Array:
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
    return (1.0 - update) * candidate + update * state


def _update_gate_inverted(params: Params, gru: GRU, code: Array, state: Array) -> Array:
    """s_t = p ⊙ n + (1 − p) ⊙ s_{t-1}: the update gate's two sides exchanged."""
    trace = gru_step(params, gru, code, state)[1]
    return trace.update * trace.candidate + (1.0 - trace.update) * state


def _canonical_cell(params: Params, gru: GRU, code: Array, state: Array) -> Array:
    return gru_step(params, gru, code, state)[0]


def _state_unroll(
    config: FRAEConfig,
    params: Params,
    sequences: Array,
    state: Array,
    *,
    cell: GRUCell = _canonical_cell,
    codes_given: bool = False,
    carry_new_state: bool = True,
) -> tuple[Array, Array, Array]:
    """The state-feedback recurrence with ``cell`` for the GRU from ``state``, float32 out:
    ``(x̂, z, s_T)``; without ``carry_new_state``, ``state`` is fed back throughout."""
    assert config.gru is not None
    outputs, codes = [], []
    for t in range(sequences.shape[1]):
        code = (
            sequences[:, t]
            if codes_given
            else dense_stack(
                params, config.encoder_layers, np.concatenate([sequences[:, t], state], 1), None
            )
        )
        new_state = cell(params, config.gru, code, state)
        outputs.append(dense_stack(params, config.decoder_layers, new_state, None))
        codes.append(code)
        state = new_state if carry_new_state else state
    stacked = np.stack(outputs, 1), np.stack(codes, 1), state
    return tuple(value.astype(np.float32) for value in stacked)  # type: ignore[return-value]


class ResetBeforeRecurrentProduct(Float32Reference):
    """The GRU applies its reset gate to s_{t-1} before the recurrent product (Keras'
    ``reset_after=False``), not after it as the contract's GRU does."""

    breaks = "outputs"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        if self.config.gru is None:
            return super()._predict(x, state)
        outputs, _, last = _state_unroll(
            self.config, self.params, x, state, cell=_reset_before_recurrent_product
        )
        return outputs, last


class UpdateGateInverted(Float32Reference):
    """The GRU keeps the candidate where the update gate is open: h' = u⊙n + (1−u)⊙h."""

    breaks = "decoder"

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        if self.config.gru is None:
            return super()._decode(z, state)
        outputs, _, last = _state_unroll(
            self.config, self.params, z, state, cell=_update_gate_inverted, codes_given=True
        )
        return outputs, last


class StateFedBackFromBeforeGRU(Float32Reference):
    """The state fed back to the encoder (and carried on) is the one from before the GRU's
    step, s_{t-1}, not its new state s_t: a cell that returns its input carry."""

    breaks = "codes"

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        if self.config.gru is None:
            return super()._encode(x, state)
        _, codes, last = _state_unroll(self.config, self.params, x, state, carry_new_state=False)
        return codes, last


MUTANTS = [ResetBeforeRecurrentProduct, UpdateGateInverted, StateFedBackFromBeforeGRU]
