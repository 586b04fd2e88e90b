"""The native floor: the FRAE forward and back-propagation through time, compiled by Numba.

Written as a performance engineer would write it by hand, for any ``FRAEConfig``:

- one time step lives in a ``(rows, B)`` workspace laid out by ``layout.plan``; a
  layer reads one block of rows and writes the next;
- every size is a compile-time constant: each layer is a small function with its sizes
  frozen in (Numba treats closure values as constants), inlined into one step, so the
  compiler unrolls and vectorizes as it would code written for that one config;
- the batch is the innermost, contiguous axis, so every multiply-add loop runs over B lanes
  and vectorizes; the weights are one flat vector in canonical order;
- every array is allocated once per input shape and reused; nothing is allocated in the
  time loop; each weight's gradient accumulates per batch lane (an elementwise add, which
  vectorizes without reassociating) and the lanes are summed once at the end;
- ``fastmath`` is off: IEEE arithmetic in the arrays' dtype (float32 for the benchmark,
  float64 for the exactness test against the reference). ``error_model="numpy"`` only drops
  the zero-divisor test that Python semantics put before every division.

With state feedback (contract section 1b) the step runs the GRU between the encoder and the
decoder (``_gru_forward``, ``_gru_backward``), with a time loop of its own that feeds back
s_t (``_state_forward``, ``_state_backward``); a model with output feedback never reaches them.

``NumbaFloorBackend`` puts the kernels behind the contract, so the harness times it as
it times every framework: through ``predict``, ``loss_and_grads`` and ``fit``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numba
import numpy as np
import numpy.typing as npt

from bench.baselines.layout import GRUPlan, Layer, Plan, flatten, plan, unflatten
from frae.backend import Array, BaseBackend, TrainStep, kept_slot
from frae.config import FRAEConfig
from frae.optimizers import ADAM
from frae.params import Weights

Kernel = Callable[..., Any]


def _compiled(function: Callable[..., Any]) -> Kernel:
    """``numba.njit`` with NumPy's error model (no zero-divisor test before each division)."""
    return numba.njit(error_model="numpy")(function)


def _inlined(function: Callable[..., Any]) -> Kernel:
    """``_compiled``, and inlined into its callers by Numba itself."""
    return numba.njit(inline="always", error_model="numpy")(function)


class Kernels(NamedTuple):
    """The compiled loops of one config and dtype (see ``kernels``)."""

    forward: Kernel
    """``(inputs, codes_given, theta, work, slopes, outputs, codes)``: x̂ and z."""
    forward_recorded: Kernel
    """The same, keeping every step's slopes for ``backward``."""
    backward: Kernel
    """``(work, slopes, outputs, targets, scale, theta, delta, carry, lanes, loss)``."""
    adam: Kernel
    """``(theta, grads, m, v, rate, β₁, β₂, ε, t)``, in place."""


def _activation(one: Any) -> Kernel:
    """``activate(kind, a) -> (act(a), act'(a))`` with constants of ``one``'s dtype."""

    @_inlined
    def activate(kind, pre):  # type: ignore[no-untyped-def]
        """swish a·σ(a), tanh, sigmoid σ(a) = 1/(1 + e^-a), linear; and their slopes."""
        if kind == 0:
            s = one / (one + math.exp(-pre))
            return pre * s, s * (one + pre * (one - s))
        if kind == 1:
            out = math.tanh(pre)
            return out, one - out * out
        if kind == 2:
            s = one / (one + math.exp(-pre))
            return s, s * (one - s)
        return pre, one

    return activate


def _dense_forward(layer: Layer, record: bool, activate: Kernel) -> Kernel:
    """One layer at one step: h[out] = act(h[in] @ W + b), slopes kept if ``record``."""
    in_row, fan_in, out_row, units, kernel, bias, kind = layer

    @_inlined
    def dense(h, slopes, theta):  # type: ignore[no-untyped-def]
        batch = h.shape[1]
        for j in range(units):
            o = out_row + j
            for b in range(batch):
                h[o, b] = theta[bias + j]
            for i in range(fan_in):
                weight = theta[kernel + i * units + j]
                for b in range(batch):
                    h[o, b] += weight * h[in_row + i, b]
            for b in range(batch):
                out, slope = activate(kind, h[o, b])
                h[o, b] = out
                if record:
                    slopes[o, b] = slope

    return dense


