"""``Backend``: what every backend offers a caller, NumPy arrays in and out (the contract's
"Public interface" and "Streaming"); ``frae.BaseBackend`` implements it once for every
framework."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, overload, runtime_checkable

from frae.backend import Array, Streamed
from frae.config import FRAEConfig
from frae.params import Weights
from frae.training_state import TrainingState


@runtime_checkable
class Backend(Protocol):
    """What every backend offers, NumPy arrays in and out."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> FRAEConfig: ...

    def get_weights(self) -> Weights: ...

    def set_weights(self, weights: Mapping[str, Array]) -> None: ...

    def initial_state(self, batch: int | None = None) -> Array: ...

    @overload
    def predict(
        self, x: Array, *, state: Array | None = None, return_state: Literal[False] = False
    ) -> Array: ...

    @overload
    def predict(
        self, x: Array, *, state: Array | None = None, return_state: Literal[True]
    ) -> Streamed: ...

    @overload
    def encode(
        self, x: Array, *, state: Array | None = None, return_state: Literal[False] = False
    ) -> Array: ...

    @overload
    def encode(
        self, x: Array, *, state: Array | None = None, return_state: Literal[True]
    ) -> Streamed: ...

    @overload
    def decode(
        self, z: Array, *, state: Array | None = None, return_state: Literal[False] = False
    ) -> Array: ...

    @overload
    def decode(
        self, z: Array, *, state: Array | None = None, return_state: Literal[True]
    ) -> Streamed: ...

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
        training_state: TrainingState | None = None,
    ) -> dict[str, Any]: ...
