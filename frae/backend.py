"""``BaseBackend``: the contract's "Public interface" implemented once for every framework
(validation, the batch axis of a single sequence, weights in and out, the ``fit`` loop); a
framework backend writes only the ``_``-prefixed methods, on checked ``(B, T, ·)`` arrays.
"""

from __future__ import annotations

import abc
import functools
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from frae import validation
from frae.config import FRAEConfig
from frae.export import write_artifact
from frae.params import Weights, initial_weights
from frae.routes import Setting
from frae.training_state import TrainingState, check_training_state, fresh_state

Array = npt.NDArray[np.floating[Any]]
TrainStep = Callable[[Array, Array], float]
"""One optimizer step on a mini-batch ``(x, y)``; returns the loss before the update."""
Moments = Callable[[], tuple[Weights, Weights]]
"""Adam's first and second moments now, by canonical name (empty dicts for SGD)."""
Streamed = tuple[Array, Array]
"""A call's outputs and the feedback after its last step (``return_state=True``)."""
Infer = Callable[[Array, Array], tuple[Any, Any]]
"""A backend's ``_predict``, ``_encode`` or ``_decode``: checked ``(B, T, ·)`` sequences and
the ``(B, S)`` feedback entering their first step -> outputs and the feedback after the last."""


class TrainingDiverged(FloatingPointError):  # noqa: N818  (the contract names it)
    """``fit`` met a non-finite loss ℓ_k, or non-finite weights after its last step.

    Attributes:
        step: k, the first step whose loss is not finite; K + 1 when every loss was finite
            but the last update overflowed.
        loss: ℓ_k (NaN for step K + 1, whose loss was never computed).
        learning_rate: the rate ``fit`` was given.
        history: [ℓ₁ … ℓ_{k-1}], the finite losses before step k.
        restored_step: the model holds the weights from before this step: k - 1 (1 when
            k = 1), or 1 if those were not finite either.
    """

    def __init__(
        self,
        step: int,
        loss: float,
        learning_rate: float,
        history: list[float],
        restored_step: int,
        *,
        last_update: bool = False,
    ) -> None:
        self.step, self.loss, self.learning_rate = step, loss, learning_rate
        self.history, self.restored_step = history, restored_step
        cause = (
            f"the weights after the last step, {step - 1}, are not finite (step {step})"
            if last_update
            else f"the loss of step {step} is {loss}"
        )
        super().__init__(
            f"fit diverged: {cause}, at learning_rate {learning_rate:g}. The model holds the "
            f"weights from before step {restored_step}; history holds the {len(history)} "
            "finite losses before. A smaller learning_rate may converge."
        )


KEPT_SLOTS = 4
"""How many sets of weights ``fit``'s rollback keeps (``kept_slot``)."""


def kept_slot(step: int) -> int:
    """Where W_step, the weights before step ``step``, are kept: W₁ in slot 0 (the last
    resort of a rollback), then a ring of three. Three, not two: a backend that keeps them
    inside its compiled update writes W_{k+1} during step k, and W_{k-1} must survive it."""
    return 0 if step == 1 else 1 + step % 3


def serialised[Method: Callable[..., Any]](method: Method) -> Method:
    """Run ``method`` holding the object's lock: calls on one backend object take turns."""

    @functools.wraps(method)
    def locked(self: Sequences, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]


def minibatches(
    num_sequences: int, batch_size: int, epochs: int, shuffle: bool, seed: int, done: int = 0
) -> Iterator[npt.NDArray[np.intp]]:
    """Indices of each optimizer step's sequences, every epoch in order, drawn as they go.

    With ``shuffle``, one ``numpy.random.default_rng(seed)`` draws a fresh permutation of the
    sequences at the start of each epoch; the last batch of an epoch may be smaller. ``done``
    epochs already taken (a resumed ``fit``) draw their permutations first, unused.
    """
    rng = np.random.default_rng(seed)
    for epoch in range(done + epochs):
        order = rng.permutation(num_sequences) if shuffle else np.arange(num_sequences)
        if epoch < done:
            continue
        for start in range(0, num_sequences, batch_size):
            yield order[start : start + batch_size]


def check_device_count(devices: int, present: int, where: str) -> None:
    """``devices`` must not exceed the ``present`` devices ``where`` describes (a ValueError
    naming both, and how to have more)."""
    if devices > present:
        raise ValueError(
            f"devices={devices}, but {where} has {present}: a process fixes its devices when "
            "its framework starts (on a CPU, configure virtual devices before that; see "
            "examples/data_parallel.py)"
        )


