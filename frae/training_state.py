"""What an uninterrupted ``fit`` carries on with (the contract's "Training state"): the
optimizer's name, its step count, the epochs done and Adam's moments, canonical in every
backend."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from frae import validation
from frae.config import FRAEConfig
from frae.optimizers import OPTIMIZERS
from frae.params import Weights

MOMENTS = ("m", "v")
"""Adam's first and second moments, as ``TrainingState`` names them."""


@dataclass(frozen=True)
class TrainingState:
    """The optimizer's state after ``step`` optimizer steps (Adam's t of the last) over
    ``epoch`` whole epochs, with Adam's moments ``m`` and ``v`` by canonical name (empty for
    SGD); with ``shuffle``, the next epoch's permutation is the ``epoch + 1``-th drawn."""

    optimizer: str
    step: int
    epoch: int
    m: Weights = field(default_factory=dict)
    v: Weights = field(default_factory=dict)


def fresh_state(optimizer: str, config: FRAEConfig) -> TrainingState:
    """The state a ``fit`` without one starts from: no step taken, zero moments."""
    if optimizer == "sgd":
        return TrainingState(optimizer, 0, 0)
    return TrainingState(optimizer, 0, 0, _zeros(config), _zeros(config))


def is_fresh(state: TrainingState) -> bool:
    """Whether ``state`` is where a fit without one starts: no step taken, moments zero."""
    moments = (*state.m.values(), *state.v.values())
    return state.step == 0 and not any(np.any(moment) for moment in moments)


def _zeros(config: FRAEConfig) -> Weights:
    return {name: np.zeros(shape, np.float32) for name, shape in config.parameter_shapes().items()}


def check_training_state(state: object, optimizer: str, config: FRAEConfig) -> TrainingState:
    """``state`` as ``fit`` may continue it with ``optimizer`` (a ValueError or TypeError
    naming what is wrong otherwise); returns a copy whose moments are float32."""
    if not isinstance(state, TrainingState):
        raise TypeError(
            f"training_state must be a frae.TrainingState or None, got {validation.describe(state)}"
        )
    name = validation.check_choice(state.optimizer, "training_state.optimizer", OPTIMIZERS)
    if name != optimizer:
        raise ValueError(
            f"training_state.optimizer is {name!r}, but fit was given optimizer={optimizer!r}: "
            "a state continues the optimizer that made it"
        )
    step = validation.check_int(state.step, "training_state.step", least=0)
    epoch = validation.check_int(state.epoch, "training_state.epoch", least=0)
    shapes = config.parameter_shapes() if optimizer == "adam" else {}
    m, v = (_moments(getattr(state, moment), moment, shapes) for moment in MOMENTS)
    return TrainingState(optimizer, step, epoch, m, v)


def _moments(value: object, moment: str, shapes: Mapping[str, tuple[int, ...]]) -> Weights:
    """Adam's ``moment`` of every weight (none for SGD), checked as weights are: names,
    shapes, floating and finite; the second moment also not negative."""
    if not isinstance(value, Mapping):
        raise TypeError(
            f"training_state.{moment} must be a dict of numpy arrays, "
            f"got {validation.describe(value)}"
        )
    try:
        checked = validation.check_weights(value, shapes)
    except (ValueError, TypeError) as error:
        message = str(error).replace("weights", f"training_state.{moment}", 1)
        raise type(error)(message.replace("weights[", f"training_state.{moment}[")) from error
    negative = [name for name, array in checked.items() if moment == "v" and (array < 0).any()]
    if negative:
        raise ValueError(
            f"training_state.v must not be negative (a mean of squares), got negative values in "
            f"{validation.names(negative)}"
        )
    return checked
