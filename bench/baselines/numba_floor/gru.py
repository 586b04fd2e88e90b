"""The floor's GRU at one time step, forward and backward (state feedback, the
contract's "State feedback"), every size frozen in as a constant."""

from __future__ import annotations

import math
from typing import Any

from bench.baselines.layout import GRUPlan
from bench.baselines.numba_floor.layers import Kernel, inlined


def gru_forward(gru: GRUPlan, latent: int, code_row: int, one: Any) -> Kernel:
    """The GRU at one step, for every lane: from z_t and s_{t-1}, the gates

        r = σ(z K_r + b_K,r + s U_r + b_U,r),  p = σ(z K_p + b_K,p + s U_p + b_U,p),
        c_n = s U_n + b_U,n,  n = tanh(z K_n + b_K,n + r ⊙ c_n),  s_t = (1 − p) ⊙ n + p ⊙ s

    kept in the gate rows (r, p, n, c_n) for the backward pass, and s_t."""
    state, previous, gates, new = gru.state, gru.previous_row, gru.gate_row, gru.state_row
    kernel, recurrent = gru.kernel, gru.recurrent_kernel
    bias, recurrent_bias = gru.bias, gru.recurrent_bias
    width = 3 * state

    @inlined
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


def gru_backward(gru: GRUPlan, latent: int, code_row: int, one: Any) -> Kernel:
    """The GRU's backward at one step, from d loss/d s_t in ``delta``'s state rows:

        d n = d s ⊙ (1 − p)(1 − n²),  d p = d s ⊙ (s_{t-1} − n) p(1 − p),
        d r = d n ⊙ c_n r(1 − r),  d a = [d r | d p | d n],  d c = [d r | d p | d n ⊙ r]

    into the per-lane gradients of K (z_t d a), b_K, U (s_{t-1} d c) and b_U; d a @ Kᵀ into
    z_t's rows, d s ⊙ p + d c @ Uᵀ into s_{t-1}'s. The gate rows of ``delta`` keep d a and
    d c_n."""
    state, previous, gates, new = gru.state, gru.previous_row, gru.gate_row, gru.state_row
    kernel, recurrent = gru.kernel, gru.recurrent_kernel
    bias, recurrent_bias = gru.bias, gru.recurrent_bias
    width = 3 * state

    @inlined
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
