"""Training in float64 NumPy: the loss, its gradient by back-propagation through time written
out, and the contract's SGD and Adam."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from frae import activations, codec
from frae.backend import Moments, TrainStep
from frae.codec import rate
from frae.config import GRU, FRAEConfig
from frae.optimizers import ADAM
from frae.params import Weights
from frae.training_state import TrainingState
from impls.reference.model import Array, GRUTrace, LayerTrace, Params, StepTraces, sigmoid, unroll


def dense_stack_backward(
    params: Params, traces: list[LayerTrace], d_out: Array, grads: Params
) -> Array:
    """Back through one step's layers: adds into ``grads``, returns d loss / d stack input."""
    for trace in reversed(traces):
        d_pre = d_out * activations.activation_slope(
            trace.layer.activation, trace.pre, trace.out, sigmoid, np.ones_like
        )
        grads[trace.layer.kernel] += trace.inputs.T @ d_pre
        grads[trace.layer.bias] += d_pre.sum(axis=0)
        d_out = d_pre @ params[trace.layer.kernel].T
    return d_out


def gru_backward(
    params: Params, gru: GRU, trace: GRUTrace, d_state: Array, grads: Params
) -> tuple[Array, Array]:
    """Back through one GRU step from d loss / d s_t: adds into ``grads``, returns
    (d loss / d z_t, d loss / d s_{t-1} through the GRU)."""
    r, p, n = trace.reset, trace.update, trace.candidate
    d_candidate = d_state * (1.0 - p) * (1.0 - n**2)
    d_update = d_state * (trace.state - n) * p * (1.0 - p)
    c_n = np.split(trace.recurrent, 3, axis=-1)[2]
    d_reset = d_candidate * c_n * r * (1.0 - r)
    d_a = np.concatenate([d_reset, d_update, d_candidate], axis=-1)
    d_c = np.concatenate([d_reset, d_update, d_candidate * r], axis=-1)
    grads[gru.kernel] += trace.code.T @ d_a
    grads[gru.bias] += d_a.sum(axis=0)
    grads[gru.recurrent_kernel] += trace.state.T @ d_c
    grads[gru.recurrent_bias] += d_c.sum(axis=0)
    d_code = d_a @ params[gru.kernel].T
    return d_code, d_state * p + d_c @ params[gru.recurrent_kernel].T


RateTerm = tuple[
    Callable[[Any, Any, Any, float], Any], Callable[[Any, Any, Any, float], rate.Slopes]
]
"""The bits of each code under the prior (μ, ρ, Δ) and their slopes: ``frae.codec.rate``'s."""


def rate_gradients(
    config: FRAEConfig, params: Params, codes: Array, grads: Params, rate_term: RateTerm
) -> tuple[float, Array]:
    """λ·mean over (B, T) of bits_t for the codes ẑ (B, T, L); adds its gradients in μ and ρ
    into ``grads`` and returns it with d (λ·rate) / d ẑ."""
    symbol_bits, slopes = rate_term
    weight, step = float(config.rate_weight or 0.0), float(config.code_step or 0.0)
    location, log_scale = (params[name] for name in config.prior_parameters)
    frames = codes.shape[0] * codes.shape[1]
    rate_loss = weight * float(symbol_bits(codes, location, log_scale, step).sum()) / frames
    slope = slopes(codes, location, log_scale, step)
    per_frame = weight / frames
    for name, value in zip(config.prior_parameters, slope[1:], strict=True):
        grads[name] += per_frame * value.sum(axis=(0, 1))
    return rate_loss, per_frame * slope.code


