"""Training in TensorFlow: the loss summed inside its own loop, its gradient through
``tf.GradientTape``, and the contract's SGD and Adam written out as ``tf.function`` bodies."""

from __future__ import annotations

import math
from collections.abc import Callable

from frae.codec.rate import FLOOR_BITS
from frae.config import PRIOR_LOCATION, PRIOR_LOG_SCALE, FRAEConfig
from frae.optimizers import ADAM
from frae.params import Weights
from frae.training_state import MOMENTS, TrainingState
from impls.tf_while.model import Variables, make_cell, tf

Slots = dict[str, Variables]
"""Adam's state: ``"step"`` (a scalar ``count``), ``"m"`` and ``"v"`` by canonical name."""

Loss = Callable[[FRAEConfig, Variables, tf.Tensor, tf.Tensor], tf.Tensor]
"""``(config, variables, x, y) -> loss``, differentiable by ``tf.GradientTape``."""


def symbol_bits(
    codes: tf.Tensor, location: tf.Tensor, log_scale: tf.Tensor, code_step: float
) -> tf.Tensor:
    """Each code's bits under the learned prior (the contract's "Rate: training the codec for
    its bits"), codes u (…, L), μ and ρ (L,), c = Δ·e^−ρ::

        a = (u − μ + Δ/2)·e^−ρ,   b = (u − μ − Δ/2)·e^−ρ
        min(P, −log2 p),   log p = log σ(a) + log σ(−b) + log(−expm1(−c))

    the product's form, no cancellation in either tail. A floored symbol passes no gradient
    to μ, ρ or u: its bits are the constant P, and its slopes are taken at the prior's centre
    with s = 1, all finite, where its own could overflow (a code far out under a tiny scale,
    or Δ/s rounding to 0 under a huge one) and make the zero they meet NaN.
    """
    centred = codes - location
    log_scale = log_scale + tf.zeros_like(centred)
    floored = _information(centred, log_scale, code_step) > FLOOR_BITS
    safe_centred, safe_log_scale = (
        tf.where(floored, tf.zeros_like(value), value) for value in (centred, log_scale)
    )
    kept = _information(safe_centred, safe_log_scale, code_step)
    return tf.where(floored, float(FLOOR_BITS), kept)


def _information(centred: tf.Tensor, log_scale: tf.Tensor, code_step: float) -> tf.Tensor:
    """−log2 p of the codes at ``centred`` = u − μ, unfloored; 1/s = e^−ρ multiplies, as a
    quotient's slope in s (over s²) would overflow first."""
    inverse_scale = tf.exp(-log_scale)
    a = (centred + code_step / 2) * inverse_scale
    b = (centred - code_step / 2) * inverse_scale
    mass = -tf.math.expm1(-code_step * inverse_scale)
    log_p = tf.math.log_sigmoid(a) + tf.math.log_sigmoid(-b) + tf.math.log(mass)
    return -log_p / math.log(2.0)


def distortion_and_rate(
    config: FRAEConfig, variables: Variables, x: tf.Tensor, y: tf.Tensor
) -> tf.Tensor:
    """mean((x̂ − y)²) over ``(B, T, F)``, plus, with a rate weight λ, λ·mean over ``(B, T)``
    of bits_t = Σ_l ``symbol_bits`` of ẑ_t (the cell's code, straight through to z_t).

    Each step's squares (and bits) are summed inside the loop, in float64: through
    ``unroll``'s T-long outputs XLA copies their gradient at every backward step, so a step
    would cost time proportional to T (docs/performance.md).
    """
    cell = make_cell(config, variables)
    batch, steps = x.shape[0], x.shape[1]
    inputs = tf.transpose(x, [1, 0, 2])
    targets = tf.transpose(y, [1, 0, 2])
    # μ and ρ read outside the loop, as make_cell reads the weights
    prior = {name: tf.convert_to_tensor(variables[name]) for name in config.prior_parameters}
    code_step, rate_weight = config.code_step or 0.0, config.rate_weight or 0.0

    def step(t: tf.Tensor, feedback: tf.Tensor, *totals: tf.Tensor) -> tuple[tf.Tensor, ...]:
        code, reconstruction, feedback = cell(inputs[t], feedback)
        sums = [tf.reduce_sum(tf.square(reconstruction - targets[t]))]
        if prior:
            location, log_scale = prior[PRIOR_LOCATION], prior[PRIOR_LOG_SCALE]
            sums.append(tf.reduce_sum(symbol_bits(code, location, log_scale, code_step)))
        added = [sum_ + tf.cast(part, tf.float64) for sum_, part in zip(totals, sums, strict=True)]
        return t + 1, feedback, *added

    zero = tf.constant(0.0, tf.float64)
    totals = (zero, zero) if prior else (zero,)  # Σ squares, and Σ bits with a prior
    _, _, *totals = tf.while_loop(
        lambda t, *_: t < steps,
        step,
        (tf.constant(0), tf.zeros([batch, config.feedback_dim]), *totals),
        maximum_iterations=steps,
    )
    loss = totals[0] / float(batch * steps * config.input_dim)
    if prior:
        loss += rate_weight * totals[1] / float(batch * steps)
    return tf.cast(loss, tf.float32)


def loss_and_grads(
    config: FRAEConfig,
    variables: Variables,
    x: tf.Tensor,
    y: tf.Tensor,
    *,
    loss: Loss = distortion_and_rate,
) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
    """``loss`` and its gradient from ``tf.GradientTape``; ``variables`` may be tensors (a
    replica's values). Raises ``ValueError`` at trace time, naming the weights the loss does
    not depend on."""
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


def train_step(
    config: FRAEConfig,
    variables: Variables,
    slots: Slots | None,
    x: tf.Tensor,
    y: tf.Tensor,
    lr: tf.Tensor,
    *,
    loss: Loss = distortion_and_rate,
) -> tuple[tf.Tensor, tf.Tensor]:
    """One step of SGD, or of the contract's Adam given its ``slots``; returns the loss
    before the update and the weights after it, an output of the program for ``fit``'s
    rollback (cheaper than copying into variables)."""
    value, grads = loss_and_grads(config, variables, x, y, loss=loss)
    if slots is None:
        sgd_update(variables, grads, lr)
    else:
        adam_update(variables, slots, grads, lr)
    return value, flat_weights(variables)


def sgd_update(variables: Variables, grads: dict[str, tf.Tensor], lr: tf.Tensor) -> None:
    """w ← w − lr·g, given the gradients."""
    for name, grad in grads.items():
        variables[name].assign_sub(lr * grad)


def create_slots(variables: Variables) -> Slots:
    """Zeroed Adam state for ``variables``."""
    return {
        "step": {"count": tf.Variable(0.0)},
        "m": {name: tf.Variable(tf.zeros_like(v)) for name, v in variables.items()},
        "v": {name: tf.Variable(tf.zeros_like(v)) for name, v in variables.items()},
    }


def adam_update(
    variables: Variables, slots: Slots, grads: dict[str, tf.Tensor], lr: tf.Tensor
) -> None:
    """The contract's Adam, w ← w − lr·m̂/(√v̂ + ε), written out (Keras' ``Adam`` would move
    ε inside), given the gradients."""
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
    """``start``'s step and moments into Adam's ``slots`` (eagerly: every mirrored copy)."""
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
    """Every slot of ``slots`` back to zero; returns W₁ as one vector (``flat_weights``)."""
    for group in (group for state in slots for group in state.values()):
        for slot in group.values():
            slot.assign(tf.zeros_like(slot))
    return flat_weights(variables)
