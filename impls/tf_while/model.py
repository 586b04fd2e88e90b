"""The FRAE recurrence in TensorFlow: the cell and ``tf.while_loop`` over time, XLA-compiled.

The feedback (x̂_{t-1}, or the GRU state s_{t-1}) is a loop variable of the
``tf.while_loop``, never an attribute, and every ``TensorArray.write`` result is reassigned:
the two mistakes that disconnect the loss from the weights ("No gradients provided for any
variable") cannot happen here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from frae import routes
from frae.config import FUSED_PRODUCT_MAX_SIZE, GRU, FRAEConfig, Layer
from frae.quantization import SYMBOL_LIMIT
from frae.quiet import import_quietly

LOOP_FOLDING = routes.fold_xla_loops()
"""XLA's loop folding (``frae.routes``), set before TensorFlow compiles its first XLA
function: a gradient's loop then runs as one kernel, not one per fusion and step."""

if TYPE_CHECKING:
    import tensorflow as tf
else:  # device discovery, with its CUDA probe, happens in list_logical_devices
    tf = import_quietly("tensorflow", lambda tf: tf.config.list_logical_devices())

ACTIVATIONS = {"swish": tf.nn.silu, "tanh": tf.tanh, "sigmoid": tf.sigmoid, "linear": tf.identity}


Variables = dict[str, tf.Variable]


def create_variables(config: FRAEConfig) -> Variables:
    """One ``tf.Variable`` per canonical name, kernels (in, out), used as ``h @ kernel + bias``."""
    return {
        name: tf.Variable(tf.zeros(shape), name=name.replace("/", "_"))
        for name, shape in config.parameter_shapes().items()
    }


def product(h: tf.Tensor, kernel: tf.Tensor) -> tf.Tensor:
    """``h @ kernel`` for ``(B, in)`` by ``(in, out)``; tiny kernels as a fused product."""
    if kernel.shape.num_elements() <= FUSED_PRODUCT_MAX_SIZE:
        return tf.reduce_sum(h[:, :, None] * kernel, axis=1)
    return tf.matmul(h, kernel)


def dense_stack(weights: dict[str, tf.Tensor], layers: Iterable[Layer], h: tf.Tensor) -> tf.Tensor:
    """``h ← act(h @ kernel + bias)`` for each layer."""
    for layer in layers:
        h = ACTIVATIONS[layer.activation](product(h, weights[layer.kernel]) + weights[layer.bias])
    return h


def gru_step(
    weights: dict[str, tf.Tensor], gru: GRU, code: tf.Tensor, state: tf.Tensor
) -> tf.Tensor:
    """s_t from z_t and s_{t-1} (the contract's "State feedback"), column blocks [r | p | n]:

    a = z_t K + b_K;  c = s_{t-1} U + b_U;  r = σ(a_r + c_r);  p = σ(a_p + c_p);
    n = tanh(a_n + r ⊙ c_n);  s_t = (1 − p) ⊙ n + p ⊙ s_{t-1}.
    """
    a = product(code, weights[gru.kernel]) + weights[gru.bias]
    c = product(state, weights[gru.recurrent_kernel]) + weights[gru.recurrent_bias]
    a_reset, a_update, a_candidate = tf.split(a, 3, axis=1)
    c_reset, c_update, c_candidate = tf.split(c, 3, axis=1)
    reset = tf.sigmoid(a_reset + c_reset)
    update = tf.sigmoid(a_update + c_update)
    candidate = tf.tanh(a_candidate + reset * c_candidate)
    return (1.0 - update) * candidate + update * state


def quantize(code: tf.Tensor, code_step: float) -> tf.Tensor:
    """ẑ = Δ·clip(round(z / Δ), −Q, Q), round half to even, and straight through in the
    backward pass where ``|z / Δ| ≤ Q`` (the contract's "Quantized codes")."""
    scaled = code / code_step
    grid = tf.clip_by_value(tf.round(scaled), -SYMBOL_LIMIT, SYMBOL_LIMIT) * code_step
    inside = tf.cast(tf.abs(scaled) <= SYMBOL_LIMIT, code.dtype)
    return tf.stop_gradient(grid) + (code - tf.stop_gradient(code)) * inside