def loss_and_grads(
    config: FRAEConfig,
    params: Params,
    x: Array,
    y: Array,
    passes_gradient: Callable[[Array, float], npt.NDArray[np.bool_]] = codec.passes_gradient,
    rate_term: RateTerm = (rate.symbol_bits, rate.slopes),
) -> tuple[float, Params]:
    """Mean squared error of ``unroll(x)`` against ``y`` and its exact gradient.

    Back-propagation through time: the gradient reaching x̂_t is the loss's own,
    2(x̂_t - y_t)/(B·T·F), plus what flows back from step t+1 through the feedback rows of
    ``encoder/dense_0/kernel`` (rows F..2F-1) and ``decoder/dense_0/kernel`` (rows L..).
    With state feedback the gradient reaching s_t is the decoder's, plus what flows back from
    step t+1 through the encoder's feedback rows (F..F+H-1) and through the GRU. With a
    code step, d loss / d z_t is d loss / d ẑ_t where ``passes_gradient`` (``|z_t / Δ| ≤ Q``)
    and zero elsewhere. With a rate weight λ the loss adds λ·mean(bits_t), its slopes from
    ``rate_term`` (the bits and their slopes: ``rate_gradients``), which reach z_t through
    the same straight-through pass.
    """
    traces: list[StepTraces] = []
    outputs, codes, _ = unroll(config, params, x, traces=traces)
    error = outputs - y
    loss = float(np.mean(error**2))
    d_outputs = 2.0 * error / error.size
    grads = {name: np.zeros_like(value) for name, value in params.items()}
    d_codes = np.zeros_like(codes)
    if config.rate_weight is not None:
        rate_loss, d_codes = rate_gradients(config, params, codes, grads, rate_term)
        loss += rate_loss
    features, latent, gru = config.input_dim, config.latent_dim, config.gru
    d_feedback = np.zeros((x.shape[0], config.feedback_dim), dtype=outputs.dtype)
    for t in reversed(range(x.shape[1])):
        encoder_traces, decoder_traces, gru_trace = traces[t]
        if gru is None or gru_trace is None:
            d_decoder_in = dense_stack_backward(
                params, decoder_traces, d_outputs[:, t] + d_feedback, grads
            )
            d_code, d_feedback = d_decoder_in[:, :latent], d_decoder_in[:, latent:]
        else:
            d_state = dense_stack_backward(params, decoder_traces, d_outputs[:, t], grads)
            d_code, d_feedback = gru_backward(params, gru, gru_trace, d_state + d_feedback, grads)
        d_code = d_code + d_codes[:, t]
        if config.code_step is not None:  # straight through the rounding, not the clip
            d_code = d_code * passes_gradient(encoder_traces[-1].out, config.code_step)
        d_encoder_in = dense_stack_backward(params, encoder_traces, d_code, grads)
        d_feedback = d_feedback + d_encoder_in[:, features:]
    return loss, grads


def as_float32(moment: Mapping[str, Array]) -> Weights:
    """A moment by canonical name, rounded to float32 (``TrainingState``'s dtype)."""
    with np.errstate(over="ignore"):  # beyond float32: infinite, and refused if resumed from
        return {name: value.astype(np.float32) for name, value in moment.items()}


def train_step(
    config: FRAEConfig, params: Params, optimizer: str, learning_rate: float, start: TrainingState
) -> tuple[TrainStep, Moments]:
    """SGD, w ← w - lr·g, or the contract's Adam, in float64 from ``start``'s step and
    moments; ``params`` is updated in place and each weight rounded to float32, as a float32
    weight would be. Also returns the reader of the moments, rounded to float32."""
    first = {name: np.array(start.m.get(name, 0.0), np.float64) for name in params}
    second = {name: np.array(start.v.get(name, 0.0), np.float64) for name in params}
    count = start.step

    @np.errstate(over="ignore", invalid="ignore")  # a diverging fit raises TrainingDiverged
    def step(x: Array, y: Array) -> float:
        nonlocal count
        loss, grads = loss_and_grads(config, params, x, y)
        count += 1
        for name, grad in grads.items():
            if optimizer == "sgd":
                update = grad
            else:
                first[name] = ADAM.beta_1 * first[name] + (1 - ADAM.beta_1) * grad
                second[name] = ADAM.beta_2 * second[name] + (1 - ADAM.beta_2) * grad**2
                m_hat = first[name] / (1 - ADAM.beta_1**count)
                v_hat = second[name] / (1 - ADAM.beta_2**count)
                update = m_hat / (np.sqrt(v_hat) + ADAM.epsilon)
            updated = params[name] - learning_rate * update
            params[name] = updated.astype(np.float32).astype(np.float64)
        return loss

    def moments() -> tuple[Weights, Weights]:
        if optimizer == "sgd":
            return {}, {}
        return as_float32(first), as_float32(second)

    return step, moments