def _dense_backward(layer: Layer) -> Kernel:
    """One layer's backward at one step.

    ``delta`` holds d loss/d row. The layer turns its output rows into d loss/d pre-activation
    (times the recorded slope), adds them into its weights' per-lane gradients, and passes
    them back through the kernel to its input rows.
    """
    in_row, fan_in, out_row, units, kernel, bias, _ = layer

    @_inlined
    def dense(h, slopes, delta, lanes, theta):  # type: ignore[no-untyped-def]
        batch = h.shape[1]
        for j in range(units):
            o = out_row + j
            for b in range(batch):
                delta[o, b] *= slopes[o, b]
                lanes[bias + j, b] += delta[o, b]
            for i in range(fan_in):
                p = kernel + i * units + j
                weight = theta[p]
                for b in range(batch):
                    lanes[p, b] += h[in_row + i, b] * delta[o, b]
                    delta[in_row + i, b] += weight * delta[o, b]

    return dense


def _gru_forward(gru: GRUPlan, latent: int, code_row: int, one: Any) -> Kernel:
    """The GRU at one step, for every lane: from z_t and s_{t-1}, the gates

        r = σ(z K_r + b_K,r + s U_r + b_U,r),  p = σ(z K_p + b_K,p + s U_p + b_U,p),
        c_n = s U_n + b_U,n,  n = tanh(z K_n + b_K,n + r ⊙ c_n),  s_t = (1 − p) ⊙ n + p ⊙ s

    kept in the gate rows (r, p, n, c_n) for the backward pass, and s_t."""
    state, previous, gates, new = gru.state, gru.previous_row, gru.gate_row, gru.state_row
    kernel, recurrent, bias, recurrent_bias = (
        gru.kernel,
        gru.recurrent_kernel,
        gru.bias,
        gru.recurrent_bias,
    )
    width = 3 * state

    @_inlined
    def step(h, theta):  # type: ignore[no-untyped-def]
        batch = h.shape[1]
        for j in range(state):
            r, p, n, c = gates + j, gates + state + j, gates + 2 * state + j, gates + 3 * state + j
            for b in range(batch):
                h[r, b] = theta[bias + j] + theta[recurrent_bias + j]
                h[p, b] = theta[bias + state + j] + theta[recurrent_bias + state + j]
                h[n, b] = theta[bias + 2 * state + j]
                h[c, b] = theta[recurrent_bias + 2 * state + j]
            for i in range(latent):
                at = kernel + i * width + j
                k_r, k_p, k_n = theta[at], theta[at + state], theta[at + 2 * state]
                for b in range(batch):
                    z = h[code_row + i, b]
                    h[r, b] += k_r * z
                    h[p, b] += k_p * z
                    h[n, b] += k_n * z
            for i in range(state):
                at = recurrent + i * width + j
                u_r, u_p, u_n = theta[at], theta[at + state], theta[at + 2 * state]
                for b in range(batch):
                    fed = h[previous + i, b]
                    h[r, b] += u_r * fed
                    h[p, b] += u_p * fed
                    h[c, b] += u_n * fed
            for b in range(batch):
                reset = one / (one + math.exp(-h[r, b]))
                update = one / (one + math.exp(-h[p, b]))
                candidate = math.tanh(h[n, b] + reset * h[c, b])
                h[r, b], h[p, b], h[n, b] = reset, update, candidate
                h[new + j, b] = (one - update) * candidate + update * h[previous + j, b]

    return step


