"""The FRAE step as a Keras RNN cell, written only with ``keras.ops``.

The cell's state is the feedback (x̂_{t-1}, or the GRU's s_{t-1}) and its output
``[x̂_t, z_t]``, so one ``keras.layers.RNN`` gives reconstructions and codes; ``DecoderCell``
runs the same weights from given codes. Keras supplies the loop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from frae import routes
from frae.config import FUSED_PRODUCT_MAX_SIZE, FRAEConfig, Layer
from frae.quantization import SYMBOL_LIMIT
from frae.quiet import import_quietly

if TYPE_CHECKING:
    import keras
else:  # the Keras backend finds its devices at its first operation
    keras = import_quietly("keras", lambda keras: keras.ops.convert_to_numpy(keras.ops.zeros(())))
ops = keras.ops
LOOP_FOLDING = routes.fold_xla_loops() if keras.backend.backend() == "tensorflow" else None
"""XLA's loop folding on TensorFlow (``frae.routes``); on JAX the loops fold without it."""
JAX_COMPILER_OPTIONS, JAX_ROUTES = (
    routes.compiler_options(routes.YNNPACK_OFF) if keras.backend.backend() == "jax" else ({}, ())
)
"""On JAX, YNNPACK's fusions off in the functions this package jits (not Keras' training
step): predict twice as fast at B = 256 (docs/performance.md)."""

Tensor = Any
"""A tensor of the Keras backend in use (TensorFlow's, JAX's or torch's), or a symbolic one."""
PACKAGE = "frae"


def variable_name(canonical: str) -> str:
    """``encoder/dense_0/kernel`` -> ``encoder__dense_0__kernel``: Keras forbids "/" in
    variable names and torch "."."""
    return canonical.replace("/", "__")


def canonical_name(variable: keras.Variable) -> str:
    return variable.name.replace("__", "/")


def to_numpy(value: object) -> np.ndarray:
    """A variable's value or a result as NumPy, on every Keras backend (``np.asarray``
    avoids the NumPy 2 ``copy`` warning of Keras' own conversions on TensorFlow)."""
    return np.asarray(ops.stop_gradient(value))


ACTIVATIONS = {
    "swish": keras.activations.silu,
    "tanh": keras.activations.tanh,
    "sigmoid": keras.activations.sigmoid,
    "linear": keras.activations.linear,
}


def product(h: Tensor, kernel: Tensor) -> Tensor:
    """``h @ kernel``; tiny kernels as a fused product (``FUSED_PRODUCT_MAX_SIZE``)."""
    if math.prod(kernel.shape) <= FUSED_PRODUCT_MAX_SIZE:
        return ops.sum(h[..., :, None] * kernel, axis=-2)
    return ops.matmul(h, kernel)


