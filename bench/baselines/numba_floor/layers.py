"""The floor's per-step kernels: one dense layer's forward and backward at one time step,
every size frozen in as a constant, inlined into one step by Numba."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba

from bench.baselines.layout import Layer

Kernel = Callable[..., Any]


def compiled(function: Callable[..., Any]) -> Kernel:
    """``numba.njit`` with NumPy's error model (no zero-divisor test before each division)."""
    return numba.njit(error_model="numpy")(function)


def inlined(function: Callable[..., Any]) -> Kernel:
    """``compiled``, and inlined into its callers by Numba itself."""
    return numba.njit(inline="always", error_model="numpy")(function)


def activation(one: Any) -> Kernel:
    """``activate(kind, a) -> (act(a), act'(a))`` with constants of ``one``'s dtype."""

    @inlined
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


def dense_forward(layer: Layer, record: bool, activate: Kernel) -> Kernel:
    """One layer at one step: h[out] = act(h[in] @ W + b), slopes kept if ``record``."""
    in_row, fan_in, out_row, units, kernel, bias, kind = layer

    @inlined
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


def dense_backward(layer: Layer) -> Kernel:
    """One layer's backward at one step: ``delta`` (d loss/d row) times the recorded slope
    into its weights' per-lane gradients and back through the kernel to its input rows."""
    in_row, fan_in, out_row, units, kernel, bias, _ = layer

    @inlined
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


def in_turn(calls: list[Kernel], arity: int) -> Kernel:
    """One inlined function making each of ``calls``, in order, with the same arguments."""
    if len(calls) == 1:
        return calls[0]
    first, rest = calls[0], in_turn(calls[1:], arity)
    if arity == 3:

        @inlined
        def both3(a, b, c):  # type: ignore[no-untyped-def]
            first(a, b, c)
            rest(a, b, c)

        return both3

    @inlined
    def both5(a, b, c, d, e):  # type: ignore[no-untyped-def]
        first(a, b, c, d, e)
        rest(a, b, c, d, e)

    return both5