def _gru_backward(gru: GRUPlan, latent: int, code_row: int, one: Any) -> Kernel:
    """The GRU's backward at one step, from d loss/d s_t in ``delta``'s state rows:

        d n = d s ⊙ (1 − p)(1 − n²),  d p = d s ⊙ (s_{t-1} − n) p(1 − p),
        d r = d n ⊙ c_n r(1 − r),  d a = [d r | d p | d n],  d c = [d r | d p | d n ⊙ r]

    into the per-lane gradients of K (z_t d a), b_K, U (s_{t-1} d c) and b_U; d a @ Kᵀ into
    z_t's rows, d s ⊙ p + d c @ Uᵀ into s_{t-1}'s. The gate rows of ``delta`` keep d a and
    d c_n."""
    state, previous, gates, new = gru.state, gru.previous_row, gru.gate_row, gru.state_row
    kernel, recurrent, bias, recurrent_bias = (
        gru.kernel,
        gru.recurrent_kernel,
        gru.bias,
        gru.recurrent_bias,
    )
    width = 3 * state

    @_inlined
    def step(h, delta, lanes, theta):  # type: ignore[no-untyped-def]
        batch = h.shape[1]
        for j in range(state):
            r, p, n, c = gates + j, gates + state + j, gates + 2 * state + j, gates + 3 * state + j
            for b in range(batch):
                d_state = delta[new + j, b]
                reset, update, candidate = h[r, b], h[p, b], h[n, b]
                d_candidate = d_state * (one - update) * (one - candidate * candidate)
                d_update = d_state * (h[previous + j, b] - candidate) * update * (one - update)
                d_reset = d_candidate * h[c, b] * reset * (one - reset)
                delta[r, b], delta[p, b], delta[n, b] = d_reset, d_update, d_candidate
                delta[c, b] = d_candidate * reset
                delta[previous + j, b] += d_state * update
                lanes[bias + j, b] += d_reset
                lanes[bias + state + j, b] += d_update
                lanes[bias + 2 * state + j, b] += d_candidate
                lanes[recurrent_bias + j, b] += d_reset
                lanes[recurrent_bias + state + j, b] += d_update
                lanes[recurrent_bias + 2 * state + j, b] += delta[c, b]
            for i in range(latent):
                at = kernel + i * width + j
                k_r, k_p, k_n = theta[at], theta[at + state], theta[at + 2 * state]
                for b in range(batch):
                    z = h[code_row + i, b]
                    lanes[at, b] += z * delta[r, b]
                    lanes[at + state, b] += z * delta[p, b]
                    lanes[at + 2 * state, b] += z * delta[n, b]
                    delta[code_row + i, b] += (
                        k_r * delta[r, b] + k_p * delta[p, b] + k_n * delta[n, b]
                    )
            for i in range(state):
                at = recurrent + i * width + j
                u_r, u_p, u_n = theta[at], theta[at + state], theta[at + 2 * state]
                for b in range(batch):
                    fed = h[previous + i, b]
                    lanes[at, b] += fed * delta[r, b]
                    lanes[at + state, b] += fed * delta[p, b]
                    lanes[at + 2 * state, b] += fed * delta[c, b]
                    delta[previous + i, b] += (
                        u_r * delta[r, b] + u_p * delta[p, b] + u_n * delta[c, b]
                    )

    return step


def _in_turn(calls: list[Kernel], arity: int) -> Kernel:
    """One inlined function making each of ``calls``, in order, with the same arguments."""
    if len(calls) == 1:
        return calls[0]
    first, rest = calls[0], _in_turn(calls[1:], arity)
    if arity == 3:

        @_inlined
        def both3(a, b, c):  # type: ignore[no-untyped-def]
            first(a, b, c)
            rest(a, b, c)

        return both3

    @_inlined
    def both5(a, b, c, d, e):  # type: ignore[no-untyped-def]
        first(a, b, c, d, e)
        rest(a, b, c, d, e)

    return both5


