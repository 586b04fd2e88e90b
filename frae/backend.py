"""The backend contract (docs/contract.md, section 3) and the boundary every backend shares.

``Backend`` is the protocol a caller relies on. ``BaseBackend`` implements it once for every
framework: it validates input (``frae.validation``), adds and drops the batch axis of a
single sequence, copies weights in and out, and runs the ``fit`` loop. A framework backend
subclasses it and writes only the ``_``-prefixed methods, which receive checked
``(B, T, ·)`` arrays of ``compute_dtype``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from frae import validation
from frae.config import FRAEConfig
from frae.params import Weights, initial_weights

Array = npt.NDArray[np.floating[Any]]
TrainStep = Callable[[Array, Array], float]
"""One optimizer step on a mini-batch ``(x, y)``; returns the loss before the update."""


@runtime_checkable
class Backend(Protocol):
    """What every backend offers, NumPy arrays in and out."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> FRAEConfig: ...

    def get_weights(self) -> Weights: ...

    def set_weights(self, weights: Mapping[str, Array]) -> None: ...

    def predict(self, x: Array) -> Array: ...

    def encode(self, x: Array) -> Array: ...

    def decode(self, z: Array) -> Array: ...

    def loss_and_grads(self, x: Array, y: Array | None = None) -> tuple[float, Weights]: ...

    def fit(
        self,
        x: Array,
        y: Array | None = None,
        *,
        epochs: int = 1,
        batch_size: int | None = None,
        optimizer: str = "adam",
        learning_rate: float = 1e-3,
        shuffle: bool = False,
        seed: int = 0,
    ) -> dict[str, list[float]]: ...


def minibatches(
    num_sequences: int, batch_size: int, epochs: int, shuffle: bool, seed: int
) -> list[npt.NDArray[np.intp]]:
    """Indices of each optimizer step's sequences, every epoch in order.

    With ``shuffle``, one ``numpy.random.default_rng(seed)`` draws a fresh permutation of the
    sequences at the start of each epoch; the last batch of an epoch may be smaller.
    """
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(epochs):
        order = rng.permutation(num_sequences) if shuffle else np.arange(num_sequences)
        batches += [order[i : i + batch_size] for i in range(0, num_sequences, batch_size)]
    return batches


class BaseBackend(abc.ABC):
    """Validation, shapes and the ``fit`` loop, shared by every backend."""

    name: ClassVar[str]
    compute_dtype: ClassVar[type[np.floating[Any]]] = np.float32

    def __init__(
        self,
        config: FRAEConfig | None = None,
        *,
        seed: int = 0,
        weights: Mapping[str, Array] | None = None,
    ) -> None:
        self._config = validation.check_config(config)
        seed = validation.check_seed(seed)
        shapes = self._config.parameter_shapes()
        start = (
            initial_weights(self._config, seed)
            if weights is None
            else validation.check_weights(weights, shapes)
        )
        self._build(start)

    @property
    def config(self) -> FRAEConfig:
        return self._config

    def get_weights(self) -> Weights:
        return {
            name: np.array(value, dtype=np.float32, copy=True)
            for name, value in self._read_weights().items()
        }

    def set_weights(self, weights: Mapping[str, Array]) -> None:
        self._write_weights(validation.check_weights(weights, self._config.parameter_shapes()))

    def predict(self, x: Array) -> Array:
        batch, single = self._sequences(x, "x", self._config.input_dim)
        return self._unbatch(self._predict(batch), single)

    def encode(self, x: Array) -> Array:
        batch, single = self._sequences(x, "x", self._config.input_dim)
        return self._unbatch(self._encode(batch), single)

    def decode(self, z: Array) -> Array:
        batch, single = self._sequences(z, "z", self._config.latent_dim)
        return self._unbatch(self._decode(batch), single)

    def loss_and_grads(self, x: Array, y: Array | None = None) -> tuple[float, Weights]:
        x_batch, y_batch = self._pair(x, y)
        loss, grads = self._loss_and_grads(x_batch, y_batch)
        return float(loss), {
            name: np.asarray(grads[name]) for name in self._config.parameter_shapes()
        }

    def fit(
        self,
        x: Array,
        y: Array | None = None,
        *,
        epochs: int = 1,
        batch_size: int | None = None,
        optimizer: str = "adam",
        learning_rate: float = 1e-3,
        shuffle: bool = False,
        seed: int = 0,
    ) -> dict[str, list[float]]:
        x_batch, y_batch = self._pair(x, y)
        epochs, batch_size, optimizer, learning_rate, shuffle, seed = validation.check_fit_options(
            len(x_batch),
            epochs=epochs,
            batch_size=batch_size,
            optimizer=optimizer,
            learning_rate=learning_rate,
            shuffle=shuffle,
            seed=seed,
        )
        step = self._train_step(optimizer, learning_rate)
        batches = minibatches(len(x_batch), batch_size, epochs, shuffle, seed)
        return {"loss": [float(step(x_batch[i], y_batch[i])) for i in batches]}

    def _sequences(self, value: object, name: str, width: int) -> tuple[Array, bool]:
        return validation.check_sequences(value, name, width, self.compute_dtype)

    def _pair(self, x: Array, y: Array | None) -> tuple[Array, Array]:
        x_batch, single = self._sequences(x, "x", self._config.input_dim)
        return x_batch, validation.check_target(y, x_batch, single)

    @staticmethod
    def _unbatch(batch: Any, single: bool) -> Array:
        array = np.asarray(batch)
        return array[0] if single else array

    @abc.abstractmethod
    def _build(self, weights: Weights) -> None:
        """Create the framework's state holding ``weights`` (already checked)."""

    @abc.abstractmethod
    def _read_weights(self) -> Mapping[str, Any]:
        """Current weights by canonical name, in any array type NumPy can convert."""

    @abc.abstractmethod
    def _write_weights(self, weights: Weights) -> None:
        """Replace every weight with ``weights`` (already checked)."""

    @abc.abstractmethod
    def _predict(self, x: Array) -> Array: ...

    @abc.abstractmethod
    def _encode(self, x: Array) -> Array: ...

    @abc.abstractmethod
    def _decode(self, z: Array) -> Array: ...

    @abc.abstractmethod
    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]: ...

    @abc.abstractmethod
    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        """A step function with fresh optimizer state (the contract: new state at each ``fit``)."""
