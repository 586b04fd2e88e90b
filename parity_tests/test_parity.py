"""Each backend against the float64 reference: outputs, gradients, training, round trips."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from frae.data import multi_sine, original_problem
from parity_tests.cases import BOTH_MODELS, CASE_PARAMS, Case, case_params
from parity_tests.checks import parameters_without_gradient
from parity_tests.conftest import MakeBackend
from parity_tests.tolerances import assert_close

WITH_LONG = [*CASE_PARAMS, pytest.param(Case(frae.FRAEConfig(), batch=1, steps=2000), id="T=2000")]


@pytest.mark.parametrize("method", ["predict", "encode", "decode"])
@pytest.mark.parametrize("case", WITH_LONG)
def test_each_call_equals_the_reference(
    make_backend: MakeBackend, reference: MakeBackend, case: Case, method: str
) -> None:
    """The outputs x̂ of ``predict``, the codes z of ``encode``, and ``decode``'s x̂ of the
    reference's codes."""
    oracle, x = reference(case.config, seed=3), case.inputs(seed=10)
    sequences = oracle.encode(x).astype(np.float32) if method == "decode" else x
    actual = getattr(make_backend(case.config, seed=3), method)(sequences)
    assert_close("outputs", actual, getattr(oracle, method)(sequences), method)


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_loss_equals_the_reference(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    x, y = case.inputs(seed=11), case.inputs(seed=12)
    loss, _ = make_backend(case.config, seed=4).loss_and_grads(x, y)
    expected, _ = reference(case.config, seed=4).loss_and_grads(x, y)
    assert_close("loss", np.float32(loss), np.float64(expected))


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_gradients_equal_the_reference(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    x, y = case.inputs(seed=11), case.inputs(seed=12)
    _, grads = make_backend(case.config, seed=4).loss_and_grads(x, y)
    _, expected = reference(case.config, seed=4).loss_and_grads(x, y)
    missing = parameters_without_gradient(grads)
    assert not missing, f"no finite, non-zero gradient for {missing}"
    for name, grad in grads.items():
        assert_close("gradients", grad, expected[name], name)


@pytest.mark.parametrize("case", BOTH_MODELS)
@pytest.mark.parametrize(
    "options",
    [
        dict(optimizer="sgd", learning_rate=0.5, batch_size=None, shuffle=False, epochs=50),
        dict(optimizer="adam", learning_rate=1e-2, batch_size=2, shuffle=True, epochs=25),
    ],
    ids=["sgd", "adam"],
)
def test_training_follows_the_reference_step_by_step(
    make_backend: MakeBackend, reference: MakeBackend, options: dict, case: Case
) -> None:
    """50 optimizer steps (Adam's on shuffled mini-batches); every loss and the final weights."""
    x = multi_sine(batch=4, steps=case.steps, seed=5)
    optimizer, options = options["optimizer"], {**options, "seed": 6}
    model, oracle = make_backend(case.config, seed=5), reference(case.config, seed=5)
    history, expected = model.fit(x, **options), oracle.fit(x, **options)
    assert len(history["loss"]) == len(expected["loss"]) == 50
    assert_close(optimizer, np.float32(history["loss"]), np.float64(expected["loss"]), "loss")
    weights, expected_weights = model.get_weights(), oracle.get_weights()
    for name, value in weights.items():
        assert_close(f"{optimizer} weights", value, expected_weights[name], name)


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_fit_halves_the_loss_on_a_learnable_signal(make_backend: MakeBackend, case: Case) -> None:
    x = multi_sine(batch=8, steps=100, seed=7)
    losses = make_backend(case.config, seed=7).fit(x, epochs=60, learning_rate=1e-2)["loss"]
    assert losses[-1] < 0.5 * losses[0], f"loss {losses[0]:.4f} -> {losses[-1]:.4f}"


def test_fit_lowers_the_loss_on_the_original_problem(make_backend: MakeBackend) -> None:
    """The question's setting: one sequence of 10 samples, Adam at 1e-3, 50 epochs."""
    x = original_problem()
    losses = make_backend(seed=0).fit(x, epochs=50, optimizer="adam", learning_rate=1e-3)["loss"]
    assert len(losses) == 50
    assert losses[-1] < losses[0] and losses[-1] == min(losses), losses


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_fit_changes_the_weights_and_each_call_starts_a_fresh_optimizer(
    make_backend: MakeBackend, case: Case
) -> None:
    x = multi_sine(batch=2, steps=20, seed=8)
    model, twin = make_backend(case.config, seed=8), make_backend(case.config, seed=8)
    model.fit(x, epochs=2, learning_rate=1e-2)
    model.fit(x, epochs=2, learning_rate=1e-2)
    twin.fit(x, epochs=4, learning_rate=1e-2)  # one optimizer across four steps differs
    changed, continued = model.get_weights(), twin.get_weights()
    fresh = frae.initial_weights(model.config, 8)
    assert all(not np.array_equal(changed[k], fresh[k]) for k in changed), "fit left weights"
    assert any(not np.allclose(changed[k], continued[k], rtol=1e-3) for k in changed)


@pytest.mark.parametrize("case", case_params("wide", "state_deep"))
def test_weights_round_trip_bit_for_bit(make_backend: MakeBackend, tmp_path, case: Case) -> None:
    model = make_backend(case.config, seed=9)
    model.fit(case.inputs(seed=13), epochs=3, learning_rate=1e-2)
    x = case.inputs(seed=14)
    before = model.predict(x)
    model.set_weights(model.get_weights())
    np.testing.assert_array_equal(model.predict(x), before)
    frae.save_weights(tmp_path / "w.npz", model.get_weights())
    loaded = make_backend(case.config, seed=0, weights=frae.load_weights(tmp_path / "w.npz"))
    np.testing.assert_array_equal(loaded.predict(x), before)


@pytest.mark.parametrize("case", case_params("wide", "state_deep"))
def test_trained_weights_transfer_to_every_other_backend(
    make_backend: MakeBackend, other_backend: MakeBackend, case: Case
) -> None:
    """Weights trained here give the same outputs in each other backend, and back."""
    trained = make_backend(case.config, seed=15)
    trained.fit(case.inputs(seed=16), epochs=3, learning_rate=1e-2)
    x = case.inputs(seed=17)
    elsewhere = other_backend(case.config, weights=trained.get_weights())
    assert_close("outputs", elsewhere.predict(x), trained.predict(x), "there")
    elsewhere.fit(case.inputs(seed=18), epochs=3, learning_rate=1e-2)
    back = make_backend(case.config, weights=elsewhere.get_weights())
    assert_close("outputs", back.predict(x), elsewhere.predict(x), "and back")
