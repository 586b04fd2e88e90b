"""Training in JAX: the loss (with ``rate_weight``, the codes' bits under the learned prior),
its gradient by ``jax.value_and_grad`` through the scan, and the contract's SGD and Adam from
optax."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import PartitionSpec

from frae.codec.rate import FLOOR_BITS
from frae.config import FRAEConfig
from frae.optimizers import ADAM
from frae.params import Weights, from_flat
from frae.training_state import TrainingState
from impls.jax_scan import model
from impls.jax_scan.model import Array, Params

# Time steps per loop iteration of a gradient's scan: the fastest measured at B = 1 (the
# forward alone is fastest not unrolled).
GRADIENT_UNROLL = 4

# From this batch size on, a gradient recomputes each step in the backward loop
# (``jax.checkpoint``) instead of storing it, and does not unroll: faster at B = 64 and more
# so at B = 256 with output feedback (docs/performance.md).
REMAT_MIN_BATCH = 64


def recomputes(config: FRAEConfig, batch: int) -> bool:
    """Whether a gradient over ``batch`` sequences recomputes each step (``REMAT_MIN_BATCH``,
    output feedback only)."""
    return config.gru is None and batch >= REMAT_MIN_BATCH


def loss(config: FRAEConfig, params: Params, x: Array, y: Array) -> Array:
    """mean((x̂ - y)²) over every element of ``(B, T, F)``; with ``rate_weight`` λ, plus
    λ·``rate`` of the codes ẑ the loop produced (straight through to z, as the decoder's)."""
    large = recomputes(config, x.shape[0])
    outputs, codes, _ = model.unroll(
        config,
        params,
        x,
        steps_per_iteration=1 if large else GRADIENT_UNROLL,
        remat=large,
        batch_last=model.runs_batch_last(config, x.shape[0]),
    )
    distortion = jnp.mean(jnp.square(outputs - y))
    if config.rate_weight is None:
        return distortion
    return distortion + config.rate_weight * rate(config, params, codes)


def rate(config: FRAEConfig, params: Params, codes: Array) -> Array:
    """mean over ``(B, T)`` of bits_t = Σ_l ``symbol_bits`` of the codes ``(B, T, L)``."""
    assert config.code_step is not None  # rate_weight requires it
    location, log_scale = (params[name] for name in config.prior_parameters)
    bits = symbol_bits(codes, location, log_scale, config.code_step)
    return jnp.mean(jnp.sum(bits, axis=-1))


def symbol_bits(codes: Array, location: Array, log_scale: Array, step: float) -> Array:
    """Each code u's bits under the discretized logistic (μ, s = e^ρ) on the grid of Δ,
    ``min(FLOOR_BITS, −log2 p(u))``, in the product's log form, free of cancellation::

        a = (u − μ + Δ/2) / s,   b = (u − μ − Δ/2) / s
        log p(u) = log σ(a) + log σ(−b) + log(−expm1(−Δ/s))

    A floored symbol passes no gradient to μ, ρ or u: its bits are the constant, and its
    slopes are taken at the prior's centre with s = 1, all finite, where its own could
    overflow (a code far out under a tiny scale) and make the zero they meet NaN.
    """
    centred = codes - location
    floored = _information(centred, log_scale, step) > FLOOR_BITS
    kept = _information(jnp.where(floored, 0.0, centred), jnp.where(floored, 0.0, log_scale), step)
    return jnp.where(floored, FLOOR_BITS, kept)


def _information(centred: Array, log_scale: Array, step: float) -> Array:
    """−log2 p of the codes at ``centred`` = u − μ, unfloored; 1/s = e^−ρ multiplies, as a
    quotient's slope in s (over s²) would overflow first."""
    inverse_scale = jnp.exp(-log_scale)
    a, b = (centred + step / 2) * inverse_scale, (centred - step / 2) * inverse_scale
    log_sigmoid = jax.nn.log_sigmoid
    log_p = log_sigmoid(a) + log_sigmoid(-b) + jnp.log(-jnp.expm1(-step * inverse_scale))
    return log_p / -math.log(2.0)


def loss_and_grads(config: FRAEConfig, params: Params, x: Array, y: Array) -> tuple[Array, Params]:
    """The loss and its gradient by canonical name (through the NNX state, in the trace)."""
    return jax.value_and_grad(lambda p: loss(config, p, x, y))(params)


Gradient = Callable[[FRAEConfig, Params, Array, Array], tuple[Array, Params]]


def optimizer(name: str, learning_rate: float | Array) -> optax.GradientTransformation:
    """The contract's optimizers: ``"sgd"``, w ← w - lr·g, or ``"adam"``,
    w ← w - lr·m̂/(√v̂ + ε), β rounded to float32 as in the other backends."""
    if name == "sgd":
        return optax.sgd(learning_rate)
    beta_1, beta_2 = ADAM.float32_betas()
    # flattened: one update of one vector, faster than ten of tiny arrays
    return optax.flatten(optax.adam(learning_rate, b1=beta_1, b2=beta_2, eps=ADAM.epsilon))


def init_optimizer(name: str, params: Params) -> optax.OptState:
    """Fresh optimizer state for ``params`` (zero moments, step 0); the rate is not part of it."""
    return optimizer(name, 0.0).init(params)


def optimizer_state(start: TrainingState) -> optax.OptState:
    """optax's state of the optimizer at ``start``, in NumPy: for Adam, ``optax.flatten``'s
    one vector per moment, raveled in sorted-name order as ``ravel_pytree`` lays it out."""
    if start.optimizer == "sgd":
        return (optax.EmptyState(), optax.EmptyState())
    adam = optax.ScaleByAdamState(
        count=np.asarray(start.step, np.int32), mu=_raveled(start.m), nu=_raveled(start.v)
    )
    return (adam, optax.EmptyState())


def _raveled(moment: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.concatenate([np.ravel(moment[name]) for name in sorted(moment)])


def moments(state: optax.OptState, config: FRAEConfig) -> tuple[Weights, Weights]:
    """Adam's m and v by canonical name from optax's ``state``, NumPy float32; empty for
    SGD."""
    adam = state[0]
    if not isinstance(adam, optax.ScaleByAdamState):
        return {}, {}
    m, v = (from_flat(config, moment, by_sorted_name=True) for moment in (adam.mu, adam.nu))
    return m, v


def train_step(
    config: FRAEConfig,
    optimizer_name: str,
    params: Params,
    optimizer_state: optax.OptState,
    learning_rate: Array,
    x: Array,
    y: Array,
    *,
    gradient: Gradient = loss_and_grads,
) -> tuple[Params, optax.OptState, Array]:
    """Forward, back-propagation through time (``gradient``) and one update; the loss is
    from before it."""
    value, grads = gradient(config, params, x, y)
    return *update(optimizer_name, learning_rate, params, grads, optimizer_state), value


def update(
    optimizer_name: str,
    learning_rate: Array,
    params: Params,
    grads: Params,
    optimizer_state: optax.OptState,
) -> tuple[Params, optax.OptState]:
    """One update of ``params`` along ``grads`` by the contract's optimizer."""
    updates, optimizer_state = optimizer(optimizer_name, learning_rate).update(
        grads, optimizer_state, params
    )
    return optax.apply_updates(params, updates), optimizer_state


DEVICES_AXIS = "batch"
"""The mesh axis a data-parallel mini-batch is split along."""


def mean_over_devices(grads: Params) -> Params:
    """The devices' gradients averaged: with equal shards, the whole mini-batch's gradient."""
    return jax.lax.pmean(grads, DEVICES_AXIS)


def data_parallel_train_step(
    config: FRAEConfig,
    optimizer_name: str,
    mesh: jax.sharding.Mesh,
    params: Params,
    optimizer_state: optax.OptState,
    learning_rate: Array,
    x: Array,
    y: Array,
    *,
    gradient: Gradient = loss_and_grads,
    combine: Callable[[Params], Params] = mean_over_devices,
) -> tuple[Params, optax.OptState, Array]:
    """``train_step`` with the mini-batch split over ``mesh`` (``jax.shard_map``), the
    gradients averaged by one all-reduce (``combine``) and the update on replicated weights.

    An explicit SPMD program: XLA's automatic partitioning reduced the gradients' running
    sums at every backward step, many times slower.
    """
    replicated, split = PartitionSpec(), PartitionSpec(DEVICES_AXIS)

    def on_each_device(params: Params, x: Array, y: Array) -> tuple[Array, Params]:
        value, grads = gradient(config, params, x, y)
        return jax.lax.pmean(value, DEVICES_AXIS), combine(grads)

    value, grads = jax.shard_map(
        on_each_device,
        mesh=mesh,
        in_specs=(replicated, split, split),
        out_specs=(replicated, replicated),
        check_vma=False,  # the scans' zero initial carries are not marked per device
    )(params, x, y)
    return *update(optimizer_name, learning_rate, params, grads, optimizer_state), value
