"""Implementations broken on purpose, one realistic mistake each, to prove the suite fails.

Each mutant names in ``breaks`` the property (``parity_tests.properties``) whose tests must
reject it; ``Float32Reference``, the reference with float32 results, is their control.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from frae import gru_layout, validation
from frae.backend import Array, Infer, Moments, TrainStep
from frae.config import GRU, FRAEConfig
from frae.optimizers import ADAM
from frae.params import Weights
from frae.training_state import TrainingState
from impls.reference import train
from impls.reference.backend import ReferenceBackend
from impls.reference.model import Params, unroll


def _float32(streamed: tuple[Array, Array]) -> tuple[Array, Array]:
    """A call's outputs and last state rounded to float32, as a float32 port returns them."""
    outputs, last = streamed
    return outputs.astype(np.float32), last.astype(np.float32)


def float32_unroll(
    config: FRAEConfig, params: Params, sequences: Array, state: Array, **options: Any
) -> tuple[Array, Array]:
    """``unroll``'s outputs and last state from ``state``, rounded to float32."""
    outputs, _, last = unroll(config, params, sequences, state=state, **options)
    return _float32((outputs, last))


def _step_by_step(infer: Infer, sequences: Array, state: Array) -> tuple[Array, Array]:
    """``infer`` on each step alone, from the zero state every time: the feedback cut off."""
    steps = [
        infer(sequences[:, t : t + 1], np.zeros_like(state)) for t in range(sequences.shape[1])
    ]
    return np.concatenate([outputs for outputs, _ in steps], axis=1), steps[-1][1]


class Float32Reference(ReferenceBackend):
    """The control: the reference with float32 outputs, codes and gradients."""

    name = "float32_reference"
    breaks: ClassVar[str | None] = None

    def _unroll(self, sequences: Array, state: Array, **options: Any) -> tuple[Array, Array, Array]:
        """The reference's ``unroll`` of this model, which ``predict``, ``encode`` and
        ``decode`` all run: a mutant of all three changes it here."""
        return unroll(self.config, self.params, sequences, state=state, **options)

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        outputs, _, last = self._unroll(x, state)
        return _float32((outputs, last))

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        _, codes, last = self._unroll(x, state)
        return _float32((codes, last))

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        outputs, _, last = self._unroll(z, state, codes_given=True)
        return _float32((outputs, last))

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = super()._loss_and_grads(x, y)
        return loss, {name: grad.astype(np.float32) for name, grad in grads.items()}


class FeedbackCutOff(Float32Reference):
    """Every step sees x̂_{t-1} = 0: the feedback never reaches the next step."""

    breaks = "outputs"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        return _step_by_step(super()._predict, x, state)


class OutputsShiftedByOneStep(Float32Reference):
    """Returns the feedback x̂_{t-1} at step t instead of x̂_t (an off-by-one in the loop)."""

    breaks = "outputs"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        outputs, last = super()._predict(x, state)
        return np.concatenate([np.zeros_like(outputs[:, :1]), outputs[:, :-1]], axis=1), last


class Float16Inside(Float32Reference):
    """Weights rounded to float16 inside the computation (a mixed-precision default)."""

    breaks = "outputs"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        rounded = {k: v.astype(np.float16).astype(np.float64) for k, v in self.params.items()}
        return float32_unroll(self.config, rounded, x, state)


class CodesOfFirstSequence(Float32Reference):
    """``encode`` broadcasts the first sequence's codes over the batch (an axis mix-up)."""

    breaks = "codes"

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        codes, last = super()._encode(x, state)
        return np.broadcast_to(codes[:1], codes.shape).copy(), last


class DecoderWithoutFeedback(Float32Reference):
    """``decode`` forgets its own feedback: each step starts from x̂_{t-1} = 0."""

    breaks = "decoder"

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        return _step_by_step(super()._decode, z, state)


class LossSummed(Float32Reference):
    """The loss (and so its gradient) summed over elements instead of averaged."""

    breaks = "loss"

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = super()._loss_and_grads(x, y)
        return loss * x.size, {name: grad * x.size for name, grad in grads.items()}


