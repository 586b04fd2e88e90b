"""A port as a user might write one: a faithful wrapper of jax_scan that has only the
contract's required members (no ``export``, ``export_formats`` nor ``devices``, which the
contract makes optional). The conformance kit must pass on it
(``tests/test_conformance_kit.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

import frae


class WrappedJaxScan:
    """Every required member delegated to a jax_scan backend, nothing else."""

    name = "wrapped_jax_scan"

    def __init__(
        self,
        config: frae.FRAEConfig | None = None,
        *,
        seed: int = 0,
        weights: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self._inner = frae.create("jax_scan", config, seed=seed, weights=weights)
        self.config = self._inner.config

    def get_weights(self) -> dict[str, np.ndarray]:
        return self._inner.get_weights()

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        self._inner.set_weights(weights)

    def initial_state(self, batch: int | None = None) -> np.ndarray:
        return self._inner.initial_state(batch)

    def predict(self, x: np.ndarray, **options: Any) -> Any:
        return self._inner.predict(x, **options)

    def encode(self, x: np.ndarray, **options: Any) -> Any:
        return self._inner.encode(x, **options)

    def decode(self, z: np.ndarray, **options: Any) -> Any:
        return self._inner.decode(z, **options)

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray | None = None) -> Any:
        return self._inner.loss_and_grads(x, y)

    def fit(self, x: np.ndarray, y: np.ndarray | None = None, **options: Any) -> Any:
        return self._inner.fit(x, y, **options)