def _all_finite(weights: Mapping[str, Any]) -> bool:
    return all(np.isfinite(np.asarray(value)).all() for value in weights.values())


class Sequences(abc.ABC):
    """The calls on sequences (the contract's "Public interface" and "Streaming"), for a backend
    and for an exported artifact alike: the checks, zeros for a missing state, the batch axis
    of a single sequence and ``return_state``, around ``_predict``, ``_encode`` and ``_decode``
    on checked ``(B, T, ·)`` arrays; one call at a time."""

    compute_dtype: ClassVar[type[np.floating[Any]]] = np.float32
    _config: FRAEConfig
    _lock: threading.RLock

    @property
    def config(self) -> FRAEConfig:
        return self._config

    def initial_state(self, batch: int | None = None) -> Array:
        """Zeros of the feedback's width S: ``(batch, S)``, or ``(S,)`` for ``batch=None``, the
        state a call without one starts from (the contract's "Streaming")."""
        width = self._config.feedback_dim
        shape = width if batch is None else (validation.check_int(batch, "batch"), width)
        return np.zeros(shape, self.compute_dtype)

    @serialised
    def predict(
        self, x: Array, *, state: Array | None = None, return_state: bool = False
    ) -> Array | Streamed:
        return self._run(self._predict, x, "x", self._config.input_dim, state, return_state)

    @serialised
    def encode(
        self, x: Array, *, state: Array | None = None, return_state: bool = False
    ) -> Array | Streamed:
        return self._run(self._encode, x, "x", self._config.input_dim, state, return_state)

    @serialised
    def decode(
        self, z: Array, *, state: Array | None = None, return_state: bool = False
    ) -> Array | Streamed:
        return self._run(self._decode, z, "z", self._config.latent_dim, state, return_state)

    def _run(
        self,
        infer: Infer,
        value: Array,
        name: str,
        width: int,
        state: Array | None,
        return_state: bool,
    ) -> Array | Streamed:
        """Check the call, run ``infer`` from ``state`` (zeros for ``None``), drop the batch
        axis of a single sequence, and return the outputs, with the last state if asked."""
        wanted = validation.check_flag(return_state, "return_state")
        batch, single = self._sequences(value, name, width)
        start = validation.check_state(
            state, len(batch), single, self._config.feedback_dim, self.compute_dtype
        )
        outputs, last = infer(batch, start)
        result = self._unbatch(outputs, single)
        return (result, self._unbatch(last, single)) if wanted else result

    def _sequences(self, value: object, name: str, width: int) -> tuple[Array, bool]:
        return validation.check_sequences(value, name, width, self.compute_dtype)

    @staticmethod
    def _unbatch(batch: Any, single: bool) -> Array:
        array = np.asarray(batch)
        if not array.flags.writeable:  # a view of a framework's buffer: the caller owns a copy
            array = array.copy()
        return array[0] if single else array

    @abc.abstractmethod
    def _predict(self, x: Array, state: Array) -> tuple[Any, Any]:
        """x̂ of checked ``(B, T, F)`` inputs from the feedback ``state`` ``(B, S)``, and the
        feedback after the last step."""

    @abc.abstractmethod
    def _encode(self, x: Array, state: Array) -> tuple[Any, Any]:
        """z of checked inputs from ``state``, and the decoder's feedback after the last step
        (the sender's replica of the receiver)."""

    @abc.abstractmethod
    def _decode(self, z: Array, state: Array) -> tuple[Any, Any]:
        """x̂ of checked ``(B, T, L)`` codes from ``state``, and the feedback after the last
        step."""


