"""Training in TensorFlow: the loss summed inside its own loop, its gradient through
``tf.GradientTape`` (TensorFlow's autodiff, or a backward pass written by hand that the tape
calls through ``tf.custom_gradient``), and the contract's SGD and Adam written out as
``tf.function`` bodies."""

from __future__ import annotations

from collections.abc import Callable

from frae import activations
from frae.config import FRAEConfig, Layer
from frae.optimizers import ADAM
from frae.params import Weights
from frae.training_state import MOMENTS, TrainingState
from impls.tf_while.model import ACTIVATIONS, Variables, make_cell, product, tf

Slots = dict[str, Variables]
"""Adam's state: ``"step"`` (a scalar ``count``), ``"m"`` and ``"v"`` by canonical name."""

Loss = Callable[[FRAEConfig, Variables, tf.Tensor, tf.Tensor], tf.Tensor]
"""``(config, variables, x, y) -> mean((x̂ - y)²)``, differentiable by ``tf.GradientTape``."""


def mean_squared_error(
    config: FRAEConfig, variables: Variables, x: tf.Tensor, y: tf.Tensor
) -> tf.Tensor:
    """mean((x̂ - y)²) over ``(B, T, F)``, each step's squares summed inside the loop.

    The loss is the only output, so no array of reconstructions crosses the loop and the
    loop's gradient reads nothing from one: differentiating through ``unroll`` instead,
    XLA copies the T-long gradient arrays of the outputs and codes at every backward step,
    and a step costs time proportional to T; summed inside, a step's cost is the same at
    every T (docs/performance.md). The sum is kept in float64, so adding T small terms one
    at a time loses nothing the float32 mean would keep.
    """
    cell = make_cell(config, variables)
    batch, steps = x.shape[0], x.shape[1]
    inputs = tf.transpose(x, [1, 0, 2])
    targets = tf.transpose(y, [1, 0, 2])

    def step(t: tf.Tensor, feedback: tf.Tensor, total: tf.Tensor) -> tuple[tf.Tensor, ...]:
        _, reconstruction, feedback = cell(inputs[t], feedback)
        squares = tf.reduce_sum(tf.square(reconstruction - targets[t]))
        return t + 1, feedback, total + tf.cast(squares, tf.float64)

    _, _, total = tf.while_loop(
        lambda t, *_: t < steps,
        step,
        (tf.constant(0), tf.zeros([batch, config.feedback_dim]), tf.constant(0.0, tf.float64)),
        maximum_iterations=steps,
    )
    return tf.cast(total / float(batch * steps * config.input_dim), tf.float32)


def activation_slope(name: str, pre: tf.Tensor, out: tf.Tensor) -> tf.Tensor:
    """d act(a) / da from the pre-activation ``a`` and the output ``act(a)``
    (``frae.activations``)."""
    return activations.activation_slope(name, pre, out, tf.sigmoid, tf.ones_like)


Records = dict[str, tuple[tf.Tensor, tf.Tensor]]
"""Layer name -> its input ``(T, B, fan_in)`` and its slope act'(a) ``(T, B, units)`` at
every step, time-major."""


