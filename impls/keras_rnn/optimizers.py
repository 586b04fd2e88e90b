"""keras_rnn's optimizers: Keras' SGD and Adam held to the contract (Adam's update with ε
where the contract puts it), keeping the weights ``fit`` may roll back to, and the canonical
training state (the contract's "Training state") moved into and out of them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from frae.backend import KEPT_SLOTS
from frae.optimizers import ADAM
from frae.params import Weights
from frae.training_state import TrainingState
from impls.keras_rnn.model import PACKAGE, Tensor, canonical_name, keras, ops, to_numpy

if TYPE_CHECKING:  # the optimizers the mixin joins, for the attributes it reads
    from keras.optimizers import Optimizer as OptimizerMixin
else:
    OptimizerMixin = object


class KeepsWeights(OptimizerMixin):
    """A Keras optimizer that also keeps, inside its compiled update, the weights after each
    step k (W_{k+1}) flat in row ``kept_slot(k + 1)`` of ``kept``, and counts in
    ``non_finite`` the updates that left a weight not finite: ``fit``'s rollback without a
    read of every variable between steps. W₁ goes in row 0 from outside.
    """

    def build(self, var_list: list[keras.Variable]) -> None:
        if self.built:
            return
        super().build(var_list)
        sizes = [math.prod(variable.shape) for variable in var_list]
        self.offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        self.kept = self.add_variable((KEPT_SLOTS, sum(sizes)), initializer="zeros", name="kept")
        self.non_finite = self.add_variable((), initializer="zeros", name="non_finite")
        # the iterations a resumed fit started from: its step k is iterations - resumed + 1
        self.resumed = self.add_variable((), initializer="zeros", name="resumed")

    def zero(self) -> None:
        """Every variable back to zero through a function compiled at the first call: eagerly,
        25 variables cost tens of µs each (docs/performance.md)."""
        if getattr(self, "_zeroing", None) is None:
            self._zeroing = self._compiled_zeroing()
        self._zeroing()

    def _compiled_zeroing(self) -> Callable[[], None]:
        """A ``tf.function``, or on JAX a jitted call making fresh zeros (Keras' step donates
        its buffers), then assigned; eager on torch."""
        variables = list(self.variables)
        backend = keras.backend.backend()
        if backend == "tensorflow":
            import tensorflow as tf

            return tf.function(lambda: _assign(variables, _zeros(variables)), autograph=False)
        if backend == "jax":
            import jax

            fresh = jax.jit(lambda: _zeros(variables))
            return lambda: _assign(variables, fresh())
        return lambda: _assign(variables, _zeros(variables))

    def update_step(
        self, gradient: Tensor, variable: keras.Variable, learning_rate: Tensor
    ) -> None:
        super().update_step(gradient, variable, learning_rate)
        after = ops.reshape(ops.convert_to_tensor(variable), (1, -1))
        # k + 1 = iterations - resumed + 2
        taken = ops.cast(self.iterations, "int32") - ops.cast(self.resumed, "int32")
        slot = 1 + ops.mod(taken + 2, 3)
        start = (slot, self.offsets[self._get_variable_index(variable)])
        self.assign(self.kept, ops.slice_update(ops.convert_to_tensor(self.kept), start, after))
        finite = ops.cast(ops.all(ops.isfinite(after)), "float32")
        self.assign_add(self.non_finite, 1.0 - finite)


@keras.saving.register_keras_serializable(package=PACKAGE)
class SpecSGD(KeepsWeights, keras.optimizers.SGD):
    """Keras' SGD, w ← w − lr·g, keeping the weights ``fit`` may roll back to."""


@keras.saving.register_keras_serializable(package=PACKAGE)
class SpecAdam(KeepsWeights, keras.optimizers.Adam):
    """Keras' Adam with the contract's update, w ← w − lr·m̂/(√v̂ + ε): Keras' own moves ε
    inside, m̂/(√v̂ + ε/√(1 - β₂ᵗ)). State and schedule are Keras'."""

    def __init__(self, **kwargs: Any) -> None:
        options = {"beta_1": ADAM.beta_1, "beta_2": ADAM.beta_2, "epsilon": ADAM.epsilon}
        super().__init__(**{**options, **kwargs})

    def update_step(
        self, gradient: Tensor, variable: keras.Variable, learning_rate: Tensor
    ) -> None:
        step = ops.cast(self.iterations + 1, variable.dtype)
        # 1 - β and 1 - βᵗ from the same float32 β, so they cancel exactly in m̂ and v̂.
        beta_1 = ops.cast(self.beta_1, variable.dtype)
        beta_2 = ops.cast(self.beta_2, variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, (gradient - m) * (1 - beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - beta_2))
        m_hat = m / (1 - ops.power(beta_1, step))
        v_hat = v / (1 - ops.power(beta_2, step))
        lr = ops.cast(learning_rate, variable.dtype)
        self.assign_sub(variable, lr * m_hat / (ops.sqrt(v_hat) + self.epsilon))


def _zeros(variables: list[keras.Variable]) -> list[Tensor]:
    return [ops.zeros(variable.shape, variable.dtype) for variable in variables]


def _assign(variables: list[keras.Variable], values: list[Tensor]) -> None:
    for variable, value in zip(variables, values, strict=True):
        variable.assign(value)


def resume(optimizer: keras.optimizers.Optimizer, start: TrainingState) -> None:
    """``start``'s step and moments into Keras' ``optimizer`` (built, its variables zeroed)."""
    optimizer.iterations.assign(start.step)
    optimizer.resumed.assign(float(start.step))
    for moment, slots in _moment_slots(optimizer).items():
        for name, slot in slots.items():
            slot.assign(getattr(start, moment)[name])


def moments(optimizer: keras.optimizers.Optimizer) -> tuple[Weights, Weights]:
    """Adam's m and v of every trained variable, by canonical name; empty for SGD."""
    found = {
        moment: {name: to_numpy(slot.value) for name, slot in slots.items()}
        for moment, slots in _moment_slots(optimizer).items()
    }
    return found.get("m", {}), found.get("v", {})


def _moment_slots(optimizer: keras.optimizers.Optimizer) -> dict[str, dict[str, Any]]:
    """Keras' Adam slots by moment and trained variable's canonical name (none for SGD)."""
    if not isinstance(optimizer, keras.optimizers.Adam):
        return {}
    indices = {
        canonical_name(variable): optimizer._get_variable_index(variable)
        for variable in optimizer._trainable_variables
    }
    return {
        "m": {name: optimizer._momentums[index] for name, index in indices.items()},
        "v": {name: optimizer._velocities[index] for name, index in indices.items()},
    }