def _forward(layout: Plan, encoder: Kernel, decoder: Kernel, zero: Any) -> Kernel:
    """The time loop around one step: the ``encoder`` layers, then the ``decoder`` layers."""
    features, latent = layout.features, layout.latent
    code_row, output_row = layout.code_row, layout.output_row
    feedback_a, feedback_d = layout.feedback_rows

    @_compiled
    def forward(inputs, codes_given, theta, work, slopes, outputs, codes):  # type: ignore[no-untyped-def]
        """Step the recurrence from x̂₀ = 0 over time-major ``inputs`` (T, width, B): x, or
        with ``codes_given`` the codes z for the decoder alone.

        ``work`` and ``slopes`` are (S, rows, B): with S = T step t keeps its workspace (and
        its slopes, in the recording kernel) for the backward pass; with S = 1 one workspace
        is reused.
        Writes ``outputs`` (T, F, B) and ``codes`` (T, L, B).
        """
        steps, width, batch = inputs.shape
        span = work.shape[0]
        input_row = code_row if codes_given else 0
        for t in range(steps):
            h = work[t % span]
            previous = work[(t - 1) % span]
            for f in range(features):
                for b in range(batch):
                    fed = previous[output_row + f, b] if t > 0 else zero
                    h[feedback_a + f, b] = fed
                    h[feedback_d + f, b] = fed
            for w in range(width):
                for b in range(batch):
                    h[input_row + w, b] = inputs[t, w, b]
            if not codes_given:
                encoder(h, slopes[t % span], theta)
            decoder(h, slopes[t % span], theta)
            for f in range(features):
                for b in range(batch):
                    outputs[t, f, b] = h[output_row + f, b]
            for c in range(latent):
                for b in range(batch):
                    codes[t, c, b] = h[code_row + c, b]

    return forward


def _backward(layout: Plan, layers: Kernel, zero: Any) -> Kernel:
    """Back-propagation through time around one step's ``layers`` (in reverse order)."""
    features, output_row = layout.features, layout.output_row
    feedback_a, feedback_d = layout.feedback_rows

    @_compiled
    def backward(work, slopes, outputs, targets, scale, theta, delta, carry, lanes, loss):  # type: ignore[no-untyped-def]
        """Gradient of mean((x̂ - y)²) after a recorded forward; ``scale`` is 2/(B·T·F).

        The gradient reaching x̂_t is the loss's own, scale·(x̂_t - y_t), plus ``carry``:
        what flows back from step t+1 through both feedback blocks. ``delta`` (rows, B) holds
        each row's gradient at one step; ``lanes`` (weights, B) and ``loss`` (B,) accumulate
        per batch lane.
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


def _state_forward(
    layout: Plan, encoder: Kernel, gru: Kernel, decoder: Kernel, zero: Any
) -> Kernel:
    """``_forward`` with state feedback: the ``encoder`` layers, the ``gru``, the ``decoder``
    layers, s_t fed back into the encoder input (where the GRU reads s_{t-1} too)."""
    assert layout.gru is not None
    features, latent, state = layout.features, layout.latent, layout.gru.state
    code_row, output_row = layout.code_row, layout.output_row
    previous, new = layout.gru.previous_row, layout.gru.state_row

    @_compiled
    def forward(inputs, codes_given, theta, work, slopes, outputs, codes):  # type: ignore[no-untyped-def]
        """``_forward``'s arguments and results, from s₀ = 0."""
        steps, width, batch = inputs.shape
        span = work.shape[0]
        input_row = code_row if codes_given else 0
        for t in range(steps):
            h = work[t % span]
            last = work[(t - 1) % span]
            for i in range(state):
                for b in range(batch):
                    h[previous + i, b] = last[new + i, b] if t > 0 else zero
            for w in range(width):
                for b in range(batch):
                    h[input_row + w, b] = inputs[t, w, b]
            if not codes_given:
                encoder(h, slopes[t % span], theta)
            gru(h, theta)
            decoder(h, slopes[t % span], theta)
            for f in range(features):
                for b in range(batch):
                    outputs[t, f, b] = h[output_row + f, b]
            for c in range(latent):
                for b in range(batch):
                    codes[t, c, b] = h[code_row + c, b]

    return forward


