"""The FRAE recurrence in float64 NumPy: the cell and the time loop, for either feedback.

``params`` maps canonical names to float64 arrays; sequences are batch-major ``(B, T, ·)``
at ``unroll``'s edges and stepped through time one ``(B, ·)`` slice at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from frae import quantization
from frae.config import GRU, FRAEConfig, Layer

Array = npt.NDArray[np.floating[Any]]
"""float64 in the reference; float32 when a float32 yardstick runs the same steps."""
Params = dict[str, Array]


def sigmoid(pre: Array) -> Array:
    return 0.5 * (1.0 + np.tanh(0.5 * pre))  # no overflow for large |a|


def activate(name: str, pre: Array) -> Array:
    """swish(a) = a·sigmoid(a), tanh, sigmoid or the identity."""
    if name == "swish":
        return pre * sigmoid(pre)
    if name == "tanh":
        return np.tanh(pre)
    if name == "sigmoid":
        return sigmoid(pre)
    return pre


@dataclass
class LayerTrace:
    """What one dense layer saw and made at one step, kept for the backward pass."""

    layer: Layer
    inputs: Array
    pre: Array
    out: Array


@dataclass
class GRUTrace:
    """What the GRU saw and made at one step: its input z_t, the state s_{t-1}, the
    recurrent product c (bias included) and the gates r, p and candidate n."""

    code: Array
    state: Array
    recurrent: Array
    reset: Array
    update: Array
    candidate: Array


StepTraces = tuple[list[LayerTrace], list[LayerTrace], GRUTrace | None]
"""One time step's encoder and decoder layer traces, and its GRU's with state feedback."""


def gru_step(params: Params, gru: GRU, code: Array, state: Array) -> tuple[Array, GRUTrace]:
    """s_t from z_t and s_{t-1}: gate blocks [reset | update | candidate], the reset gate
    applied to the recurrent product after its bias (the contract's "State feedback")."""
    a = code @ params[gru.kernel] + params[gru.bias]
    c = state @ params[gru.recurrent_kernel] + params[gru.recurrent_bias]
    a_r, a_p, a_n = np.split(a, 3, axis=-1)
    c_r, c_p, c_n = np.split(c, 3, axis=-1)
    reset, update = sigmoid(a_r + c_r), sigmoid(a_p + c_p)
    candidate = np.tanh(a_n + reset * c_n)
    new_state = (1.0 - update) * candidate + update * state
    return new_state, GRUTrace(code, state, c, reset, update, candidate)


GRUCell = Callable[[Params, GRU, Array, Array], tuple[Array, GRUTrace | None]]
"""z_t, s_{t-1} -> (s_t, its trace or ``None``), with the GRU's canonical weights."""


def dense_stack(
    params: Params, layers: Iterable[Layer], h: Array, traces: list[LayerTrace] | None
) -> Array:
    """``h ← act(h @ kernel + bias)`` for each layer, each recorded in ``traces`` if given."""
    for layer in layers:
        pre = h @ params[layer.kernel] + params[layer.bias]
        out = activate(layer.activation, pre)
        if traces is not None:
            traces.append(LayerTrace(layer, h, pre, out))
        h = out
    return h


def unroll(
    config: FRAEConfig,
    weights: Params,
    sequences: Array,
    *,
    codes_given: bool = False,
    state: Array | None = None,
    traces: list[StepTraces] | None = None,
    cell: GRUCell = gru_step,
    quantize: Callable[[Array, float], Array] = quantization.quantize,
) -> tuple[Array, Array, Array]:
    """Step the recurrence from ``state`` (zeros for ``None``) over x, or with ``codes_given``
    over the codes z for the decoder alone, each code quantized if the config says so;
    ``traces``, when a list, receives each step's layer traces for back-propagation through
    time; ``cell`` steps the GRU and ``quantize`` rounds a code to the grid of Δ.

    Returns:
        ``(x̂, z, feedback)``: x̂ and z each ``(B, T, ·)``, and x̂_T (or s_T) ``(B, S)``.
    """
    batch, steps, _ = sequences.shape
    dtype = sequences.dtype  # float64 in the reference; float32 for a float32 yardstick
    encoder, decoder = config.encoder_layers, config.decoder_layers  # built once, not per step
    gru = config.gru
    feedback = (
        np.zeros((batch, config.feedback_dim), dtype) if state is None else state.astype(dtype)
    )
    outputs = np.empty((batch, steps, config.input_dim), dtype)
    codes = np.empty((batch, steps, config.latent_dim), dtype)
    for t in range(steps):
        encoder_trace: list[LayerTrace] | None = None if traces is None else []
        decoder_trace: list[LayerTrace] | None = None if traces is None else []
        if codes_given:
            code = sequences[:, t]
        else:
            encoder_input = np.concatenate([sequences[:, t], feedback], axis=1)
            code = dense_stack(weights, encoder, encoder_input, encoder_trace)
        if config.code_step is not None:
            code = quantize(code, config.code_step)
        gru_trace = None
        if gru is None:
            decoder_input = np.concatenate([code, feedback], axis=1)
            feedback = output = dense_stack(weights, decoder, decoder_input, decoder_trace)
        else:
            feedback, gru_trace = cell(weights, gru, code, feedback)
            output = dense_stack(weights, decoder, feedback, decoder_trace)
        codes[:, t] = code
        outputs[:, t] = output
        if traces is not None and encoder_trace is not None and decoder_trace is not None:
            traces.append((encoder_trace, decoder_trace, gru_trace))
    return outputs, codes, feedback
