"""The calls on a point's model and input: ``predict``, ``loss_and_grads`` (forward and BPTT)
and the training step, ``fit`` over K steps a call (``Settings.train_steps``)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from bench.measuring.job import Job
from bench.measuring.operations.base import Operation
from bench.measuring.point import OnPoint, Row, Unit
from bench.measuring.timing import Calls, Made, prepare_calls


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


class ModelCalls(Operation):
    """One operation's calls on the point's model and input: a first call (which compiles),
    a warm-up, then one timed call a sample."""

    def prepare(self, at: OnPoint, unit: Unit, job: Job, row: Row) -> Made:
        calls = calls_of(at.model, at.x, job.settings.train_steps)[unit.operation]
        made = partial(row, unit.operation)
        return prepare_calls(calls, job.settings, made, collect=not job.keeps_models)