def _state_backward(
    layout: Plan, decoder: Kernel, gru: Kernel, encoder: Kernel, zero: Any
) -> Kernel:
    """``_backward`` with state feedback: through the ``decoder`` layers to s_t, where
    ``carry`` (d loss/d s_t from step t+1) joins, through the ``gru`` and the ``encoder``
    layers; the new ``carry`` is what reached s_{t-1} through both."""
    assert layout.gru is not None
    features, output_row, state = layout.features, layout.output_row, layout.gru.state
    previous, new = layout.gru.previous_row, layout.gru.state_row

    @_compiled
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


@_compiled
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
    """The loops of ``config`` in ``dtype_name`` ("float32" or "float64"), each compiled at
    its first call.

    Constants are scalars of that dtype, so a float32 kernel never widens to float64.
    """
    dtype = np.dtype(dtype_name).type
    layout = plan(config)
    zero, one = dtype(0.0), dtype(1.0)
    activate = _activation(one)

    if layout.gru is not None:
        return _state_kernels(layout, activate, zero, one)

    def loop(record: bool) -> Kernel:
        layers = [_dense_forward(layer, record, activate) for layer in layout.layers]
        encoder, decoder = layers[: layout.encoder_layers], layers[layout.encoder_layers :]
        return _forward(layout, _in_turn(encoder, 3), _in_turn(decoder, 3), zero)

    backward = [_dense_backward(layer) for layer in reversed(layout.layers)]
    return Kernels(
        forward=loop(record=False),
        forward_recorded=loop(record=True),
        backward=_backward(layout, _in_turn(backward, 5), zero),
        adam=_adam,
    )


def _state_kernels(layout: Plan, activate: Kernel, zero: Any, one: Any) -> Kernels:
    """``kernels`` of a state-feedback model: the GRU between the encoder and the decoder."""
    assert layout.gru is not None
    split = layout.encoder_layers
    gru_forward = _gru_forward(layout.gru, layout.latent, layout.code_row, one)

    def loop(record: bool) -> Kernel:
        layers = [_dense_forward(layer, record, activate) for layer in layout.layers]
        encoder, decoder = _in_turn(layers[:split], 3), _in_turn(layers[split:], 3)
        return _state_forward(layout, encoder, gru_forward, decoder, zero)

    backward = [_dense_backward(layer) for layer in layout.layers]
    return Kernels(
        forward=loop(record=False),
        forward_recorded=loop(record=True),
        backward=_state_backward(
            layout,
            _in_turn(backward[split:][::-1], 5),
            _gru_backward(layout.gru, layout.latent, layout.code_row, one),
            _in_turn(backward[:split][::-1], 5),
            zero,
        ),
        adam=_adam,
    )


class _Workspace(NamedTuple):
    """Every array one input shape needs, allocated once and reused by later calls."""

    work: Array
    slopes: Array
    outputs: Array
    codes: Array
    delta: Array
    carry: Array
    lanes: Array
    loss: npt.NDArray[np.float64]


