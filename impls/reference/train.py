"""Training in float64 NumPy: the loss, its gradient by back-propagation through time written
out, and the contract's SGD and Adam."""

from __future__ import annotations

import numpy as np

from frae.backend import TrainStep
from frae.config import FRAEConfig
from frae.optimizers import ADAM
from impls.reference.model import Array, LayerTrace, Params, StepTraces, sigmoid, unroll


def activation_slope(name: str, pre: Array, out: Array) -> Array:
    """d act(a) / da, from the pre-activation ``a`` and the output ``act(a)``."""
    if name == "swish":
        s = sigmoid(pre)
        return s * (1.0 + pre * (1.0 - s))
    if name == "tanh":
        return 1.0 - out**2
    if name == "sigmoid":
        return out * (1.0 - out)
    return np.ones_like(pre)


def dense_stack_backward(
    params: Params, traces: list[LayerTrace], d_out: Array, grads: Params
) -> Array:
    """Back through one step's layers: adds into ``grads``, returns d loss / d stack input."""
    for trace in reversed(traces):
        d_pre = d_out * activation_slope(trace.layer.activation, trace.pre, trace.out)
        grads[trace.layer.kernel] += trace.inputs.T @ d_pre
        grads[trace.layer.bias] += d_pre.sum(axis=0)
        d_out = d_pre @ params[trace.layer.kernel].T
    return d_out


def loss_and_grads(config: FRAEConfig, params: Params, x: Array, y: Array) -> tuple[float, Params]:
    """Mean squared error of ``unroll(x)`` against ``y`` and its exact gradient.

    Back-propagation through time: the gradient reaching x̂_t is the loss's own,
    2(x̂_t - y_t)/(B·T·F), plus what flows back from step t+1 through the feedback rows of
    ``encoder/dense_0/kernel`` (rows F..2F-1) and ``decoder/dense_0/kernel`` (rows L..).
    """
    traces: list[StepTraces] = []
    outputs, _ = unroll(config, params, x, traces=traces)
    error = outputs - y
    loss = float(np.mean(error**2))
    d_outputs = 2.0 * error / error.size
    grads = {name: np.zeros_like(value) for name, value in params.items()}
    features, latent = config.input_dim, config.latent_dim
    d_feedback = np.zeros_like(outputs[:, 0])
    for t in reversed(range(x.shape[1])):
        encoder_traces, decoder_traces = traces[t]
        d_decoder_in = dense_stack_backward(
            params, decoder_traces, d_outputs[:, t] + d_feedback, grads
        )
        d_encoder_in = dense_stack_backward(params, encoder_traces, d_decoder_in[:, :latent], grads)
        d_feedback = d_decoder_in[:, latent:] + d_encoder_in[:, features:]
    return loss, grads


def train_step(
    config: FRAEConfig, params: Params, optimizer: str, learning_rate: float
) -> TrainStep:
    """SGD, w ← w - lr·g, or the contract's Adam, in float64 with fresh state; ``params`` is
    updated in place and each weight rounded to float32, as a float32 weight would be."""
    first = {name: np.zeros_like(value) for name, value in params.items()}
    second = {name: np.zeros_like(value) for name, value in params.items()}
    count = 0

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

    return step
