"""``JaxScanBackend``: the contract in JAX, Flax NNX modules stepped by ``jax.lax.scan``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from frae.backend import Array, BaseBackend, TrainStep
from frae.params import Weights
from impls.jax_scan import model


class JaxScanBackend(BaseBackend):
    """float32 throughout; the weights stay on the default device between calls.

    Each call hands the jitted function the NumPy input (its one host-to-device transfer)
    and returns the device result, which the base class converts to NumPy once. The jitted
    functions belong to the config (``model.compiled``), so backends of one config share
    their compiled code. Adam is optax's, which places ε outside the square root as SPEC.
    """

    name = "jax_scan"

    def _build(self, weights: Weights) -> None:
        self._compiled = model.compiled(self.config)
        self._write_weights(weights)

    def _read_weights(self) -> Mapping[str, Any]:
        # in canonical order: a dict that went through jit comes back with its keys sorted
        return {name: self._params[name] for name in self.config.parameter_shapes()}

    def _write_weights(self, weights: Weights) -> None:
        self._params: model.Params = {
            name: jax.device_put(value) for name, value in weights.items()
        }

    def _predict(self, x: Array) -> Any:
        return self._compiled.predict(self._params, x)

    def _encode(self, x: Array) -> Any:
        return self._compiled.encode(self._params, x)

    def _decode(self, z: Array) -> Any:
        return self._compiled.decode(self._params, z)

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = self._compiled.loss_and_grads(self._params, x, y)
        return float(loss), grads

    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        """One jitted step per mini-batch; weights and optimizer state stay on device."""
        train = self._compiled.train_steps[optimizer]
        rate = jax.device_put(np.float32(learning_rate))
        optimizer_state = self._compiled.optimizer_inits[optimizer](self._params)

        def step(x: Array, y: Array) -> float:
            nonlocal optimizer_state
            self._params, optimizer_state, loss = train(self._params, optimizer_state, rate, x, y)
            return float(loss)

        return step
