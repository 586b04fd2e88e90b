"""``bench.measuring.operations.calls``: each operation's calls on the model and input, a
long training step timed one a sample, and a rated model's training calls in turn with the
same model without the rate term."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from bench.measuring.job import Job, Settings
from bench.measuring.operations import MEASURED
from bench.measuring.operations.calls import calls_of, without_rate
from bench.measuring.point import OnPoint
from bench.measuring.worker import measure_shape
from bench.records import Point
from frae.data import multi_sine
from frae.params import Weights
from impls.reference import ReferenceBackend


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


QUANTIZED, RATED = "default Δ=2^-6", "default Δ=2^-6 λ=0.01"
RATED_MODELS = {
    QUANTIZED: frae.FRAEConfig(code_step=2**-6),
    RATED: frae.FRAEConfig(code_step=2**-6, rate_weight=0.01),
}
TINY = Settings(repeats=3, min_time_s=0.0, budget_s=0.0, max_samples=3, long_step_s=100.0)
"""Three timed calls, each training step K of them."""


def test_a_rated_models_training_calls_are_timed_in_turn_with_the_model_without_it() -> None:
    """Each training operation's record keeps, under the label of the model without the rate
    term, as many calls of it as of its own; predict, which the rate does not change, and
    the model without measured on its own keep none."""
    job = Job("reference", "reference", settings=TINY, models=RATED_MODELS)
    every = ("predict", "loss_and_grads", "train_step")
    rated = {row.operation: row for row in measure_shape(job, Point(RATED, 1, 20, every))}
    assert rated["predict"].partners_s is None
    for operation in ("loss_and_grads", "train_step"):
        row = rated[operation]
        assert row.median_s is not None and row.calls_s is not None and row.partners_s is not None
        assert list(row.partners_s) == [QUANTIZED], operation
        assert len(row.partners_s[QUANTIZED]) == len(row.calls_s) == 3, operation
    alone = list(measure_shape(job, Point(QUANTIZED, 1, 20, every)))
    assert [row.partners_s for row in alone] == [None, None, None]


def test_the_model_without_the_rate_holds_the_points_weights() -> None:
    config = RATED_MODELS[RATED]
    model = frae.create("reference", config, seed=3)
    x = multi_sine(batch=1, steps=20, features=2, seed=0)
    job = Job("reference", "reference", settings=TINY, models=RATED_MODELS)
    label, other = without_rate(job, config, OnPoint(model, x, None, 0.0))
    assert label == QUANTIZED and other.config == RATED_MODELS[QUANTIZED]
    expected = {k: v for k, v in model.get_weights().items() if not k.startswith("prior/")}
    found = other.get_weights()
    assert found.keys() == expected.keys()
    assert all(np.array_equal(found[name], expected[name]) for name in expected)


class RatedOnly(ReferenceBackend):
    """A backend that refuses a quantized model without a rate weight."""

    def _build(self, weights: Weights) -> None:
        if self.config.rate_weight is None:
            raise ValueError("rate_weight must be set for this backend")
        super()._build(weights)


def test_a_rated_model_whose_model_without_cannot_be_made_is_timed_alone_saying_why() -> None:
    backend = f"{__name__}:RatedOnly"
    job = Job("rated_only", backend, settings=TINY, models=RATED_MODELS)
    (row,) = measure_shape(job, Point(RATED, 1, 20, ("train_step",)))
    assert row.median_s is not None and row.partners_s is None
    assert "no model without the rate term: ValueError: rate_weight must be set" in (row.note or "")
