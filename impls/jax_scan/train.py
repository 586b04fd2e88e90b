"""Training in JAX: the loss, its gradient by ``jax.value_and_grad`` through the scan, and
the contract's SGD and Adam from optax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from frae.config import FRAEConfig
from frae.optimizers import ADAM
from impls.jax_scan import model
from impls.jax_scan.model import Array, Params

# The scan of a gradient steps this many time steps per loop iteration: back-propagation
# stores and reads a dozen arrays per step, and fewer iterations halve the per-iteration
# work around them at B=1 (2.4 -> 1.2 µs per step). The forward alone runs fastest unrolled
# by 1 (0.14 vs 0.35 at unroll 4), so ``predict`` does not unroll.
GRADIENT_UNROLL = 4

# From this batch size on, a gradient recomputes each step's forward in the backward loop
# (``jax.checkpoint`` on the cell) instead of storing its intermediates, and does not
# unroll: with large batches, writing and reading the stored arrays costs more than the
# arithmetic again (B=256: 68 -> 33 µs per step, B=64: 9.6 -> 6.9); below, storing is as
# fast or faster (B=32: 4.8 against 5.2; B=1, unrolled: 1.2 against 1.7).
REMAT_MIN_BATCH = 64


def loss(config: FRAEConfig, params: Params, x: Array, y: Array) -> Array:
    """mean((x̂ - y)²) over every element of ``(B, T, F)``."""
    large = x.shape[0] >= REMAT_MIN_BATCH
    outputs = model.unroll(
        config, params, x, steps_per_iteration=1 if large else GRADIENT_UNROLL, remat=large
    )[0]
    return jnp.mean(jnp.square(outputs - y))


def loss_and_grads(config: FRAEConfig, params: Params, x: Array, y: Array) -> tuple[Array, Params]:
    """The loss and its gradient by canonical name (through the NNX state, in the trace)."""
    return jax.value_and_grad(lambda p: loss(config, p, x, y))(params)


def optimizer(name: str, learning_rate: float | Array) -> optax.GradientTransformation:
    """The contract's optimizers: ``"sgd"``, w ← w - lr·g, or ``"adam"`` with ε outside the
    root, w ← w - lr·m̂/(√v̂ + ε), as optax places it.

    β₁ and β₂ go in as float32 (``ADAM.float32_betas``), so that optax forms the moment
    weight 1 - β and the bias correction 1 - βᵗ from the same rounded β.
    """
    if name == "sgd":
        return optax.sgd(learning_rate)
    beta_1, beta_2 = ADAM.float32_betas()
    # flattened: one update of one vector of every weight, not ten updates of tiny arrays
    # (a training step at T=10: 115 -> 88 µs)
    return optax.flatten(optax.adam(learning_rate, b1=beta_1, b2=beta_2, eps=ADAM.epsilon))


def init_optimizer(name: str, params: Params) -> optax.OptState:
    """Fresh optimizer state for ``params`` (zero moments, step 0); the rate is not part of it."""
    return optimizer(name, 0.0).init(params)


def train_step(
    config: FRAEConfig,
    optimizer_name: str,
    params: Params,
    optimizer_state: optax.OptState,
    learning_rate: Array,
    x: Array,
    y: Array,
) -> tuple[Params, optax.OptState, Array]:
    """Forward, back-propagation through time and one update; the loss is from before it."""
    value, grads = loss_and_grads(config, params, x, y)
    updates, optimizer_state = optimizer(optimizer_name, learning_rate).update(
        grads, optimizer_state, params
    )
    return optax.apply_updates(params, updates), optimizer_state, value
