"""The floor's time loops around one step, forward and back-propagation through time, for
both feedbacks, and Adam on the flat weights: every loop of one config, compiled."""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from bench.baselines.layout import Plan, plan
from bench.baselines.numba_floor.gru import gru_backward, gru_forward
from bench.baselines.numba_floor.layers import (
    Kernel,
    activation,
    compiled,
    dense_backward,
    dense_forward,
    in_turn,
    inlined,
)
from frae.config import FRAEConfig


class Kernels(NamedTuple):
    """The compiled loops of one config and dtype (see ``kernels``)."""

    forward: Kernel
    """``(inputs, initial, codes_given, theta, work, slopes, outputs, codes, final)``: x̂, z
    and the feedback after the last step, from the feedback ``initial`` entering the first."""
    forward_recorded: Kernel
    """The same, keeping every step's slopes for ``backward``."""
    backward: Kernel
    """``(work, slopes, outputs, targets, scale, theta, delta, carry, lanes, loss)``."""
    adam: Kernel
    """``(theta, grads, m, v, rate, β₁, β₂, ε, t)``, in place."""


def _forward(layout: Plan, encoder: Kernel, middle: Kernel, decoder: Kernel) -> Kernel:
    """The time loop around one step: the ``encoder`` layers, the ``middle`` (the GRU with
    state feedback), the ``decoder`` layers; what the step feeds back (x̂_t or s_t) copied
    into the next step's feedback rows."""
    features, latent = layout.features, layout.latent
    code_row, output_row = layout.code_row, layout.output_row
    fed, width, targets = layout.fed_back_row, layout.feedback_width, layout.feedback_rows

    @compiled
    def forward(inputs, initial, codes_given, theta, work, slopes, outputs, codes, final):  # type: ignore[no-untyped-def]
        """Step the recurrence from ``initial`` over time-major ``inputs`` (T, width, B), x or
        with ``codes_given`` z; ``work`` and ``slopes`` are (S, rows, B), S = T kept for the
        backward pass or S = 1 reused. Writes ``outputs``, ``codes`` and ``final``.
        """
        steps, inputs_width, batch = inputs.shape
        span = work.shape[0]
        input_row = code_row if codes_given else 0
        for t in range(steps):
            h = work[t % span]
            previous = work[(t - 1) % span]
            for i in range(width):
                for target in targets:
                    for b in range(batch):
                        h[target + i, b] = previous[fed + i, b] if t > 0 else initial[b, i]
            for w in range(inputs_width):
                for b in range(batch):
                    h[input_row + w, b] = inputs[t, w, b]
            if not codes_given:
                encoder(h, slopes[t % span], theta)
            middle(h, theta)
            decoder(h, slopes[t % span], theta)
            for f in range(features):
                for b in range(batch):
                    outputs[t, f, b] = h[output_row + f, b]
            for c in range(latent):
                for b in range(batch):
                    codes[t, c, b] = h[code_row + c, b]
        last = work[(steps - 1) % span]
        for i in range(width):
            for b in range(batch):
                final[b, i] = last[fed + i, b]

    return forward


@inlined
def _nothing(h, theta):  # type: ignore[no-untyped-def]
    """The middle of a step with output feedback: nothing between encoder and decoder."""


def _backward(layout: Plan, layers: Kernel, zero: Any) -> Kernel:
    """Back-propagation through time around one step's ``layers`` (in reverse order)."""
    features, output_row = layout.features, layout.output_row
    feedback_a, feedback_d = layout.feedback_rows

    @compiled
    def backward(work, slopes, outputs, targets, scale, theta, delta, carry, lanes, loss):  # type: ignore[no-untyped-def]
        """Gradient of mean((x̂ - y)²) after a recorded forward: the gradient reaching x̂_t is
        scale·(x̂_t - y_t), scale = 2/(B·T·F), plus ``carry`` from step t+1 through both
        feedback blocks; ``lanes`` (weights, B) and ``loss`` (B,) accumulate per batch lane.
        """
        steps, _, batch = outputs.shape
        lanes[:, :] = zero
        carry[:, :] = zero
        loss[:] = 0.0
        for t in range(steps - 1, -1, -1):
            delta[:, :] = zero
            for f in range(features):
                for b in range(batch):
                    error = outputs[t, f, b] - targets[t, f, b]
                    loss[b] += error * error
                    delta[output_row + f, b] = scale * error + carry[f, b]
            layers(work[t], slopes[t], delta, lanes, theta)
            for f in range(features):
                for b in range(batch):
                    carry[f, b] = delta[feedback_a + f, b] + delta[feedback_d + f, b]

    return backward


