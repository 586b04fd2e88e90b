"""The FRAE recurrence in float64 NumPy: the cell and the time loop.

``params`` maps canonical names to float64 arrays; sequences are batch-major ``(B, T, ·)``
at ``unroll``'s edges and stepped through time one ``(B, ·)`` slice at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from frae.config import FRAEConfig, Layer

Array = npt.NDArray[np.float64]
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


StepTraces = tuple[list[LayerTrace], list[LayerTrace]]
"""One time step's encoder and decoder layer traces."""


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
    traces: list[StepTraces] | None = None,
) -> tuple[Array, Array]:
    """Step the recurrence from x̂₀ = 0; returns ``(x̂, z)``, each ``(B, T, ·)``.

    ``weights`` are float64 arrays by canonical name; ``sequences`` is x, from which the
    encoder makes each code from ``[x_t, x̂_{t-1}]``; or, with ``codes_given``, the codes z
    for the decoder alone (``decode``). ``traces``, when a list, receives each step's layer
    traces for back-propagation through time.
    """
    batch, steps, _ = sequences.shape
    dtype = sequences.dtype  # float64 in the reference; float32 for a float32 yardstick
    encoder, decoder = config.encoder_layers, config.decoder_layers  # built once, not per step
    feedback = np.zeros((batch, config.input_dim), dtype)
    outputs = np.empty((batch, steps, config.input_dim), dtype)
    codes = np.empty((batch, steps, config.latent_dim), dtype)
    for t in range(steps):
        encoder_trace, decoder_trace = (None, None) if traces is None else ([], [])
        if codes_given:
            code = sequences[:, t]
        else:
            encoder_input = np.concatenate([sequences[:, t], feedback], axis=1)
            code = dense_stack(weights, encoder, encoder_input, encoder_trace)
        decoder_input = np.concatenate([code, feedback], axis=1)
        feedback = dense_stack(weights, decoder, decoder_input, decoder_trace)
        codes[:, t] = code
        outputs[:, t] = feedback
        if traces is not None and encoder_trace is not None and decoder_trace is not None:
            traces.append((encoder_trace, decoder_trace))
    return outputs, codes
