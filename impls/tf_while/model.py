"""The FRAE recurrence as a ``tf.Module``: ``tf.while_loop`` over time, XLA-compiled.

The feedback x̂_{t-1} is a loop variable of the ``tf.while_loop``, never an attribute, and
every ``TensorArray.write`` result is reassigned: the two mistakes that disconnect the loss
from the weights ("No gradients provided for any variable") cannot happen here.
"""

from __future__ import annotations

import os

from frae.config import FRAEConfig
from frae.quiet import native_stderr_silenced

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # later INFO and WARNING lines too
with native_stderr_silenced():
    import tensorflow as tf

    tf.config.list_logical_devices()  # device discovery, with its CUDA probe, happens here

ACTIVATIONS = {
    "swish": tf.nn.silu,
    "tanh": tf.tanh,
    "sigmoid": tf.sigmoid,
    "linear": tf.identity,
}


Variables = dict[str, tf.Variable]


def create_variables(config: FRAEConfig) -> Variables:
    """One ``tf.Variable`` per canonical name, kernels (in, out), used as ``h @ kernel + bias``."""
    return {
        name: tf.Variable(tf.zeros(shape), name=name.replace("/", "_"))
        for name, shape in config.parameter_shapes().items()
    }


def _dense_stack(
    variables: Variables, layers: tuple[tuple[str, int], ...], activations: list, h: tf.Tensor
) -> tf.Tensor:
    for (name, _), activation in zip(layers, activations, strict=True):
        h = activation(tf.matmul(h, variables[f"{name}/kernel"]) + variables[f"{name}/bias"])
    return h


def unroll(
    config: FRAEConfig, variables: Variables, sequences: tf.Tensor, *, codes_given: bool = False
) -> tuple[tf.Tensor, tf.Tensor]:
    """Run the recurrence from x̂₀ = 0 over batch-major ``sequences`` (static shape).

    Args:
        config: the model's sizes and activations.
        variables: the canonical weights.
        sequences: ``(B, T, F)`` inputs x, or ``(B, T, L)`` codes z if ``codes_given``
            (the decoder alone, with its own feedback).

    Returns:
        ``(x̂, z)``, batch-major ``(B, T, F)`` and ``(B, T, L)``.
    """
    hidden = ACTIVATIONS[config.activation]
    encoder = [hidden] * len(config.encoder_layers)
    decoder = [hidden] * len(config.decoder_units) + [ACTIVATIONS[config.output_activation]]
    batch, steps = sequences.shape[0], sequences.shape[1]
    inputs = tf.TensorArray(tf.float32, size=steps).unstack(tf.transpose(sequences, [1, 0, 2]))
    outputs = tf.TensorArray(tf.float32, size=steps)
    codes = tf.TensorArray(tf.float32, size=steps)

    def step(t, feedback, outputs, codes):
        fresh = inputs.read(t)
        code = (
            fresh
            if codes_given
            else _dense_stack(
                variables, config.encoder_layers, encoder, tf.concat([fresh, feedback], axis=1)
            )
        )
        reconstruction = _dense_stack(
            variables, config.decoder_layers, decoder, tf.concat([code, feedback], axis=1)
        )
        return t + 1, reconstruction, outputs.write(t, reconstruction), codes.write(t, code)

    _, _, outputs, codes = tf.while_loop(
        lambda t, *_: t < steps,
        step,
        (tf.constant(0), tf.zeros([batch, config.input_dim]), outputs, codes),
        maximum_iterations=steps,  # a static trip count: XLA needs it to compile the loop
    )
    return (
        tf.transpose(outputs.stack(), [1, 0, 2]),
        tf.transpose(codes.stack(), [1, 0, 2]),
    )


def loss_and_grads(
    config: FRAEConfig, variables: Variables, x: tf.Tensor, y: tf.Tensor
) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
    """Mean squared error and its gradient, back-propagated through the whole loop.

    Raises ``ValueError`` at trace time, naming them, if the loss does not depend on some
    weights (the original failure would have been caught here).
    """
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(unroll(config, variables, x)[0] - y))
    grads = tape.gradient(loss, variables)
    disconnected = [name for name, grad in grads.items() if grad is None]
    if disconnected:
        raise ValueError(f"the loss does not depend on {disconnected}: no gradient for them")
    return loss, grads
