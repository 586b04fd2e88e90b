"""The calls on a point's model and input: ``predict``, ``loss_and_grads`` (forward and BPTT)
and the training step, ``fit`` over K steps a call (``Settings.train_steps``). A model trained
for its rate (``FRAEConfig.rate_weight``) takes its training calls in turn with the same
calls on the same model without the rate term, in the same process (``without_rate``), so
that what the rate term costs is read from calls the machine treated alike."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from bench.grid import RATE_OPERATIONS, model_label
from bench.measuring.job import Job
from bench.measuring.operations.base import Operation
from bench.measuring.point import OnPoint, Row, Unit
from bench.measuring.timing import Calls, Made, noted, prepare_beside, prepare_calls
from frae.config import FRAEConfig


def calls_of(model: Any, x: np.ndarray, train_steps: int) -> dict[str, Calls]:
    """Each operation's calls on ``model`` and ``x``; a training step that runs long is timed
    one a sample (``Calls.one_step_if_long``)."""
    return {
        "predict": Calls(lambda: model.predict(x), lambda: model.predict(x), 1),
        "loss_and_grads": Calls(
            lambda: model.loss_and_grads(x), lambda: model.loss_and_grads(x), 1
        ),
        "train_step": Calls(
            lambda: model.fit(x, epochs=1, learning_rate=1e-3),
            lambda: model.fit(x, epochs=train_steps, learning_rate=1e-3),
            train_steps,
            one_step_if_long=True,
        ),
    }


WITHOUT_RATE = "without the rate"
"""What a point of a model trained for its rate makes once (``OnPoint.once``): the model
without it."""


def without_rate(job: Job, config: FRAEConfig, at: OnPoint) -> tuple[str, Any]:
    """The label of ``config`` without its rate weight, and a model of it holding the point's
    model's weights (its learned prior's left out)."""
    import frae

    unrated = replace(config, rate_weight=None)
    prior = set(config.prior_parameters)
    weights = {name: value for name, value in at.model.get_weights().items() if name not in prior}
    model = frae.create(job.backend, unrated, weights=weights, devices=job.devices)
    return model_label(unrated), model


class ModelCalls(Operation):
    """One operation's calls on the point's model and input: a first call (which compiles),
    a warm-up, then one timed call a sample; a training operation of a model trained for its
    rate, in turn with the same calls on the model without it (``Beside``)."""

    def prepare(self, at: OnPoint, unit: Unit, job: Job, row: Row) -> Made:
        steps, collect = job.settings.train_steps, not job.keeps_models
        calls = calls_of(at.model, at.x, steps)[unit.operation]
        made = partial(row, unit.operation)
        config = job.config(unit.point.model)
        if config.rate_weight is None or unit.operation not in RATE_OPERATIONS:
            return prepare_calls(calls, job.settings, made, collect)
        try:
            label, other = at.once(WITHOUT_RATE, partial(without_rate, job, config))
        except Exception as error:  # timed alone, saying why
            alone = prepare_calls(calls, job.settings, made, collect)
            return noted(alone, f"no model without the rate term: {type(error).__name__}: {error}")
        beside = calls_of(other, at.x, steps)[unit.operation]
        return prepare_beside(calls, beside, label, job.settings, made, collect)