class NumbaFloorBackend(BaseBackend):
    """The native floor behind the contract: Numba loops, float32, one thread.

    ``predict`` runs the forward with one reused workspace; ``loss_and_grads`` records every
    step's workspace and slopes, then runs the backward pass; a training step adds the contract's
    Adam (or SGD) on the flat weights. Inputs are transposed once to time-major,
    batch-innermost (T, F, B) and outputs once back.
    """

    name = "numba_floor"

    def _build(self, weights: Weights) -> None:
        self._plan = plan(self.config)
        self._kernels = kernels(self.config, np.dtype(self.compute_dtype).name)
        self._workspaces: dict[tuple[int, int, int, bool], _Workspace] = {}
        self._shape = (0, 0, 0)
        self._write_weights(weights)

    def _read_weights(self) -> Mapping[str, Any]:
        return unflatten(self._theta, self._plan)

    def _write_weights(self, weights: Weights) -> None:
        self._theta = flatten(weights, self._plan, self.compute_dtype)

    def _workspace(self, steps: int, batch: int, width: int, record: bool) -> _Workspace:
        key = (steps, batch, width, record)
        if (steps, batch, width) != self._shape:  # one shape's arrays at a time: bounded memory
            self._workspaces.clear()
            self._shape = (steps, batch, width)
        if key not in self._workspaces:
            layout, dtype = self._plan, self.compute_dtype
            span = steps if record else 1
            self._workspaces[key] = _Workspace(
                work=np.zeros((span, layout.rows, batch), dtype),
                slopes=np.zeros((span, layout.rows, batch), dtype),
                outputs=np.empty((steps, layout.features, batch), dtype),
                codes=np.empty((steps, layout.latent, batch), dtype),
                delta=np.empty((layout.rows, batch), dtype),
                carry=np.empty((layout.feedback_width, batch), dtype),
                lanes=np.empty((layout.size, batch), dtype),
                loss=np.empty(batch, np.float64),
            )
        return self._workspaces[key]

    def _run(self, sequences: Array, codes_given: bool, record: bool) -> _Workspace:
        batch, steps, width = sequences.shape
        space = self._workspace(steps, batch, width, record)
        forward = self._kernels.forward_recorded if record else self._kernels.forward
        forward(
            np.ascontiguousarray(sequences.transpose(1, 2, 0)),
            codes_given,
            self._theta,
            space.work,
            space.slopes,
            space.outputs,
            space.codes,
        )
        return space

    @staticmethod
    def _batch_major(time_major: Array) -> Array:
        return np.ascontiguousarray(time_major.transpose(2, 0, 1))

    def _predict(self, x: Array) -> Array:
        return self._batch_major(self._run(x, codes_given=False, record=False).outputs)

    def _encode(self, x: Array) -> Array:
        return self._batch_major(self._run(x, codes_given=False, record=False).codes)

    def _decode(self, z: Array) -> Array:
        return self._batch_major(self._run(z, codes_given=True, record=False).outputs)

    def _flat_loss_and_grads(self, x: Array, y: Array) -> tuple[float, Array]:
        space = self._run(x, codes_given=False, record=True)
        self._kernels.backward(
            space.work,
            space.slopes,
            space.outputs,
            np.ascontiguousarray(y.transpose(1, 2, 0)),
            self.compute_dtype(2.0 / y.size),
            self._theta,
            space.delta,
            space.carry,
            space.lanes,
            space.loss,
        )
        return float(space.loss.sum() / y.size), space.lanes.sum(axis=1)

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = self._flat_loss_and_grads(x, y)
        return loss, unflatten(grads, self._plan)

    def _keep_weights(self, step: int) -> None:
        """A copy of the flat weights, which a step updates in place."""
        self._kept[kept_slot(step)] = self._theta.copy()  # type: ignore[assignment]

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        return unflatten(self._kept[kept_slot(step)], self._plan)

    def _weights_finite(self) -> bool:
        return bool(np.isfinite(self._theta).all())

    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        """The contract's SGD or Adam on the flat weights, fresh state at each ``fit``."""
        first, second = np.zeros_like(self._theta), np.zeros_like(self._theta)
        count = 0

        def step(x: Array, y: Array) -> float:
            nonlocal count
            loss, grads = self._flat_loss_and_grads(x, y)
            count += 1
            if optimizer == "sgd":
                self._theta -= self.compute_dtype(learning_rate) * grads
            else:
                self._kernels.adam(
                    self._theta,
                    grads,
                    first,
                    second,
                    learning_rate,
                    ADAM.beta_1,
                    ADAM.beta_2,
                    ADAM.epsilon,
                    count,
                )
            return loss

        return step


class NumbaFloor64Backend(NumbaFloorBackend):
    """The same loops in float64: the exactness check against the reference."""

    name = "numba_floor_float64"
    compute_dtype = np.float64
