"""The contract's "Training state": ``fit`` resumes from a ``TrainingState``, through a
checkpoint file, on the backend that made it or any other, as if it had never stopped."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

import frae
from frae.data import multi_sine
from parity_tests.cases import BOTH_MODELS, RATE_PARAMS, Case
from parity_tests.checks import assert_same_weights
from parity_tests.conftest import MakeBackend
from parity_tests.tolerances import assert_close

LEARNING_RATES = {"sgd": 0.5, "adam": 1e-2}
"""Each optimizer's learning rate."""
HALF = 2
"""Epochs of each half: 4 sequences in mini-batches of 3 are 2 steps an epoch (the second
of one sequence), so k = 4 steps a half, and the shuffle's permutation differs each epoch."""


RUNS = [
    *(
        pytest.param(partner, *case.values, optimizer, lr, id=f"{partner}-{case.id}-{optimizer}")
        for partner in ("itself", "reference")
        for case in BOTH_MODELS
        for optimizer, lr in LEARNING_RATES.items()
    ),
    pytest.param(
        "reference",
        *RATE_PARAMS[0].values,
        "adam",
        LEARNING_RATES["adam"],
        id=f"reference-{RATE_PARAMS[0].id}-adam",
    ),
]
"""The partner a checkpoint crosses to and from, the case and the optimizer: both models with
each partner and optimizer, and the rate case with the reference and Adam (μ and ρ, and their
moments, in the checkpoint)."""


def _options(optimizer: str, learning_rate: float) -> dict[str, object]:
    shuffled = {"batch_size": 3, "shuffle": True, "seed": 21, "epochs": HALF}
    return {"optimizer": optimizer, "learning_rate": learning_rate, **shuffled}


def _resumed(
    first: MakeBackend, second: MakeBackend, case: Case, options: dict, tmp_path
) -> tuple[list[float], dict, frae.TrainingState]:
    """k steps on ``first``, its checkpoint written and read, k more on a fresh ``second``:
    the 2k losses, the weights and the state after."""
    x = multi_sine(batch=4, steps=case.steps, seed=20, features=case.config.input_dim)
    before = first(case.config, seed=22)
    history = before.fit(x, **options)
    path = tmp_path / "checkpoint.safetensors"
    frae.save_checkpoint(path, before.get_weights(), history["training_state"])
    del before  # a backend may reuse a dropped object's compiled functions
    weights, state = frae.load_checkpoint(path, case.config)
    after = second(case.config, weights=weights)
    resumed = after.fit(x, **options, training_state=state)
    return history["loss"] + resumed["loss"], after.get_weights(), resumed["training_state"]


_UNINTERRUPTED: dict[tuple[object, ...], tuple[list[float], dict]] = {}
"""2k uninterrupted steps by (backend, config, optimizer): each is needed by many pairs."""


def _uninterrupted(make: MakeBackend, case: Case, options: dict) -> tuple[list[float], dict]:
    key = (getattr(make, "args", (make,)), case.config, options["optimizer"])
    if key not in _UNINTERRUPTED:
        x = multi_sine(batch=4, steps=case.steps, seed=20, features=case.config.input_dim)
        model = make(case.config, seed=22)
        losses = model.fit(x, **{**options, "epochs": 2 * HALF})["loss"]
        _UNINTERRUPTED[key] = losses, model.get_weights()
    return _UNINTERRUPTED[key]


def _assert_same_training(
    optimizer: str, losses: list[float], weights: dict, expected: tuple[list[float], dict], what
) -> None:
    expected_losses, expected_weights = expected
    assert len(losses) == len(expected_losses) == 8, what
    # the losses as float32, as the backends compute them (the reference's too, when it ran
    # part of a resumed fit): held to the float32 trajectory tolerance, not float64's
    assert_close(optimizer, np.float32(losses), np.float64(expected_losses), f"{what}: loss")
    for name, value in expected_weights.items():
        assert_close(f"{optimizer} weights", weights[name], value, f"{what}: {name}")