def _state_backward(
    layout: Plan, decoder: Kernel, gru: Kernel, encoder: Kernel, zero: Any
) -> Kernel:
    """``_backward`` with state feedback: through the ``decoder`` layers to s_t, where
    ``carry`` (d loss/d s_t from step t+1) joins, through the ``gru`` and the ``encoder``
    layers; the new ``carry`` is what reached s_{t-1} through both."""
    assert layout.gru is not None
    features, output_row, state = layout.features, layout.output_row, layout.gru.state
    previous, new = layout.gru.previous_row, layout.gru.state_row

    @compiled
    def backward(work, slopes, outputs, targets, scale, theta, delta, carry, lanes, loss):  # type: ignore[no-untyped-def]
        """``_backward``'s arguments and results; ``carry`` is (H, B)."""
        steps, _, batch = outputs.shape
        lanes[:, :] = zero
        carry[:, :] = zero
        loss[:] = 0.0
        for t in range(steps - 1, -1, -1):
            delta[:, :] = zero
            for f in range(features):
                for b in range(batch):
                    error = outputs[t, f, b] - targets[t, f, b]
                    loss[b] += error * error
                    delta[output_row + f, b] = scale * error
            decoder(work[t], slopes[t], delta, lanes, theta)
            for i in range(state):
                for b in range(batch):
                    delta[new + i, b] += carry[i, b]
            gru(work[t], delta, lanes, theta)
            encoder(work[t], slopes[t], delta, lanes, theta)
            for i in range(state):
                for b in range(batch):
                    carry[i, b] = delta[previous + i, b]

    return backward


@compiled
def _adam(theta, grads, first, second, rate, beta_1, beta_2, epsilon, count):  # type: ignore[no-untyped-def]
    """The contract's Adam, ε outside the root: w ← w − lr·m̂/(√v̂ + ε) at step ``count``."""
    beta_1_power, beta_2_power = beta_1**count, beta_2**count
    for p in range(theta.shape[0]):
        first[p] = beta_1 * first[p] + (1.0 - beta_1) * grads[p]
        second[p] = beta_2 * second[p] + (1.0 - beta_2) * grads[p] * grads[p]
        m_hat = first[p] / (1.0 - beta_1_power)
        v_hat = second[p] / (1.0 - beta_2_power)
        theta[p] = theta[p] - rate * m_hat / (math.sqrt(v_hat) + epsilon)


@functools.cache
def kernels(config: FRAEConfig, dtype_name: str) -> Kernels:
    """The loops of ``config`` in ``dtype_name``, compiled at their first call; constants are
    scalars of that dtype, so a float32 kernel never widens to float64."""
    dtype = np.dtype(dtype_name).type
    layout = plan(config)
    zero, one = dtype(0.0), dtype(1.0)
    activate = activation(one)
    split, gru = layout.encoder_layers, layout.gru
    middle = _nothing if gru is None else gru_forward(gru, layout.latent, layout.code_row, one)

    def loop(record: bool) -> Kernel:
        layers = [dense_forward(layer, record, activate) for layer in layout.layers]
        return _forward(layout, in_turn(layers[:split], 3), middle, in_turn(layers[split:], 3))

    backward = [dense_backward(layer) for layer in layout.layers]
    if gru is None:
        back = _backward(layout, in_turn(backward[::-1], 5), zero)
    else:
        back = _state_backward(
            layout,
            in_turn(backward[split:][::-1], 5),
            gru_backward(gru, layout.latent, layout.code_row, one),
            in_turn(backward[:split][::-1], 5),
            zero,
        )
    return Kernels(
        forward=loop(record=False), forward_recorded=loop(record=True), backward=back, adam=_adam
    )