class TargetIgnored(Float32Reference):
    """``loss_and_grads(x, y)`` compares with x whatever y is (autoencoding hard-wired)."""

    breaks = "loss"

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        return super()._loss_and_grads(x, x)


class GradientOfOneParameterMissing(Float32Reference):
    """No gradient reaches ``encoder/latent/bias`` (a stop-gradient left in)."""

    breaks = "gradients"

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = super()._loss_and_grads(x, y)
        return loss, {**grads, "encoder/latent/bias": np.zeros_like(grads["encoder/latent/bias"])}


class StateCarriedOver(Float32Reference):
    """The previous call's sequence seeds the next call's feedback (state kept on self)."""

    breaks = "stateless"
    _previous: Array | None = None

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        previous, self._previous = self._previous, x
        if previous is None or len(previous) != len(x):
            return super()._predict(x, state)
        outputs, last = super()._predict(np.concatenate([previous, x], axis=1), state)
        return outputs[:, -x.shape[1] :], last


class SingleSequenceKeepsBatchAxis(Float32Reference):
    """A 2-D sequence comes back 3-D, (1, T, F)."""

    breaks = "shapes"

    def predict(self, x: Array, **stream: Any) -> Any:
        outputs = super().predict(x, **stream)
        return outputs[None] if np.ndim(x) == 2 and not stream else outputs


class NaNReplaced(Float32Reference):
    """NaN and infinity silently replaced by numbers instead of rejected."""

    breaks = "bad_input"

    def _sequences(self, value: object, name: str, width: int) -> tuple[Array, bool]:
        if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
            value = np.nan_to_num(value)
        return super()._sequences(value, name, width)


class WeightsAssignedBeforeChecking(Float32Reference):
    """``set_weights`` assigns every well-shaped entry, then raises on the bad one."""

    breaks = "bad_input"

    def set_weights(self, weights: Mapping[str, Array]) -> None:
        if isinstance(weights, Mapping):
            current = self.get_weights()
            for name, value in weights.items():
                if name in current and np.shape(value) == current[name].shape:
                    current[name] = np.asarray(value, np.float32)
            self._write_weights(current)
        super().set_weights(weights)


class BiasDrawnBeforeKernel(Float32Reference):
    """Initial weights drawn bias first, then kernel, for each layer."""

    breaks = "initial_weights"

    def __init__(self, config: Any = None, *, seed: int = 0, weights: Any = None) -> None:
        super().__init__(config, seed=seed, weights=weights)
        if weights is None:
            rng = np.random.default_rng(seed)
            shapes = self.config.parameter_shapes()
            layers = dict.fromkeys(name.rpartition("/")[0] for name in shapes)
            names = [f"{layer}/{part}" for layer in layers for part in ("bias", "kernel")]
            drawn = {name: rng.normal(0.0, 0.05, shapes[name]).astype(np.float32) for name in names}
            self._write_weights(drawn)


class SquareKernelsTransposedOnImport(Float32Reference):
    """``set_weights`` stores square kernels transposed: the shape check cannot see it."""

    breaks = "round_trip"

    def set_weights(self, weights: Mapping[str, Array]) -> None:
        checked = validation.check_weights(weights, self.config.parameter_shapes())
        self._write_weights({k: v.T if v.shape == v.shape[::-1] else v for k, v in checked.items()})


class LossReportedAfterUpdate(Float32Reference):
    """``fit`` reports each step's loss after its SGD update instead of before it."""

    breaks = "sgd"

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        step, moments = super()._train_step(optimizer, learning_rate, start)

        def after(x: Array, y: Array) -> float:
            step(x, y)
            return train.loss_and_grads(self.config, self.params, x, y)[0]

        return after, moments


