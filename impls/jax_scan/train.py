"""Training in JAX: the loss, its gradient by ``jax.value_and_grad`` through the scan (or,
with output feedback, through a backward pass written by hand, ``loss_by_hand``), and the
contract's SGD and Adam from optax."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import PartitionSpec

from frae.config import FUSED_PRODUCT_MAX_SIZE, FRAEConfig
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


Residuals = tuple[Array, list[Array], list[Array]]
"""What ``loss_by_hand``'s forward keeps for its backward, time-major: x̂ - y ``(T, B, F)``,
and per layer (table order) its inputs ``(T, B, fan_in)`` and slopes ``(T, B, units)``."""


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def loss_by_hand(config: FRAEConfig, params: Params, x: Array, y: Array) -> Array:
    """``loss``, differentiated by the backward pass written here (``jax.custom_vjp``), so
    that ``jax.grad`` and ``jax.value_and_grad`` call ``_backward`` instead of autodiff."""
    return jnp.mean(jnp.square(model.unroll(config, params, x)[0] - y))


def _recorded_forward(
    config: FRAEConfig, params: Params, x: Array, y: Array
) -> tuple[Array, tuple[Params, Residuals]]:
    """The loss, and what the backward needs: each step's layer inputs and slopes."""
    module = nnx.merge(model.graphdef(config), model.state_from_weights(params))
    assert isinstance(module, model.FRAE)  # the backward written here is output feedback's
    cell = module.traced_step
    feedback = jnp.zeros((x.shape[0], config.input_dim), x.dtype)
    # unrolled as autodiff's stored gradient; at T=1000 neither other unrolls of either loop
    # (1, 4, 8) nor forming the slopes after a plain forward loop, over all steps at once,
    # was faster (storing them in the loop was faster at B = 256)
    steps_per_iteration = 1 if x.shape[0] >= REMAT_MIN_BATCH else GRADIENT_UNROLL
    _, (outputs, inputs, slopes) = jax.lax.scan(
        cell, feedback, jnp.swapaxes(x, 0, 1), unroll=steps_per_iteration
    )
    error = outputs - jnp.swapaxes(y, 0, 1)
    return jnp.mean(jnp.square(error)), (params, (error, inputs, slopes))


def _times_transpose(d_pre: Array, kernel: Array) -> Array:
    """``d_pre @ kernelᵀ``, fused for small kernels as the forward's products are."""
    if kernel.size <= FUSED_PRODUCT_MAX_SIZE:
        return jnp.sum(d_pre[..., None, :] * kernel, axis=-1)
    return jnp.matmul(d_pre, kernel.T, precision=model.PRECISION)


def _backward(
    config: FRAEConfig, saved: tuple[Params, Residuals], d_loss: Array
) -> tuple[Params, Array, Array]:
    """Back-propagation through time, written out; returns d loss / d (params, x, y).

    One reverse loop over time carries only g = d loss / d x̂_t, ``(B, F)``. At step t the
    gradient reaching x̂_t is 2(x̂_t - y_t)/(B·T·F) + g; through each layer, decoder then
    encoder (the z part), d_pre = d_out · act'(a) and d_in = d_pre @ kernelᵀ; the new g is
    the feedback rows' part of both sides' d_in. The loop emits each layer's d_pre per step.
    After it, each weight's gradient is one product over all T·B rows:
    d kernel = Σ_{t,b} input[t,b]ᵀ d_pre[t,b], d bias = Σ_{t,b} d_pre[t,b].
    """
    params, (error, inputs, slopes) = saved
    features, latent = config.input_dim, config.latent_dim
    encoder = config.encoder_layers
    # of the encoder's first kernel, only the feedback rows carry gradient back in time
    kernels = [params[layer.kernel] for layer in config.layers]
    back_kernels = [kernels[0][features:], *kernels[1:]]
    d_outputs = (2.0 / error.size) * d_loss * error

    def step(d_feedback: Array, per_step: tuple[Array, list[Array]]) -> tuple[Array, list[Array]]:
        d_output, step_slopes = per_step
        d_out, reversed_d_pres = d_output + d_feedback, []
        for index in reversed(range(len(kernels))):
            reversed_d_pres.append(d_out * step_slopes[index])
            d_out = _times_transpose(reversed_d_pres[-1], back_kernels[index])
            if index == len(encoder):  # the decoder's first layer reads [z_t, x̂_{t-1}]
                d_out, d_feedback = d_out[:, :latent], d_out[:, latent:]
        return d_feedback + d_out, reversed_d_pres[::-1]

    steps_per_iteration = 1 if error.shape[1] >= REMAT_MIN_BATCH else GRADIENT_UNROLL
    _, d_pres = jax.lax.scan(
        step,
        jnp.zeros_like(error[0]),
        (d_outputs, slopes),
        reverse=True,
        unroll=steps_per_iteration,
    )
    grads = {}
    for layer, layer_inputs, d_pre in zip(config.layers, inputs, d_pres, strict=True):
        flat_d_pre = d_pre.reshape(-1, layer.units)
        grads[layer.kernel] = jnp.matmul(
            layer_inputs.reshape(-1, layer.fan_in).T, flat_d_pre, precision=model.PRECISION
        )
        grads[layer.bias] = flat_d_pre.sum(axis=0)
    # exact cotangents of x and y as well; value_and_grad over params alone drops them
    d_x = jnp.einsum("tbu,fu->btf", d_pres[0], kernels[0][:features], precision=model.PRECISION)
    return grads, d_x, -jnp.swapaxes(d_outputs, 0, 1)


loss_by_hand.defvjp(_recorded_forward, _backward)


def loss_and_grads_by_hand(
    config: FRAEConfig, params: Params, x: Array, y: Array
) -> tuple[Array, Params]:
    """``loss_and_grads`` with ``jax.value_and_grad`` calling the hand-written backward."""
    return jax.value_and_grad(lambda p: loss_by_hand(config, p, x, y))(params)


Gradient = Callable[[FRAEConfig, Params, Array, Array], tuple[Array, Params]]


def gradient(config: FRAEConfig, *, by_hand: bool) -> Gradient:
    """``loss_and_grads``, or with ``by_hand`` ``loss_and_grads_by_hand``: the hand-written
    backward covers output feedback, so a state-feedback config gets autodiff's in both."""
    return loss_and_grads_by_hand if by_hand and config.gru is None else loss_and_grads


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
    by_hand: bool = False,
) -> tuple[Params, optax.OptState, Array]:
    """Forward, back-propagation through time (by autodiff, or ``by_hand`` through
    ``loss_by_hand``: ``gradient``) and one update; the loss is from before it."""
    value, grads = gradient(config, by_hand=by_hand)(config, params, x, y)
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
    by_hand: bool = False,
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
    on_one_device = gradient(config, by_hand=by_hand)
    replicated, split = PartitionSpec(), PartitionSpec(DEVICES_AXIS)

    def on_each_device(params: Params, x: Array, y: Array) -> tuple[Array, Params]:
        value, grads = on_one_device(config, params, x, y)
        return jax.lax.pmean(value, DEVICES_AXIS), combine(grads)

    value, grads = jax.shard_map(
        on_each_device,
        mesh=mesh,
        in_specs=(replicated, split, split),
        out_specs=(replicated, replicated),
        check_vma=False,  # the scans' zero initial carries are not marked per device
    )(params, x, y)
    return *update(optimizer_name, learning_rate, params, grads, optimizer_state), value
