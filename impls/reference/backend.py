"""``ReferenceBackend``: the contract in float64 NumPy with hand-written gradients."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from frae.backend import Array, BaseBackend, TrainStep
from frae.params import Weights
from impls.reference import model

ADAM_BETA_1 = 0.9
ADAM_BETA_2 = 0.999
ADAM_EPSILON = 1e-7


class ReferenceBackend(BaseBackend):
    """Exact and slow: every other backend is compared with this one.

    Weights are float32 values, as everywhere (the exchange format, so a round trip through
    ``get_weights`` changes nothing), but every computation on them is float64: outputs,
    losses, gradients and optimizer state carry no float32 rounding, and each update is
    computed in float64 and then rounded to float32, as a float32 weight would be.
    """

    name = "reference"
    compute_dtype = np.float64

    def _build(self, weights: Weights) -> None:
        self._write_weights(weights)

    def _read_weights(self) -> Mapping[str, Any]:
        return self._params

    def _write_weights(self, weights: Weights) -> None:
        self._params = {name: value.astype(np.float64) for name, value in weights.items()}

    def _predict(self, x: Array) -> Array:
        return model.run(self._params, self.config, x=x)[0]

    def _encode(self, x: Array) -> Array:
        return model.run(self._params, self.config, x=x)[1]

    def _decode(self, z: Array) -> Array:
        return model.run(self._params, self.config, z=z)[0]

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        return model.loss_and_grads(self._params, self.config, x, y)

    @staticmethod
    def adam_direction(m_hat: Array, v_hat: Array, count: int) -> Array:
        """m̂/(√v̂ + ε): where SPEC puts ε (``count``, the step, is for other placements)."""
        return m_hat / (np.sqrt(v_hat) + ADAM_EPSILON)

    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        """SGD, w ← w - lr·g; or Adam with ε outside the square root, exactly as SPEC."""
        first = {name: np.zeros_like(value) for name, value in self._params.items()}
        second = {name: np.zeros_like(value) for name, value in self._params.items()}
        count = 0

        def step(x: Array, y: Array) -> float:
            nonlocal count
            loss, grads = model.loss_and_grads(self._params, self.config, x, y)
            count += 1
            for name, grad in grads.items():
                if optimizer == "sgd":
                    update = grad
                else:
                    first[name] = ADAM_BETA_1 * first[name] + (1 - ADAM_BETA_1) * grad
                    second[name] = ADAM_BETA_2 * second[name] + (1 - ADAM_BETA_2) * grad**2
                    m_hat = first[name] / (1 - ADAM_BETA_1**count)
                    v_hat = second[name] / (1 - ADAM_BETA_2**count)
                    update = self.adam_direction(m_hat, v_hat, count)
                updated = self._params[name] - learning_rate * update
                self._params[name] = updated.astype(np.float32).astype(np.float64)
            return loss

        return step