@keras.saving.register_keras_serializable(package=PACKAGE)
class FRAECell(keras.layers.Layer):
    """One time step of the FRAE; every canonical weight is a variable of this layer."""

    def __init__(self, frae_config: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.frae_config = FRAEConfig.from_dict(frae_config)
        self.state_size = self.frae_config.feedback_dim
        self.output_size = self.frae_config.input_dim + self.frae_config.latent_dim

    def build(self, input_shape: Any) -> None:
        self.weights_by_name = {
            name: self.add_weight(shape=shape, initializer="zeros", name=variable_name(name))
            for name, shape in self.frae_config.parameter_shapes().items()
        }

    def dense_stack(self, layers: Iterable[Layer], h: Tensor) -> Tensor:
        """``h ← act(h @ kernel + bias)`` for each layer."""
        for layer in layers:
            pre = product(h, self.weights_by_name[layer.kernel])
            h = ACTIVATIONS[layer.activation](pre + self.weights_by_name[layer.bias])
        return h

    def gru_step(self, code: Tensor, state: Tensor) -> Tensor:
        """s_t from z_t and s_{t-1} (the contract's "State feedback"), blocks [r | p | n]:

        a = z_t K + b_K,  c = s_{t-1} U + b_U,  r = σ(a_r + c_r),  p = σ(a_p + c_p),
        n = tanh(a_n + r ⊙ c_n),  s_t = (1 − p) ⊙ n + p ⊙ s_{t-1}.
        """
        gru, weights = self.frae_config.gru, self.weights_by_name
        assert gru is not None  # stepped with state feedback alone
        width = gru.state_dim
        a = product(code, weights[gru.kernel]) + weights[gru.bias]
        c = product(state, weights[gru.recurrent_kernel]) + weights[gru.recurrent_bias]
        reset = ops.sigmoid(a[..., :width] + c[..., :width])
        update = ops.sigmoid(a[..., width : 2 * width] + c[..., width : 2 * width])
        candidate = ops.tanh(a[..., 2 * width :] + reset * c[..., 2 * width :])
        return (1.0 - update) * candidate + update * state

    def decode_step(self, code: Tensor, feedback: Tensor) -> tuple[Tensor, Tensor]:
        """``(x̂_t, what is fed back at t + 1)`` from z_t and the feedback."""
        if self.frae_config.gru is None:
            reconstruction = self.dense_stack(
                self.frae_config.decoder_layers, ops.concatenate([code, feedback], axis=-1)
            )
            return reconstruction, reconstruction
        state = self.gru_step(code, feedback)
        return self.dense_stack(self.frae_config.decoder_layers, state), state

    def round_code(self, code: Tensor) -> Tensor:
        """ẑ = Δ·clip(round(z / Δ), −Q, Q), round half to even, and straight through in the
        backward pass where ``|z / Δ| ≤ Q`` (the contract's "Quantized codes")."""
        step = self.frae_config.code_step
        if step is None:
            return code
        scaled = code / step
        grid = ops.clip(ops.round(scaled), -SYMBOL_LIMIT, SYMBOL_LIMIT) * step
        straight = ops.where(ops.abs(scaled) <= SYMBOL_LIMIT, code - ops.stop_gradient(code), 0.0)
        return ops.stop_gradient(grid) + straight

    def step(self, inputs: Tensor, feedback: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(x̂_t, ẑ_t, what is fed back at t + 1)`` from x_t and the feedback."""
        code = self.dense_stack(
            self.frae_config.encoder_layers, ops.concatenate([inputs, feedback], axis=-1)
        )
        code = self.round_code(code)
        reconstruction, fed_back = self.decode_step(code, feedback)
        return reconstruction, code, fed_back

    def call(self, inputs: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        reconstruction, code, fed_back = self.step(inputs, states[0])
        return ops.concatenate([reconstruction, code], axis=-1), [fed_back]

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "frae_config": self.frae_config.to_dict()}


@keras.saving.register_keras_serializable(package=PACKAGE)
class DecoderCell(keras.layers.Layer):
    """The decoder alone, on given codes, with the weights of an ``FRAECell``."""

    def __init__(self, cell: FRAECell, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell = cell
        self.state_size = cell.state_size
        self.output_size = cell.frae_config.input_dim

    def call(self, inputs: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        reconstruction, fed_back = self.cell.decode_step(self.cell.round_code(inputs), states[0])
        return reconstruction, [fed_back]


def unroll(
    config: FRAEConfig,
    weights: FRAECell,
    sequences: Tensor,
    *,
    codes_given: bool = False,
    state: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """The recurrence of the ``FRAECell`` ``weights`` over symbolic batch-major x (or with
    ``codes_given`` the codes z) from ``state`` (zeros for ``None``): ``(x̂, z, feedback)``,
    the feedback after the last step x̂_T (or s_T)."""
    initial_state = None if state is None else [state]
    if codes_given:
        loop = keras.layers.RNN(
            DecoderCell(weights), return_sequences=True, return_state=True, name="frae_decoder_rnn"
        )
        decoded, last = loop(sequences, initial_state=initial_state)
        return decoded, sequences, last
    loop = keras.layers.RNN(weights, return_sequences=True, return_state=True, name="frae_rnn")
    both, last = loop(sequences, initial_state=initial_state)
    return both[..., : config.input_dim], both[..., config.input_dim :], last


def build_models(config: FRAEConfig) -> tuple[keras.Model, keras.Model, keras.Model]:
    """The autoencoder ``[x, state] -> [x̂, feedback]``, its encoder ``[x, state] -> [z,
    feedback]`` and its decoder ``[z, state] -> [x̂, feedback]``, sharing one ``FRAECell``."""
    cell = FRAECell(config.to_dict(), name="frae_cell")
    sequences = keras.Input((None, config.input_dim), name="x")
    state = keras.Input((config.feedback_dim,), name="state")
    outputs, codes, last = unroll(config, cell, sequences, state=state)
    given = keras.Input((None, config.latent_dim), name="z")
    decoded, _, decoded_last = unroll(config, cell, given, codes_given=True, state=state)
    return (
        keras.Model([sequences, state], [outputs, last], name="frae"),
        keras.Model([sequences, state], [codes, last], name="frae_encoder"),
        keras.Model([given, state], [decoded, decoded_last], name="frae_decoder"),
    )