@pytest.mark.parametrize("partner_name, case, optimizer, learning_rate", RUNS)
def test_a_checkpoint_resumes_fit_where_it_stopped(
    make_backend: MakeBackend,
    reference: MakeBackend,
    partner_name: str,
    optimizer: str,
    learning_rate: float,
    case: Case,
    tmp_path,
) -> None:
    """k steps on one of the backend and a partner (itself or the reference), k on the
    other, both ways, equal 2k steps of the one that finished and of the reference."""
    partner = make_backend if partner_name == "itself" else reference
    options = _options(optimizer, learning_rate)
    oracle = _uninterrupted(reference, case, options)
    for first, second, what in (
        (make_backend, partner, f"here -> {partner_name}"),
        (partner, make_backend, f"{partner_name} -> here"),
    ):
        losses, weights, state = _resumed(first, second, case, options, tmp_path)
        _assert_same_training(optimizer, losses, weights, oracle, f"{what} vs the reference")
        own = _uninterrupted(second, case, options)
        _assert_same_training(optimizer, losses, weights, own, f"{what} vs its own 2k steps")
        assert (state.optimizer, state.step, state.epoch) == (optimizer, 8, 2 * HALF), what


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_a_checkpoint_crosses_to_each_other_backend(
    make_backend: MakeBackend,
    other_backend: MakeBackend,
    reference: MakeBackend,
    case: Case,
    tmp_path,
) -> None:
    """Adam's k steps here and k on another backend (``--other-backend``; by default every
    installed backend not under test), both ways, equal the reference's 2k steps."""
    options = _options("adam", 1e-2)
    oracle = _uninterrupted(reference, case, options)
    for first, second, what in (
        (make_backend, other_backend, "here -> other"),
        (other_backend, make_backend, "other -> here"),
    ):
        losses, weights, _ = _resumed(first, second, case, options, tmp_path)
        _assert_same_training("adam", losses, weights, oracle, f"{what} vs the reference")


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_the_state_after_fit_is_the_references(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """``history["training_state"]``: the step and epoch counts, and Adam's moments of every
    weight, canonical names and shapes, as the reference's."""
    x = multi_sine(batch=4, steps=case.steps, seed=23, features=case.config.input_dim)
    options = _options("adam", 1e-2)
    state = make_backend(case.config, seed=24).fit(x, **options)["training_state"]
    expected = reference(case.config, seed=24).fit(x, **options)["training_state"]
    assert (state.optimizer, state.step, state.epoch) == ("adam", 4, HALF)
    for moment in ("m", "v"):
        found, wanted = getattr(state, moment), getattr(expected, moment)
        assert found.keys() == wanted.keys(), moment
        for name, value in wanted.items():
            assert found[name].dtype == np.float32 and found[name].shape == value.shape, name
            assert_close("adam weights", found[name], value, f"{moment}[{name}]")
    sgd = make_backend(case.config, seed=24).fit(x, **_options("sgd", 0.5))["training_state"]
    assert (sgd.optimizer, sgd.step, sgd.epoch, sgd.m, sgd.v) == ("sgd", 4, HALF, {}, {})


def _without_first(moment: dict) -> dict:
    return dict(list(moment.items())[1:])


def _with_extra(moment: dict) -> dict:
    return {**moment, "decoder/extra/kernel": np.zeros((2, 2), np.float32)}


def _misshapen(moment: dict) -> dict:
    name, value = next(iter(moment.items()))
    return {**moment, name: np.zeros((*value.shape, 1), np.float32)}


def _not_finite(moment: dict) -> dict:
    name, value = next(iter(moment.items()))
    return {**moment, name: np.full_like(value, np.nan)}


BAD_STATES: dict[str, tuple[Callable[[frae.TrainingState], frae.TrainingState], str]] = {
    "another optimizer": (lambda s: dataclasses.replace(s, optimizer="sgd"), "optimizer"),
    "a missing moment": (lambda s: dataclasses.replace(s, m=_without_first(s.m)), "missing"),
    "an extra moment": (lambda s: dataclasses.replace(s, v=_with_extra(s.v)), "extra"),
    "a misshapen moment": (lambda s: dataclasses.replace(s, m=_misshapen(s.m)), "shape"),
    "a negative step": (lambda s: dataclasses.replace(s, step=-1), "training_state.step"),
    "a negative epoch": (lambda s: dataclasses.replace(s, epoch=-2), "training_state.epoch"),
    "a moment not finite": (lambda s: dataclasses.replace(s, v=_not_finite(s.v)), "finite"),
    "a negative second moment": (
        lambda s: dataclasses.replace(s, v={k: -1 - v for k, v in s.v.items()}),
        "negative",
    ),
    "not a state": (lambda s: {"step": s.step}, "training_state"),
}


@pytest.mark.parametrize("bad", list(BAD_STATES))
def test_a_state_fit_cannot_continue_is_refused_with_the_weights_untouched(
    make_backend: MakeBackend, reference: MakeBackend, bad: str
) -> None:
    corrupt, named = BAD_STATES[bad]
    x = multi_sine(batch=2, steps=6, seed=25)
    state = reference(seed=26).fit(x, epochs=2, learning_rate=1e-2)["training_state"]
    model = make_backend(seed=27)
    before = model.get_weights()
    with pytest.raises((ValueError, TypeError)) as raised:
        model.fit(x, epochs=1, learning_rate=1e-2, training_state=corrupt(state))
    assert named in str(raised.value), str(raised.value)
    assert_same_weights(model.get_weights(), before, f"{bad} changed")
    # and the model still trains from that state's good original
    assert len(model.fit(x, epochs=1, learning_rate=1e-2, training_state=state)["loss"]) == 1