Step = tuple[tf.Tensor, tf.Tensor, tf.Tensor]
Cell = Callable[[tf.Tensor, tf.Tensor], Step]
"""``(fresh, feedback) -> (z_t, x̂_t, feedback_t)``: one time step, ``fresh`` being x_t or a
given z_t, the feedback x̂ (output feedback, where ``feedback_t`` is x̂_t) or the GRU state s."""


def make_cell(config: FRAEConfig, variables: Variables, *, codes_given: bool = False) -> Cell:
    """One time step, the weights read here, outside the loop: a read inside the body would
    be saved T times by the loop's gradient."""
    weights = {name: tf.convert_to_tensor(variable) for name, variable in variables.items()}
    gru = config.gru

    def encode(fresh: tf.Tensor, feedback: tf.Tensor) -> tf.Tensor:
        if not codes_given:
            fresh = dense_stack(weights, config.encoder_layers, tf.concat([fresh, feedback], 1))
        return fresh if config.code_step is None else quantize(fresh, config.code_step)

    def output_feedback_cell(fresh: tf.Tensor, feedback: tf.Tensor) -> Step:
        code = encode(fresh, feedback)
        reconstruction = dense_stack(weights, config.decoder_layers, tf.concat([code, feedback], 1))
        return code, reconstruction, reconstruction

    def state_feedback_cell(fresh: tf.Tensor, state: tf.Tensor) -> Step:
        assert gru is not None
        code = encode(fresh, state)
        state = gru_step(weights, gru, code, state)
        return code, dense_stack(weights, config.decoder_layers, state), state

    return output_feedback_cell if gru is None else state_feedback_cell


def unroll(
    config: FRAEConfig,
    weights: Variables,
    sequences: tf.Tensor,
    *,
    codes_given: bool = False,
    state: tf.Tensor | None = None,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Run the recurrence from ``state`` over batch-major ``sequences`` (static shape).

    Args:
        sequences: ``(B, T, F)`` inputs x, or ``(B, T, L)`` codes z if ``codes_given``.
        state: the feedback entering the first step ``(B, S)``; ``None``: zeros.

    Returns:
        ``(x̂, z, feedback)``: batch-major ``(B, T, F)`` and ``(B, T, L)``, and the feedback
        after the last step, x̂_T (or s_T), ``(B, S)``.
    """
    cell = make_cell(config, weights, codes_given=codes_given)
    batch, steps = sequences.shape[0], sequences.shape[1]
    inputs = tf.TensorArray(tf.float32, size=steps).unstack(tf.transpose(sequences, [1, 0, 2]))
    outputs = tf.TensorArray(tf.float32, size=steps)
    codes = tf.TensorArray(tf.float32, size=steps)

    def step(
        t: tf.Tensor, feedback: tf.Tensor, outputs: tf.TensorArray, codes: tf.TensorArray
    ) -> tuple[tf.Tensor, tf.Tensor, tf.TensorArray, tf.TensorArray]:
        code, reconstruction, feedback = cell(inputs.read(t), feedback)
        return t + 1, feedback, outputs.write(t, reconstruction), codes.write(t, code)

    if state is None:
        state = tf.zeros([batch, config.feedback_dim])
    _, feedback, outputs, codes = tf.while_loop(
        lambda t, *_: t < steps,
        step,
        (tf.constant(0), state, outputs, codes),
        maximum_iterations=steps,  # a static trip count: XLA needs it to compile the loop
    )
    return (
        tf.transpose(outputs.stack(), [1, 0, 2]),
        tf.transpose(codes.stack(), [1, 0, 2]),
        feedback,
    )