class BaseBackend(Sequences):
    """Validation, shapes, the ``fit`` loop and its rollback, and the lock that serialises
    the public calls, shared by every backend."""

    name: ClassVar[str]
    export_formats: ClassVar[tuple[str, ...]] = ()
    """The deployment formats ``export`` makes (the contract's "Exports")."""
    export_refusals: ClassVar[Mapping[str, str]] = {}
    """Format -> why this backend's framework cannot make it for this model (upstream)."""
    routes: tuple[Setting, ...] = ()
    """The framework settings this backend runs with (``frae.routes``): those it chose for
    its best route, those the user's own environment gave, or the framework's defaults."""

    def __init__(
        self,
        config: FRAEConfig | None = None,
        *,
        seed: int = 0,
        weights: Mapping[str, Array] | None = None,
        devices: int | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self._kept: dict[int, Mapping[str, Any]] = {}
        self._config = validation.check_config(config)
        seed = validation.check_seed(seed)
        shapes = self._config.parameter_shapes()
        start = (
            initial_weights(self._config, seed)
            if weights is None
            else validation.check_weights(weights, shapes)
        )
        devices = validation.check_devices(devices)
        self.devices = 1 if devices is None else devices
        """How many devices ``fit`` splits each mini-batch over (1 for ``devices=None``)."""
        if self.devices > 1:
            self._place(self.devices)
        self._build(start)

    @serialised
    def get_weights(self) -> Weights:
        return {
            name: np.array(value, dtype=np.float32, copy=True)
            for name, value in self._read_weights().items()
        }

    @serialised
    def set_weights(self, weights: Mapping[str, Array]) -> None:
        self._write_weights(validation.check_weights(weights, self._config.parameter_shapes()))

    @serialised
    def export(self, directory: str | os.PathLike[str], *, format: str) -> Path:
        """Write this model, its current weights baked in, to ``directory`` in ``format``
        (the contract's "Exports"); return the artifact's path."""
        return write_artifact(self, directory, format)

    def _export(self, format: str, folder: Path) -> str:
        """Write the artifact's file (or folder) in ``folder``, which exists and is empty;
        return its name. Only for the formats of ``export_formats``."""
        raise NotImplementedError(f"{self.name} exports no format")

    @serialised
    def loss_and_grads(self, x: Array, y: Array | None = None) -> tuple[float, Weights]:
        x_batch, y_batch = self._pair(x, y)
        loss, grads = self._loss_and_grads(x_batch, y_batch)
        return float(loss), {
            name: self._unbatch(grads[name], single=False)
            for name in self._config.parameter_shapes()
        }

    @serialised
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
    ) -> dict[str, Any]:
        x_batch, y_batch = self._pair(x, y)
        epochs, batch_size, optimizer, learning_rate, shuffle, seed = validation.check_fit_options(
            len(x_batch), epochs, batch_size, optimizer, learning_rate, shuffle, seed
        )
        if self.devices > 1:
            validation.check_split(len(x_batch), batch_size, self.devices)
        start = (
            fresh_state(optimizer, self._config)
            if training_state is None
            else check_training_state(training_state, optimizer, self._config)
        )
        train_step, moments = self._train_step(optimizer, learning_rate, start)
        history: list[float] = []
        batches = minibatches(len(x_batch), batch_size, epochs, shuffle, seed, start.epoch)
        for step, batch in enumerate(batches, start=1):
            self._keep_weights(step)
            loss = float(train_step(x_batch[batch], y_batch[batch]))
            if not math.isfinite(loss):
                self._diverged(step, loss, learning_rate, history)
            history.append(loss)
        if not self._weights_finite():
            self._diverged(len(history) + 1, math.nan, learning_rate, history, last_update=True)
        after = TrainingState(
            start.optimizer, start.step + len(history), start.epoch + epochs, *moments()
        )
        return {"loss": history, "training_state": after}

    def _diverged(
        self,
        step: int,
        loss: float,
        learning_rate: float,
        history: list[float],
        *,
        last_update: bool = False,
    ) -> None:
        """Put back W_{k-1} (W₁ at k = 1, or if W_{k-1} is itself not finite) and raise."""
        restored = max(step - 1, 1)
        weights = self._weights_before(restored)
        if not _all_finite(weights):
            restored, weights = 1, self._weights_before(1)
        self._write_weights({name: np.array(value, np.float32) for name, value in weights.items()})
        raise TrainingDiverged(
            step, loss, learning_rate, history, restored, last_update=last_update
        )

    def _pair(self, x: Array, y: Array | None) -> tuple[Array, Array]:
        x_batch, single = self._sequences(x, "x", self._config.input_dim)
        return x_batch, validation.check_target(y, x_batch, single)

    def _keep_weights(self, step: int) -> None:
        """Keep W_step, the weights before step ``step``, for the rollback; a backend may keep
        them more cheaply than this host copy."""
        self._kept[kept_slot(step)] = self.get_weights()

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        """W_step as ``_keep_weights`` kept it: step 1 or one of the last two steps."""
        return self._kept[kept_slot(step)]

    def _weights_finite(self) -> bool:
        return _all_finite(self._read_weights())

    def _place(self, devices: int) -> None:
        """Prepare data-parallel training on ``devices`` (> 1), before ``_build``."""
        raise ValueError(
            f"backend {self.name!r} has no data-parallel engine: devices must be None or 1, "
            f"got {devices}"
        )

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
    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]: ...

    @abc.abstractmethod
    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        """A step function whose optimizer continues from ``start`` (checked; fresh, with zero
        moments and step 0, for a ``fit`` without one), and a reader of its Adam moments."""
