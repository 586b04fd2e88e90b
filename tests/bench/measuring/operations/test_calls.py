"""``bench.measuring.operations.calls``: each operation's calls on the model and input, and a
long training step timed one a sample."""

from __future__ import annotations

import numpy as np
import pytest

from bench.measuring.job import Job, Settings
from bench.measuring.operations import MEASURED
from bench.measuring.operations.calls import calls_of
from bench.measuring.worker import measure_shape
from bench.records import Point


def test_every_operation_sent_to_the_calls_has_its_calls() -> None:
    """Each operation the registry sends to ``calls`` names calls there; a training step
    alone makes K steps a call."""
    sent = {name for name, target in MEASURED.items() if target.endswith(":ModelCalls")}
    calls = calls_of(None, np.zeros((1, 2, 2)), train_steps=5)
    assert sent == set(calls) == {"predict", "loss_and_grads", "train_step"}
    assert calls["train_step"].steps == 5
    assert [name for name, each in calls.items() if each.one_step_if_long] == ["train_step"]


@pytest.mark.parametrize(("long_step_s", "per_sample"), [(0.0, 1), (100.0, 5)])
def test_a_long_training_step_is_timed_one_per_sample(long_step_s: float, per_sample: int) -> None:
    """K = 5 steps a sample spread a fit call's own cost; a step longer than ``long_step_s``
    has none to spread, and is timed alone, which the note says."""
    settings = Settings(
        train_steps=5,
        long_call_s=100.0,
        long_step_s=long_step_s,
        repeats=3,
        min_time_s=0.0,
        budget_s=0.0,
        max_samples=3,
    )
    job = Job(variant="reference", backend="reference", settings=settings)
    (row,) = measure_shape(job, Point("default", 1, 20, ("train_step",)))
    assert row.steps_per_sample == per_sample and row.median_s is not None
    assert ("fit(x, epochs=1) a sample" in (row.note or "")) == (per_sample == 1)
