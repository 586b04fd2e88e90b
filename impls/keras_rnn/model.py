"""The FRAE step as a Keras RNN cell, written only with ``keras.ops``.

The cell contract: ``call(inputs, states) -> (output, new_states)`` with ``state_size`` and
``output_size``. Here the state is the feedback x̂_{t-1} (size F) and the output is
``[x̂_t, z_t]`` (size F + L), so one ``keras.layers.RNN`` gives reconstructions and codes.
``DecoderCell`` runs the same weights from given codes (``decode``). Keras supplies the
loop: ``tf.while_loop`` on TensorFlow, ``lax.scan`` on JAX.
"""

from __future__ import annotations

import math
import os

from frae.config import FUSED_PRODUCT_MAX_SIZE, FRAEConfig
from frae.quiet import native_stderr_silenced

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # later INFO and WARNING lines too
with native_stderr_silenced():
    import keras
    from keras import ops

    ops.convert_to_numpy(ops.zeros(()))  # the Keras backend finds its devices here

PACKAGE = "frae"


def variable_name(canonical: str) -> str:
    """Keras forbids "/" in variable names: ``encoder/dense_0/kernel`` is stored as
    ``encoder.dense_0.kernel``, one to one."""
    return canonical.replace("/", ".")


def canonical_name(variable: keras.Variable) -> str:
    return variable.name.replace(".", "/")


ACTIVATIONS = {
    "swish": keras.activations.silu,
    "tanh": keras.activations.tanh,
    "sigmoid": keras.activations.sigmoid,
    "linear": keras.activations.linear,
}


@keras.saving.register_keras_serializable(package=PACKAGE)
class FRAECell(keras.layers.Layer):
    """One time step of the FRAE; every canonical weight is a variable of this layer."""

    def __init__(self, frae_config: dict, **kwargs) -> None:
        super().__init__(**kwargs)
        self.frae_config = FRAEConfig(**frae_config)
        self.state_size = self.frae_config.input_dim
        self.output_size = self.frae_config.input_dim + self.frae_config.latent_dim
        hidden = ACTIVATIONS[self.frae_config.activation]
        self._encoder = [(name, hidden) for name, _ in self.frae_config.encoder_layers]
        self._decoder = [(name, hidden) for name, _ in self.frae_config.decoder_layers]
        self._decoder[-1] = (self._decoder[-1][0], ACTIVATIONS[self.frae_config.output_activation])

    def build(self, input_shape) -> None:
        self.weights_by_name = {
            name: self.add_weight(shape=shape, initializer="zeros", name=variable_name(name))
            for name, shape in self.frae_config.parameter_shapes().items()
        }

    def _dense_stack(self, layers, h):
        for name, activation in layers:
            kernel = self.weights_by_name[f"{name}/kernel"]
            product = (
                ops.sum(h[..., :, None] * kernel, axis=-2)
                if math.prod(kernel.shape) <= FUSED_PRODUCT_MAX_SIZE
                else ops.matmul(h, kernel)
            )
            h = activation(product + self.weights_by_name[f"{name}/bias"])
        return h

    def decode_step(self, code, feedback):
        """x̂_t from z_t and x̂_{t-1}."""
        return self._dense_stack(self._decoder, ops.concatenate([code, feedback], axis=-1))

    def call(self, inputs, states):
        feedback = states[0]
        code = self._dense_stack(self._encoder, ops.concatenate([inputs, feedback], axis=-1))
        reconstruction = self.decode_step(code, feedback)
        return ops.concatenate([reconstruction, code], axis=-1), [reconstruction]

    def get_config(self) -> dict:
        config = self.frae_config
        return {
            **super().get_config(),
            "frae_config": {
                **config.__dict__,
                "encoder_units": list(config.encoder_units),
                "decoder_units": list(config.decoder_units),
            },
        }


@keras.saving.register_keras_serializable(package=PACKAGE)
class DecoderCell(keras.layers.Layer):
    """The decoder alone, on given codes, with the weights of an ``FRAECell``."""

    def __init__(self, cell: FRAECell, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cell = cell
        self.state_size = cell.state_size
        self.output_size = cell.frae_config.input_dim

    def call(self, inputs, states):
        reconstruction = self.cell.decode_step(inputs, states[0])
        return reconstruction, [reconstruction]


def build_models(config: FRAEConfig) -> tuple[keras.Model, keras.Model, keras.Model]:
    """The autoencoder (x -> x̂), its encoder (x -> z) and its decoder (z -> x̂).

    The three share one ``FRAECell``; the autoencoder is the model a user saves.
    """
    features, latent = config.input_dim, config.latent_dim
    cell = FRAECell(
        {
            **config.__dict__,
            "encoder_units": list(config.encoder_units),
            "decoder_units": list(config.decoder_units),
        },
        name="frae_cell",
    )
    sequences = keras.Input((None, features), name="x")
    both = keras.layers.RNN(cell, return_sequences=True, name="frae_rnn")(sequences)
    autoencoder = keras.Model(sequences, both[..., :features], name="frae")
    encoder = keras.Model(sequences, both[..., features:], name="frae_encoder")
    codes = keras.Input((None, latent), name="z")
    decoded = keras.layers.RNN(DecoderCell(cell), return_sequences=True, name="frae_decoder_rnn")(
        codes
    )
    decoder = keras.Model(codes, decoded, name="frae_decoder")
    return autoencoder, encoder, decoder