def recorded_forward(
    config: FRAEConfig, weights: dict[str, tf.Tensor], x: tf.Tensor, y: tf.Tensor
) -> tuple[tf.Tensor, Records, tf.Tensor]:
    """The loss, as ``mean_squared_error`` sums it, and what the backward pass reads.

    Returns:
        ``(loss, records, d_outputs)``: the loss; each layer's inputs and slopes per step;
        the loss's own gradient at each x̂_t, 2(x̂_t − y_t)/(B·T·F), ``(T, B, F)``.
    """
    batch, steps = x.shape[0], x.shape[1]
    inputs = tf.transpose(x, [1, 0, 2])
    targets = tf.transpose(y, [1, 0, 2])
    scale = 2.0 / float(batch * steps * config.input_dim)
    layers = config.layers

    def through(side: tuple[Layer, ...], h: tf.Tensor, seen: dict[str, tf.Tensor]) -> tf.Tensor:
        for layer in side:
            pre = product(h, weights[layer.kernel]) + weights[layer.bias]
            out = ACTIVATIONS[layer.activation](pre)
            seen[layer.name + "/input"] = h
            seen[layer.name + "/slope"] = activation_slope(layer.activation, pre, out)
            h = out
        return h

    def step(
        t: tf.Tensor, feedback: tf.Tensor, total: tf.Tensor, arrays: dict[str, tf.TensorArray]
    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, dict[str, tf.TensorArray]]:
        seen: dict[str, tf.Tensor] = {}
        code = through(config.encoder_layers, tf.concat([inputs[t], feedback], 1), seen)
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
    """d loss / d weights of an output-feedback model by back-propagation through time,
    written out.

    One reverse loop over time carries only g = d loss / d x̂_t, ``(B, F)``: at step t the
    gradient reaching x̂_t is ``d_outputs[t] + g``; through each decoder layer, last first,
    d_pre = d_out · act'(a) and d_in = d_pre @ kernelᵀ; the z part of the decoder's d_in
    goes through the encoder the same way; the new g is the feedback rows' part of both
    (decoder rows L…, encoder rows F…). The loop emits each layer's d_pre per step. After
    it, each kernel's gradient is one product over all steps,
    Σ_{t,b} input[t,b]ᵀ d_pre[t,b], and each bias's Σ_{t,b} d_pre[t,b]: no weight gradient is
    accumulated inside the loop.
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
    """``mean_squared_error``'s value, with ``backward`` as its gradient: ``tf.custom_gradient``
    makes ``tf.GradientTape.gradient`` call it in place of TensorFlow's own. Output feedback
    only: ``recorded_forward`` and ``backward`` know no GRU."""
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


def loss_and_grads(
    config: FRAEConfig,
    variables: Variables,
    x: tf.Tensor,
    y: tf.Tensor,
    *,
    loss: Loss = mean_squared_error,
) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
    """``loss`` (by default ``mean_squared_error``) and its gradient through the whole loop,
    from ``tf.GradientTape``.

    ``variables`` may be tensors too (a data-parallel replica passes its copy's values).
    Raises ``ValueError`` at trace time, naming them, if the loss does not depend on some
    weights (the original failure would have been caught here).
    """
    with tf.GradientTape() as tape:
        tape.watch(variables)  # tensors; a trainable variable is watched anyway
        value = loss(config, variables, x, y)
    grads = tape.gradient(value, variables)
    disconnected = [name for name, grad in grads.items() if grad is None]
    if disconnected:
        raise ValueError(f"the loss does not depend on {disconnected}: no gradient for them")
    return value, grads


def flat_weights(variables: Variables) -> tf.Tensor:
    """Every weight in one vector, in canonical order (``frae.params.from_flat`` inverts it)."""
    return tf.concat([tf.reshape(v, [-1]) for v in variables.values()], axis=0)


def sgd_step(
    config: FRAEConfig,
    variables: Variables,
    x: tf.Tensor,
    y: tf.Tensor,
    lr: tf.Tensor,
    *,
    loss: Loss = mean_squared_error,
) -> tuple[tf.Tensor, tf.Tensor]:
    """w ← w − lr·g; returns the loss before the update and the weights after it.

    The weights come out as one more output of the step's program, which costs little, so
    that ``fit`` can keep them for a rollback: copying them into variables inside the
    program costs more (TensorFlow then updates the variables out of place), and reading ten
    variables between steps more still.
    """
    value, grads = loss_and_grads(config, variables, x, y, loss=loss)
    sgd_update(variables, grads, lr)
    return value, flat_weights(variables)


def sgd_update(variables: Variables, grads: dict[str, tf.Tensor], lr: tf.Tensor) -> None:
    """w ← w − lr·g, given the gradients (``sgd_step``'s update; a data-parallel step's,
    after the all-reduce)."""
    for name, grad in grads.items():
        variables[name].assign_sub(lr * grad)


def create_slots(variables: Variables) -> Slots:
    """Zeroed Adam state for ``variables``."""
    return {
        "step": {"count": tf.Variable(0.0)},
        "m": {name: tf.Variable(tf.zeros_like(v)) for name, v in variables.items()},
        "v": {name: tf.Variable(tf.zeros_like(v)) for name, v in variables.items()},
    }


def adam_step(
    config: FRAEConfig,
    variables: Variables,
    slots: Slots,
    x: tf.Tensor,
    y: tf.Tensor,
    lr: tf.Tensor,
    *,
    loss: Loss = mean_squared_error,
) -> tuple[tf.Tensor, tf.Tensor]:
    """The contract's Adam, w ← w − lr·m̂/(√v̂ + ε), written out (Keras' ``Adam`` would move
    ε inside); returns the loss before the update and the weights after it."""
    value, grads = loss_and_grads(config, variables, x, y, loss=loss)
    adam_update(variables, slots, grads, lr)
    return value, flat_weights(variables)


def adam_update(
    variables: Variables, slots: Slots, grads: dict[str, tf.Tensor], lr: tf.Tensor
) -> None:
    """The contract's Adam update given the gradients (``adam_step``'s; a data-parallel
    step's, after the all-reduce): one step more in ``slots``, m and v moved, w updated."""
    beta_1, beta_2 = (tf.constant(beta) for beta in ADAM.float32_betas())
    step = slots["step"]["count"].assign_add(1.0)
    first_correction = 1.0 - beta_1**step
    second_correction = 1.0 - beta_2**step
    for name, grad in grads.items():
        m = slots["m"][name].assign(beta_1 * slots["m"][name] + (1 - beta_1) * grad)
        v = slots["v"][name].assign(beta_2 * slots["v"][name] + (1 - beta_2) * tf.square(grad))
        update = (m / first_correction) / (tf.sqrt(v / second_correction) + ADAM.epsilon)
        variables[name].assign_sub(lr * update)


def resume_slots(slots: Slots, start: TrainingState) -> None:
    """``start``'s step and moments into Adam's ``slots`` (eagerly: on mirrored slots, every
    copy); ``start_fit`` zeroes them first."""
    slots["step"]["count"].assign(float(start.step))
    for moment in MOMENTS:
        for name, value in getattr(start, moment).items():
            slots[moment][name].assign(value)


def slot_moments(slots: Slots) -> tuple[Weights, Weights]:
    """Adam's m and v from ``slots``, by canonical name."""
    first, second = (
        {name: slot.numpy() for name, slot in slots[moment].items()} for moment in MOMENTS
    )
    return first, second


def start_fit(variables: Variables, *slots: Slots) -> tf.Tensor:
    """Fresh optimizer state (every slot of ``slots`` back to zero); returns W₁, the weights
    the ``fit`` starts from, as one vector (``flat_weights``)."""
    for group in (group for state in slots for group in state.values()):
        for slot in group.values():
            slot.assign(tf.zeros_like(slot))
    return flat_weights(variables)
