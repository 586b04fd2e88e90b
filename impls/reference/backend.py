"""``ReferenceBackend``: the contract in float64 NumPy, its gradients written out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from frae.backend import Array, BaseBackend, Moments, TrainStep, kept_slot
from frae.params import Weights
from frae.training_state import TrainingState
from impls.reference import train
from impls.reference.model import Params, unroll


class ReferenceBackend(BaseBackend):
    """Exact and slow: every other backend is compared with this one. Weights are float32
    values, as everywhere, but every computation on them is float64, each update rounded to
    float32 as a float32 weight would be."""

    name = "reference"
    compute_dtype = np.float64

    def _build(self, weights: Weights) -> None:
        self._write_weights(weights)

    def _read_weights(self) -> Mapping[str, Any]:
        return self.params

    def _write_weights(self, weights: Weights) -> None:
        self.params: Params = {name: value.astype(np.float64) for name, value in weights.items()}

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        outputs, _, last = unroll(self.config, self.params, x, state=state)
        return outputs, last

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        _, codes, last = unroll(self.config, self.params, x, state=state)
        return codes, last

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        outputs, _, last = unroll(self.config, self.params, z, codes_given=True, state=state)
        return outputs, last

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        return train.loss_and_grads(self.config, self.params, x, y)

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        return train.train_step(self.config, self.params, optimizer, learning_rate, start)

    def _keep_weights(self, step: int) -> None:
        """A copy of the dict: a step replaces its arrays and never writes in place."""
        self._kept[kept_slot(step)] = dict(self.params)
