"""``TFWhileBPTTBackend``: ``tf_while`` with its backward pass written by hand."""

from __future__ import annotations

import functools
from typing import Any

from bench.twins import refuse_rate_weight
from frae.activations import activation_slope
from frae.codec import SYMBOL_LIMIT
from frae.config import FRAEConfig, Layer
from frae.params import Weights
from impls.tf_while.backend import TFWhileBackend, compiled_functions, training_functions
from impls.tf_while.model import ACTIVATIONS, Variables, product, quantize, tf

Records = dict[str, tuple[tf.Tensor, tf.Tensor]]
"""Layer name -> its input ``(T, B, fan_in)`` and its slope act'(a) ``(T, B, units)`` at
every step, time-major."""


def recorded_forward(
    config: FRAEConfig, weights: dict[str, tf.Tensor], x: tf.Tensor, y: tf.Tensor
) -> tuple[tf.Tensor, Records, tf.Tensor]:
    """``(loss, records, d_outputs)``: the loss as ``train.distortion_and_rate`` sums it, each
    layer's inputs and slopes per step, and d loss / d x̂_t = 2(x̂_t − y_t)/(B·T·F)."""
    batch, steps = x.shape[0], x.shape[1]
    inputs = tf.transpose(x, [1, 0, 2])
    targets = tf.transpose(y, [1, 0, 2])
    scale = 2.0 / float(batch * steps * config.input_dim)
    layers, latent = config.layers, config.encoder_layers[-1]

    def through(side: tuple[Layer, ...], h: tf.Tensor, seen: dict[str, tf.Tensor]) -> tf.Tensor:
        for layer in side:
            pre = product(h, weights[layer.kernel]) + weights[layer.bias]
            out = ACTIVATIONS[layer.activation](pre)
            seen[layer.name + "/input"] = h
            seen[layer.name + "/slope"] = activation_slope(
                layer.activation, pre, out, tf.sigmoid, tf.ones_like
            )
            h = out
        return h

    def step(
        t: tf.Tensor, feedback: tf.Tensor, total: tf.Tensor, arrays: dict[str, tf.TensorArray]
    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, dict[str, tf.TensorArray]]:
        seen: dict[str, tf.Tensor] = {}
        code = through(config.encoder_layers, tf.concat([inputs[t], feedback], 1), seen)
        if config.code_step is not None:  # straight through: the clip's mask joins the slope
            inside = tf.abs(code / config.code_step) <= SYMBOL_LIMIT
            seen[f"{latent.name}/slope"] *= tf.cast(inside, tf.float32)
            code = quantize(code, config.code_step)
        reconstruction = through(config.decoder_layers, tf.concat([code, feedback], 1), seen)
        error = reconstruction - targets[t]
        seen["d_output"] = scale * error
        arrays = {key: array.write(t, seen[key]) for key, array in arrays.items()}
        squares = tf.cast(tf.reduce_sum(tf.square(error)), tf.float64)
        return t + 1, reconstruction, total + squares, arrays

    keys = [f"{layer.name}/{what}" for layer in layers for what in ("input", "slope")]
    arrays = {key: tf.TensorArray(tf.float32, size=steps) for key in [*keys, "d_output"]}
    _, _, total, arrays = tf.while_loop(
        lambda t, *_: t < steps,
        step,
        (tf.constant(0), tf.zeros([batch, config.input_dim]), tf.constant(0.0, tf.float64), arrays),
        maximum_iterations=steps,
        name="recorded_forward",
    )
    stacks = {key: array.stack() for key, array in arrays.items()}
    records = {
        layer.name: (stacks[layer.name + "/input"], stacks[layer.name + "/slope"])
        for layer in layers
    }
    loss = tf.cast(total / float(batch * steps * config.input_dim), tf.float32)
    return loss, records, stacks["d_output"]


