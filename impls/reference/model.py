"""The FRAE recurrence and its back-propagation through time, in float64 NumPy.

``params`` maps canonical names to float64 arrays; sequences are batch-major ``(B, T, ·)``
at these functions' edges and stepped through time one ``(B, ·)`` slice at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from frae.config import FRAEConfig

Array = npt.NDArray[np.float64]
Params = dict[str, Array]


def activate(name: str, pre: Array) -> Array:
    """swish(a) = a·sigmoid(a), tanh, sigmoid or the identity."""
    if name == "swish":
        return pre * _sigmoid(pre)
    if name == "tanh":
        return np.tanh(pre)
    if name == "sigmoid":
        return _sigmoid(pre)
    return pre


def activation_slope(name: str, pre: Array, out: Array) -> Array:
    """d act(a) / da, from the pre-activation ``a`` and the output ``act(a)``."""
    if name == "swish":
        s = _sigmoid(pre)
        return s * (1.0 + pre * (1.0 - s))
    if name == "tanh":
        return 1.0 - out**2
    if name == "sigmoid":
        return out * (1.0 - out)
    return np.ones_like(pre)


def _sigmoid(pre: Array) -> Array:
    return 0.5 * (1.0 + np.tanh(0.5 * pre))  # no overflow for large |a|


@dataclass
class LayerTrace:
    """What one dense layer saw and made at one step, kept for the backward pass."""

    name: str
    activation: str
    inputs: Array
    pre: Array
    out: Array


def _dense_stack(
    params: Params, layers: list[tuple[str, str]], h: Array, traces: list[LayerTrace] | None
) -> Array:
    for name, activation in layers:
        pre = h @ params[f"{name}/kernel"] + params[f"{name}/bias"]
        out = activate(activation, pre)
        if traces is not None:
            traces.append(LayerTrace(name, activation, h, pre, out))
        h = out
    return h


def _dense_stack_backward(
    params: Params, traces: list[LayerTrace], d_out: Array, grads: Params
) -> Array:
    for trace in reversed(traces):
        d_pre = d_out * activation_slope(trace.activation, trace.pre, trace.out)
        grads[f"{trace.name}/kernel"] += trace.inputs.T @ d_pre
        grads[f"{trace.name}/bias"] += d_pre.sum(axis=0)
        d_out = d_pre @ params[f"{trace.name}/kernel"].T
    return d_out


def _layers(config: FRAEConfig) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    encoder = [(name, config.activation) for name, _ in config.encoder_layers]
    decoder = [(name, config.activation) for name, _ in config.decoder_layers]
    decoder[-1] = (decoder[-1][0], config.output_activation)
    return encoder, decoder


def run(
    params: Params,
    config: FRAEConfig,
    x: Array | None = None,
    z: Array | None = None,
    traces: list[tuple[list[LayerTrace], list[LayerTrace]]] | None = None,
) -> tuple[Array, Array]:
    """Step the recurrence from x̂₀ = 0; returns ``(x̂, z)``, each ``(B, T, ·)``.

    Given ``x``, the encoder makes each code from ``[x_t, x̂_{t-1}]``; given ``z`` instead,
    the decoder alone runs on those codes (``decode``). ``traces``, when a list, receives each
    step's encoder and decoder layer traces for ``loss_and_grads``.
    """
    encoder, decoder = _layers(config)
    driver = x if x is not None else z
    assert driver is not None
    batch, steps, _ = driver.shape
    feedback = np.zeros((batch, config.input_dim))
    outputs = np.empty((batch, steps, config.input_dim))
    codes = np.empty((batch, steps, config.latent_dim))
    for t in range(steps):
        encoder_trace: list[LayerTrace] | None = None if traces is None else []
        decoder_trace: list[LayerTrace] | None = None if traces is None else []
        if x is not None:
            encoder_input = np.concatenate([x[:, t], feedback], axis=1)
            code = _dense_stack(params, encoder, encoder_input, encoder_trace)
        else:
            code = driver[:, t]
        decoder_input = np.concatenate([code, feedback], axis=1)
        feedback = _dense_stack(params, decoder, decoder_input, decoder_trace)
        codes[:, t] = code
        outputs[:, t] = feedback
        if traces is not None:
            assert encoder_trace is not None and decoder_trace is not None
            traces.append((encoder_trace, decoder_trace))
    return outputs, codes


def loss_and_grads(params: Params, config: FRAEConfig, x: Array, y: Array) -> tuple[float, Params]:
    """Mean squared error of ``predict(x)`` against ``y`` and its exact gradient.

    Back-propagation through time: the gradient reaching x̂_t is the loss's own,
    2(x̂_t - y_t)/(B·T·F), plus what flows back from step t+1 through the feedback rows of
    ``encoder/dense_0/kernel`` (rows F..2F-1) and ``decoder/dense_0/kernel`` (rows L..).
    """
    traces: list[tuple[list[LayerTrace], list[LayerTrace]]] = []
    outputs, _ = run(params, config, x=x, traces=traces)
    error = outputs - y
    loss = float(np.mean(error**2))
    d_outputs = 2.0 * error / error.size
    grads = {name: np.zeros_like(value) for name, value in params.items()}
    features, latent = config.input_dim, config.latent_dim
    d_feedback = np.zeros_like(outputs[:, 0])
    for t in reversed(range(x.shape[1])):
        encoder_traces, decoder_traces = traces[t]
        d_decoder_in = _dense_stack_backward(
            params, decoder_traces, d_outputs[:, t] + d_feedback, grads
        )
        d_encoder_in = _dense_stack_backward(
            params, encoder_traces, d_decoder_in[:, :latent], grads
        )
        d_feedback = d_decoder_in[:, latent:] + d_encoder_in[:, features:]
    return loss, grads
