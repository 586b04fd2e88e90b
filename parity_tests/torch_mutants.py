"""A torch_scan mutant (the contract's "Training state"), in a module of its own because it
imports PyTorch."""

from __future__ import annotations

import dataclasses

import numpy as np

from frae.backend import Moments, TrainStep
from frae.params import Weights
from frae.training_state import TrainingState
from impls.torch_scan.backend import TorchScanBackend


def _into_torch_reshaped(moment: Weights) -> Weights:
    """What the backend's transpose turns into each kernel's moment reshaped to ``(out, in)``."""
    return {
        name: value.reshape(value.shape[::-1]).T if value.ndim == 2 else value
        for name, value in moment.items()
    }


def _out_of_torch_reshaped(moment: Weights) -> Weights:
    """Each kernel's moment in ``(out, in)`` reshaped to ``(in, out)``, not transposed."""
    return {
        name: np.ascontiguousarray(value.T).reshape(value.shape) if value.ndim == 2 else value
        for name, value in moment.items()
    }


class MomentsInTorchsLayout(TorchScanBackend):
    """Adam's moments moved between the canonical layout and ``nn.Linear``'s reshaped, not
    transposed as its weights are: the backend resumes its own checkpoints and no other's."""

    breaks = "resume"

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        into = dataclasses.replace(
            start, m=_into_torch_reshaped(start.m), v=_into_torch_reshaped(start.v)
        )
        step, moments = super()._train_step(optimizer, learning_rate, into)

        def reshaped() -> tuple[Weights, Weights]:
            m, v = moments()
            return _out_of_torch_reshaped(m), _out_of_torch_reshaped(v)

        return step, reshaped
