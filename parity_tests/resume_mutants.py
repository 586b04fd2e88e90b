"""Resume mutants (the contract's "Training state"), one realistic mistake each (see
``parity_tests.mutants``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from frae.backend import Moments, TrainStep
from frae.training_state import TrainingState
from parity_tests.mutants import Float32Reference


class StepRestartedOnResume(Float32Reference):
    """A resumed Adam counts its steps from 1 again (the moments kept, the bias correction
    of a fresh optimizer): what a framework's optimizer does when only its slots are
    restored."""

    breaks = "resume"

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        return super()._train_step(optimizer, learning_rate, dataclasses.replace(start, step=0))


class MomentsSwappedOnImport(Float32Reference):
    """The first and second moments exchanged on the way into the optimizer (two slots of
    one shape, read by position)."""

    breaks = "resume"

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        swapped = dataclasses.replace(start, m=start.v, v=start.m)
        return super()._train_step(optimizer, learning_rate, swapped)


class ShuffleRestartedAtEpochZero(Float32Reference):
    """A resumed ``fit`` draws the permutations of ``seed`` from the first epoch again,
    though it counts the epochs on."""

    breaks = "resume"

    def fit(self, x: Any, y: Any = None, **options: Any) -> dict[str, Any]:
        state = options.get("training_state")
        if not isinstance(state, TrainingState):
            return super().fit(x, y, **options)
        history = super().fit(
            x, y, **{**options, "training_state": dataclasses.replace(state, epoch=0)}
        )
        after = history["training_state"]
        history["training_state"] = dataclasses.replace(after, epoch=after.epoch + state.epoch)
        return history


MUTANTS = [StepRestartedOnResume, MomentsSwappedOnImport, ShuffleRestartedAtEpochZero]
