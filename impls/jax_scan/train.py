"""Training in JAX: the loss, its gradient by ``jax.value_and_grad`` through the scan, and the
contract's SGD and Adam from optax."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import PartitionSpec

from frae.config import FRAEConfig
from frae.optimizers import ADAM
from frae.params import Weights, from_flat
from frae.training_state import TrainingState
from impls.jax_scan import model
from impls.jax_scan.model import Array, Params

# The scan of a gradient steps this many time steps per loop iteration: back-propagation
# stores and reads a dozen arrays per step, and fewer iterations share the per-iteration
# work around them among more steps: at B = 1 this unroll was the fastest measured. The
# forward alone runs fastest unrolled by 1, so ``predict`` does not unroll.
GRADIENT_UNROLL = 4

# From this batch size on, a gradient recomputes each step's forward in the backward loop
# (``jax.checkpoint`` on the cell) instead of storing its intermediates, and does not
# unroll: with large batches, writing and reading the stored arrays costs more than the
# arithmetic again (recomputing was faster at B = 64 and more so at B = 256); below,
# storing is as fast or faster (B = 32, and B = 1 unrolled). Measured with output feedback
# (docs/performance.md), and only taken there: the state model always stores and unrolls.
REMAT_MIN_BATCH = 64


def recomputes(config: FRAEConfig, batch: int) -> bool:
    """Whether a gradient over ``batch`` sequences recomputes each step (``REMAT_MIN_BATCH``,
    output feedback only)."""
    return config.gru is None and batch >= REMAT_MIN_BATCH


def loss(config: FRAEConfig, params: Params, x: Array, y: Array) -> Array:
    """mean((x̂ - y)²) over every element of ``(B, T, F)``."""
    large = recomputes(config, x.shape[0])
    outputs = model.unroll(
        config,
        params,
        x,
        steps_per_iteration=1 if large else GRADIENT_UNROLL,
        remat=large,
        batch_last=model.runs_batch_last(config, x.shape[0]),
    )[0]
    return jnp.mean(jnp.square(outputs - y))


def loss_and_grads(config: FRAEConfig, params: Params, x: Array, y: Array) -> tuple[Array, Params]:
    """The loss and its gradient by canonical name (through the NNX state, in the trace)."""
    return jax.value_and_grad(lambda p: loss(config, p, x, y))(params)


Gradient = Callable[[FRAEConfig, Params, Array, Array], tuple[Array, Params]]
"""``loss_and_grads``'s signature: what a training step differentiates with."""


def optimizer(name: str, learning_rate: float | Array) -> optax.GradientTransformation:
    """The contract's optimizers: ``"sgd"``, w ← w - lr·g, or ``"adam"`` with ε outside the
    root, w ← w - lr·m̂/(√v̂ + ε), as optax places it.

    β₁ and β₂ go in as float32 (``ADAM.float32_betas``), so that optax forms the moment
    weight 1 - β and the bias correction 1 - βᵗ from the same rounded β.
    """
    if name == "sgd":
        return optax.sgd(learning_rate)
    beta_1, beta_2 = ADAM.float32_betas()
    # flattened: one update of one vector of every weight, not ten updates of tiny arrays,
    # which made a short training step faster
    return optax.flatten(optax.adam(learning_rate, b1=beta_1, b2=beta_2, eps=ADAM.epsilon))


def init_optimizer(name: str, params: Params) -> optax.OptState:
    """Fresh optimizer state for ``params`` (zero moments, step 0); the rate is not part of it."""
    return optimizer(name, 0.0).init(params)


def optimizer_state(start: TrainingState) -> optax.OptState:
    """optax's state of the contract's optimizer at ``start``, in NumPy (for an explicit
    ``device_put``): for Adam, ``optax.flatten``'s one vector per moment, the weights raveled
    in the order of their sorted names, as ``ravel_pytree`` lays out the weights' dict; for
    SGD, none."""
    if start.optimizer == "sgd":
        return (optax.EmptyState(), optax.EmptyState())
    adam = optax.ScaleByAdamState(
        count=np.asarray(start.step, np.int32), mu=_raveled(start.m), nu=_raveled(start.v)
    )
    return (adam, optax.EmptyState())


def _raveled(moment: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.concatenate([np.ravel(moment[name]) for name in sorted(moment)])


def moments(state: optax.OptState, config: FRAEConfig) -> tuple[Weights, Weights]:
    """Adam's m and v by canonical name from optax's ``state`` (``optimizer_state``'s
    layout), NumPy float32; empty for SGD. Each moment's vector is read to the host once
    and cut there, with no operation on the device."""
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
    """``train_step`` with the mini-batch split over ``mesh``: each device runs the forward
    and back-propagation through time on its shard (``jax.shard_map``), one all-reduce
    (``combine``: ``pmean``) averages the gradients, and the update runs on the replicated
    weights. The loss is the mean of the devices' shard means, the mini-batch's mean.

    Written as an explicit SPMD program: left to XLA's automatic partitioning, the same
    jitted ``train_step`` on a sharded batch reduces the weight gradients' running sums over
    the devices at every time step of the backward loop, and at B = 256, T = 1000 on 2 CPU
    devices runs many times slower than this program, or than one device.
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