class KerasEpsilonAdam(Float32Reference):
    """Adam with ε where Keras' Adam puts it: m̂/(√v̂ + ε/√(1 - β₂ᵗ))."""

    breaks = "adam"

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        if optimizer != "adam":
            return super()._train_step(optimizer, learning_rate, start)
        first = {name: np.array(start.m[name], np.float64) for name in self.params}
        second = {name: np.array(start.v[name], np.float64) for name in self.params}
        count = start.step

        def step(x: Array, y: Array) -> float:
            nonlocal count
            loss, grads = train.loss_and_grads(self.config, self.params, x, y)
            count += 1
            epsilon = ADAM.epsilon / np.sqrt(1 - ADAM.beta_2**count)
            for name, grad in grads.items():
                first[name] = ADAM.beta_1 * first[name] + (1 - ADAM.beta_1) * grad
                second[name] = ADAM.beta_2 * second[name] + (1 - ADAM.beta_2) * grad**2
                m_hat = first[name] / (1 - ADAM.beta_1**count)
                v_hat = second[name] / (1 - ADAM.beta_2**count)
                updated = self.params[name] - learning_rate * m_hat / (np.sqrt(v_hat) + epsilon)
                self.params[name] = updated.astype(np.float32).astype(np.float64)
            return loss

        return step, lambda: (train.as_float32(first), train.as_float32(second))


class FitWithoutUpdate(Float32Reference):
    """``fit`` computes and reports losses but never applies the update."""

    breaks = "learning"

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        def loss(x: Array, y: Array) -> float:
            return train.loss_and_grads(self.config, self.params, x, y)[0]

        return loss, lambda: (start.m, start.v)


class WeightsStaleAfterFit(Float32Reference):
    """``get_weights`` returns a copy cached at the last ``set_weights``, not what fit trained."""

    breaks = "transfer"

    def _write_weights(self, weights: Weights) -> None:
        super()._write_weights(weights)
        self._cached = {name: value.copy() for name, value in weights.items()}

    def _read_weights(self) -> Mapping[str, Any]:
        return self._cached


class HiddenActivationFixedToSwish(Float32Reference):
    """Hidden layers use swish whatever ``config.activation`` says (the default hard-wired)."""

    breaks = "random_configs"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        config = dataclasses.replace(self.config, activation="swish")
        return float32_unroll(config, self.params, x, state)


class RollbackOffByOneStep(Float32Reference):
    """A diverged ``fit`` puts back the weights before step k, those that gave the non-finite
    loss, instead of the weights before step k - 1."""

    breaks = "divergence"

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        return super()._weights_before(step + 1)


class PredictWritesBackItsWeights(Float32Reference):
    """No lock, and ``predict`` writes back the weights it read once it is done, as Keras'
    JAX ``predict_on_batch`` writes back its state: a ``set_weights`` meanwhile is undone."""

    breaks = "threads"

    def __init__(self, config: Any = None, *, seed: int = 0, weights: Any = None) -> None:
        super().__init__(config, seed=seed, weights=weights)
        self._lock = contextlib.nullcontext()  # type: ignore[assignment]

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        params = self.params
        time.sleep(0.002)  # the computation, while another thread may run
        result = float32_unroll(self.config, params, x, state)
        self.params = params
        return result


class ReadOnlyOutputs(Float32Reference):
    """Outputs handed out as read-only views of the computation's buffers."""

    breaks = "shapes"

    @staticmethod
    def _unbatch(batch: Any, single: bool) -> Array:
        array = np.asarray(batch)
        array.flags.writeable = False
        return array[0] if single else array


class GateBlocksSwappedOnImport(Float32Reference):
    """Canonical GRU weights read as Keras' gate order on import, and written back the same
    way: a round trip is exact, but the model computes with reset and update exchanged."""

    breaks = "transfer"

    def _write_weights(self, weights: Weights) -> None:
        gru = self.config.gru
        if gru is not None:  # the canonical arrays taken for Keras' [z | r | h]
            keras_weights = gru_layout.to_keras(gru, weights, gates=GRU.GATES)
            weights = {**weights, **gru_layout.from_keras(gru, keras_weights)}
        super()._write_weights(weights)

    def _read_weights(self) -> Mapping[str, Any]:
        gru = self.config.gru
        weights = super()._read_weights()
        if gru is None:
            return weights
        keras_weights = gru_layout.to_keras(gru, weights)
        return {**weights, **gru_layout.from_keras(gru, keras_weights, gates=GRU.GATES)}


MUTANTS = [
    cls
    for cls in list(globals().values())
    if isinstance(cls, type)
    and issubclass(cls, Float32Reference)
    and cls.breaks is not None
    and cls.__module__ == __name__
]
