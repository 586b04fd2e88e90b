"""``JaxScanBPTTBackend``: ``jax_scan`` with its backward pass written by hand."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from bench.twins import refuse_rate_weight
from frae.activations import activation_slope
from frae.codec import SYMBOL_LIMIT
from frae.config import FUSED_PRODUCT_MAX_SIZE, FRAEConfig
from frae.optimizers import OPTIMIZERS
from frae.params import Weights
from impls.jax_scan import model, train
from impls.jax_scan.backend import Compiled, JaxScanBackend, compiled, data_parallel_steps, jit
from impls.jax_scan.model import Array, Params

Traced = tuple[Array, list[Array], list[Array]]
"""An output and, per layer in table order, its input and slope act'(a): of a stack at one
step; of the model over time, what ``loss_by_hand``'s forward keeps for its backward, x̂ - y
``(T, B, F)``, inputs ``(T, B, fan_in)`` and slopes ``(T, B, units)``."""


def _traced(stack: model.DenseStack, h: Array) -> Traced:
    """``stack(h)``, recording each layer's input and slope on the way."""
    inputs, slopes = [], []
    for attribute, activation in zip(stack.layer_names, stack.activations, strict=True):
        inputs.append(h)
        pre = stack.pre_activation(attribute, h)
        h = model.ACTIVATIONS[activation](pre)
        slopes.append(activation_slope(activation, pre, h, nnx.sigmoid, jnp.ones_like))
    return h, inputs, slopes


def _traced_step(module: model.FRAE, feedback: Array, x_t: Array) -> tuple[Array, Traced]:
    """``module.step``, recording: x̂_{t-1}, x_t -> x̂_t, (x̂_t, each layer's input, each
    layer's slope), the encoder's layers then the decoder's."""
    z_t, encoder_inputs, encoder_slopes = _traced(
        module.encoder, jnp.concatenate([x_t, feedback], -1)
    )
    if module.code_step is not None:  # straight through: the clip's mask joins the latent's slope
        encoder_slopes[-1] = encoder_slopes[-1] * (jnp.abs(z_t / module.code_step) <= SYMBOL_LIMIT)
        z_t = model.quantize(z_t, module.code_step)
    output, decoder_inputs, decoder_slopes = _traced(
        module.decoder, jnp.concatenate([z_t, feedback], -1)
    )
    return output, (output, encoder_inputs + decoder_inputs, encoder_slopes + decoder_slopes)


def _steps_per_iteration(batch: int) -> int:
    """Both loops unrolled as autodiff's stored gradient (``train.GRADIENT_UNROLL``); at
    T=1000 neither other unrolls (1, 4, 8) nor forming the slopes after a plain forward loop
    was faster (storing them in the loop was faster at B = 256)."""
    return 1 if batch >= train.REMAT_MIN_BATCH else train.GRADIENT_UNROLL


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def loss_by_hand(config: FRAEConfig, params: Params, x: Array, y: Array) -> Array:
    """``train.loss``, differentiated by the backward pass written here (``jax.custom_vjp``),
    so that ``jax.grad`` and ``jax.value_and_grad`` call ``_backward`` instead of autodiff."""
    return jnp.mean(jnp.square(model.unroll(config, params, x)[0] - y))


def _recorded_forward(
    config: FRAEConfig, params: Params, x: Array, y: Array
) -> tuple[Array, tuple[Params, Traced]]:
    """The loss, and what the backward needs: each step's layer inputs and slopes."""
    module = nnx.merge(model.graphdef(config), model.state_from_weights(params))
    assert isinstance(module, model.FRAE)  # the backward written here is output feedback's
    feedback = jnp.zeros((x.shape[0], config.input_dim), x.dtype)
    _, (outputs, inputs, slopes) = jax.lax.scan(
        functools.partial(_traced_step, module),
        feedback,
        jnp.swapaxes(x, 0, 1),
        unroll=_steps_per_iteration(x.shape[0]),
    )
    error = outputs - jnp.swapaxes(y, 0, 1)
    return jnp.mean(jnp.square(error)), (params, (error, inputs, slopes))


def _times_transpose(d_pre: Array, kernel: Array) -> Array:
    """``d_pre @ kernelᵀ``, fused for small kernels as the forward's products are."""
    if kernel.size <= FUSED_PRODUCT_MAX_SIZE:
        return jnp.sum(d_pre[..., None, :] * kernel, axis=-1)
    return jnp.matmul(d_pre, kernel.T, precision=model.PRECISION)


def _backward(
    config: FRAEConfig, saved: tuple[Params, Traced], d_loss: Array
) -> tuple[Params, Array, Array]:
    """d loss / d (params, x, y). One reverse loop carries only g = d loss / d x̂_t: through
    each layer d_pre = d_out · act'(a), d_in = d_pre @ kernelᵀ, the new g both sides' feedback
    rows; then d kernel = Σ_{t,b} input[t,b]ᵀ d_pre[t,b], d bias = Σ_{t,b} d_pre[t,b].
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

    _, d_pres = jax.lax.scan(
        step,
        jnp.zeros_like(error[0]),
        (d_outputs, slopes),
        reverse=True,
        unroll=_steps_per_iteration(error.shape[1]),
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
    """``train.loss_and_grads`` with ``jax.value_and_grad`` calling the backward above."""
    return jax.value_and_grad(lambda p: loss_by_hand(config, p, x, y))(params)


@functools.lru_cache(maxsize=64)
def compiled_by_hand(config: FRAEConfig) -> Compiled:
    """``compiled(config)`` with the gradient and both optimizers' steps through
    ``loss_and_grads_by_hand``; the rest are the same jitted functions."""
    return dataclasses.replace(
        compiled(config),
        loss_and_grads=jit(functools.partial(loss_and_grads_by_hand, config)),
        train_steps={
            name: jit(
                functools.partial(train.train_step, config, name, gradient=loss_and_grads_by_hand)
            )
            for name in OPTIMIZERS
        },
    )


class JaxScanBPTTBackend(JaxScanBackend):
    """``JaxScanBackend`` whose gradients and optimizer steps, on one device or several, go
    through ``loss_by_hand``; a state-feedback config trains by autodiff. A config with
    ``rate_weight`` is refused: the backward written here has no rate term."""

    name = "jax_scan_bptt"

    def _build(self, weights: Weights) -> None:
        refuse_rate_weight(self.config, self.name)
        super()._build(weights)
        if self.config.gru is None:
            self.compiled = compiled_by_hand(self.config)

    def _step_function(self, optimizer: str) -> Callable[..., Any]:
        if self.mesh is None or self.config.gru is not None:
            return super()._step_function(optimizer)
        return data_parallel_steps(self.config, self.mesh, loss_and_grads_by_hand)[optimizer]