def backward(
    config: FRAEConfig, weights: dict[str, tf.Tensor], records: Records, d_outputs: tf.Tensor
) -> dict[str, tf.Tensor]:
    """d loss / d weights. One reverse loop carries only g = d loss / d x̂_t: through each
    layer d_pre = d_out · act'(a), d_in = d_pre @ kernelᵀ, the new g both sides' feedback
    rows; then d kernel = Σ_{t,b} input[t,b]ᵀ d_pre[t,b], d bias = Σ_{t,b} d_pre[t,b].
    """
    steps, batch, features = d_outputs.shape
    latent = config.latent_dim
    layers = config.layers
    # back through a layer is d_pre @ kernelᵀ; of the encoder's input only x̂_{t-1} (rows F…)
    # needs a gradient
    backward_kernels = {layer.name: tf.transpose(weights[layer.kernel]) for layer in layers}
    first = config.encoder_layers[0]
    backward_kernels[first.name] = tf.transpose(weights[first.kernel][features:])

    def back_through(
        side: tuple[Layer, ...], d_out: tf.Tensor, t: tf.Tensor, d_pres: dict[str, tf.Tensor]
    ) -> tf.Tensor:
        for layer in reversed(side):
            d_pre = d_out * records[layer.name][1][t]
            d_pres[layer.name] = d_pre
            d_out = product(d_pre, backward_kernels[layer.name])
        return d_out

    def step(
        t: tf.Tensor, d_feedback: tf.Tensor, arrays: dict[str, tf.TensorArray]
    ) -> tuple[tf.Tensor, tf.Tensor, dict[str, tf.TensorArray]]:
        d_pres: dict[str, tf.Tensor] = {}
        d_decoder_in = back_through(config.decoder_layers, d_outputs[t] + d_feedback, t, d_pres)
        d_encoder_feedback = back_through(
            config.encoder_layers, d_decoder_in[:, :latent], t, d_pres
        )
        arrays = {name: array.write(t, d_pres[name]) for name, array in arrays.items()}
        return t - 1, d_decoder_in[:, latent:] + d_encoder_feedback, arrays

    arrays = {layer.name: tf.TensorArray(tf.float32, size=steps) for layer in layers}
    _, _, arrays = tf.while_loop(
        lambda t, *_: t >= 0,
        step,
        (tf.constant(steps - 1), tf.zeros([batch, features]), arrays),
        maximum_iterations=steps,
        name="hand_written_backward",
    )
    grads = {}
    for layer in layers:
        inputs = tf.reshape(records[layer.name][0], [steps * batch, layer.fan_in])
        d_pre = tf.reshape(arrays[layer.name].stack(), [steps * batch, layer.units])
        grads[layer.kernel] = tf.matmul(inputs, d_pre, transpose_a=True)
        grads[layer.bias] = tf.reduce_sum(d_pre, axis=0)
    return grads


def mean_squared_error_by_hand(
    config: FRAEConfig, variables: Variables, x: tf.Tensor, y: tf.Tensor
) -> tf.Tensor:
    """``train.distortion_and_rate``'s value without a rate term, mean((x̂ − y)²), with
    ``backward`` as its gradient by ``tf.custom_gradient``; output feedback only."""
    if config.gru is not None:
        raise ValueError('the hand-written backward is for feedback="output" models only')
    names = list(variables)

    @tf.custom_gradient
    def loss_of(*values: tf.Tensor):  # type: ignore[no-untyped-def]
        weights = dict(zip(names, values, strict=True))
        loss, records, d_outputs = recorded_forward(config, weights, x, y)

        def gradient(d_loss: tf.Tensor) -> list[tf.Tensor]:
            grads = backward(config, weights, records, d_outputs)
            return [d_loss * grads[name] for name in names]

        return loss, gradient

    return loss_of(*(tf.convert_to_tensor(variable) for variable in variables.values()))


@functools.cache
def compiled_by_hand(jit_compile: bool) -> dict[str, Any]:
    """``compiled_functions`` with every gradient through ``mean_squared_error_by_hand``
    (loss_and_grads and both optimizers' steps); predict, encode, decode and start_fit are
    the same functions, so their traces are shared with ``TFWhileBackend``."""
    compile_ = functools.partial(tf.function, jit_compile=jit_compile, autograph=False)
    return {
        **compiled_functions(jit_compile),
        **training_functions(compile_, mean_squared_error_by_hand),
    }


class TFWhileBPTTBackend(TFWhileBackend):
    """``TFWhileBackend`` whose gradients and optimizer steps, on one device or a strategy's
    replicas, go through ``backward``; a state-feedback model trains by autodiff. A config
    with ``rate_weight`` is refused: ``backward`` has no rate term."""

    name = "tf_while_bptt"

    def _build(self, weights: Weights) -> None:
        refuse_rate_weight(self.config, self.name)
        super()._build(weights)
        if self.config.gru is None:
            self.compiled = compiled_by_hand(self.jit_compile)
