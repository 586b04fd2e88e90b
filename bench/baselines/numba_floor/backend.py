"""The floor behind the contract: ``NumbaFloorBackend`` runs ``loops.kernels`` on the flat
weights."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from bench.baselines.layout import flatten, plan, unflatten
from bench.baselines.numba_floor.loops import kernels
from frae.backend import Array, BaseBackend, Moments, Streamed, TrainStep, kept_slot
from frae.optimizers import ADAM
from frae.params import Weights
from frae.training_state import TrainingState


class _Workspace(NamedTuple):
    """Every array one input shape needs, allocated once and reused by later calls."""

    work: Array
    slopes: Array
    outputs: Array
    codes: Array
    delta: Array
    carry: Array
    lanes: Array
    loss: npt.NDArray[np.float64]
    start: Array
    """(B, S) zeros: the feedback a training forward starts from (and ``end`` its last)."""
    end: Array


class NumbaFloorBackend(BaseBackend):
    """The native floor behind the contract: Numba loops, float32, one thread; inputs
    transposed once to time-major, batch-innermost (T, F, B), outputs once back."""

    name = "numba_floor"

    def _build(self, weights: Weights) -> None:
        self._plan = plan(self.config)
        self._kernels = kernels(self.config, np.dtype(self.compute_dtype).name)
        self._workspaces: dict[tuple[int, int, int, bool], _Workspace] = {}
        self._shape = (0, 0, 0)
        self._kept_flat: dict[int, Array] = {}
        self._write_weights(weights)

    def _read_weights(self) -> Mapping[str, Any]:
        return unflatten(self._theta, self._plan)

    def _write_weights(self, weights: Weights) -> None:
        self._theta = flatten(weights, self._plan, self.compute_dtype)

    def _workspace(self, steps: int, batch: int, width: int, record: bool) -> _Workspace:
        key = (steps, batch, width, record)
        if (steps, batch, width) != self._shape:  # one shape's arrays at a time: bounded memory
            self._workspaces.clear()
            self._shape = (steps, batch, width)
        if key not in self._workspaces:
            layout, dtype = self._plan, self.compute_dtype
            span = steps if record else 1
            self._workspaces[key] = _Workspace(
                work=np.zeros((span, layout.rows, batch), dtype),
                slopes=np.zeros((span, layout.rows, batch), dtype),
                outputs=np.empty((steps, layout.features, batch), dtype),
                codes=np.empty((steps, layout.latent, batch), dtype),
                delta=np.empty((layout.rows, batch), dtype),
                carry=np.empty((layout.feedback_width, batch), dtype),
                lanes=np.empty((layout.size, batch), dtype),
                loss=np.empty(batch, np.float64),
                start=np.zeros((batch, layout.feedback_width), dtype),
                end=np.empty((batch, layout.feedback_width), dtype),
            )
        return self._workspaces[key]

    def _unroll(
        self,
        sequences: Array,
        codes_given: bool,
        record: bool,
        streamed: tuple[Array, Array] | None = None,
    ) -> _Workspace:
        """One call of the compiled forward over ``sequences`` (B, T, ·), into the shape's
        workspace, from and to the feedback ``streamed`` (``None``: zeros, as training)."""
        batch, steps, width = sequences.shape
        space = self._workspace(steps, batch, width, record)
        initial, final = (space.start, space.end) if streamed is None else streamed
        forward = self._kernels.forward_recorded if record else self._kernels.forward
        forward(
            np.ascontiguousarray(sequences.transpose(1, 2, 0)),
            initial,
            codes_given,
            self._theta,
            space.work,
            space.slopes,
            space.outputs,
            space.codes,
            final,
        )
        return space

    def _stream(self, sequences: Array, state: Array, codes_given: bool, keep: str) -> Streamed:
        """x̂ (``keep="outputs"``) or z (``keep="codes"``), (B, T, ·), and the feedback after
        the last step, each copied out of the reused workspace."""
        final = np.empty_like(state)
        space = self._unroll(sequences, codes_given, record=False, streamed=(state, final))
        return getattr(space, keep).transpose(2, 0, 1).copy(), final

    def _predict(self, x: Array, state: Array) -> Streamed:
        return self._stream(x, state, codes_given=False, keep="outputs")

    def _encode(self, x: Array, state: Array) -> Streamed:
        return self._stream(x, state, codes_given=False, keep="codes")

    def _decode(self, z: Array, state: Array) -> Streamed:
        return self._stream(z, state, codes_given=True, keep="outputs")

    def _flat_loss_and_grads(self, x: Array, y: Array) -> tuple[float, Array]:
        space = self._unroll(x, codes_given=False, record=True)
        self._kernels.backward(
            space.work,
            space.slopes,
            space.outputs,
            np.ascontiguousarray(y.transpose(1, 2, 0)),
            self.compute_dtype(2.0 / y.size),
            self._theta,
            space.delta,
            space.carry,
            space.lanes,
            space.loss,
        )
        return float(space.loss.sum() / y.size), space.lanes.sum(axis=1)

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = self._flat_loss_and_grads(x, y)
        return loss, unflatten(grads, self._plan)

    def _keep_weights(self, step: int) -> None:
        """A copy of the flat weights, which a step updates in place."""
        self._kept_flat[kept_slot(step)] = self._theta.copy()

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        return unflatten(self._kept_flat[kept_slot(step)], self._plan)

    def _weights_finite(self) -> bool:
        return bool(np.isfinite(self._theta).all())

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        """The contract's SGD or Adam on the flat weights, continued from ``start``."""
        first, second = np.zeros_like(self._theta), np.zeros_like(self._theta)
        if optimizer == "adam":
            first = flatten(start.m, self._plan, self.compute_dtype)
            second = flatten(start.v, self._plan, self.compute_dtype)
        count = start.step

        def step(x: Array, y: Array) -> float:
            nonlocal count
            loss, grads = self._flat_loss_and_grads(x, y)
            count += 1
            if optimizer == "sgd":
                self._theta -= self.compute_dtype(learning_rate) * grads
            else:
                self._kernels.adam(
                    self._theta,
                    grads,
                    first,
                    second,
                    learning_rate,
                    ADAM.beta_1,
                    ADAM.beta_2,
                    ADAM.epsilon,
                    count,
                )
            return loss

        def moments() -> tuple[Weights, Weights]:
            if optimizer == "sgd":
                return {}, {}
            return unflatten(first, self._plan), unflatten(second, self._plan)

        return step, moments


class NumbaFloor64Backend(NumbaFloorBackend):
    """The same loops in float64: the exactness check against the reference."""

    name = "numba_floor_float64"
    compute_dtype = np.float64
