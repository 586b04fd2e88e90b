"""The contract's "Rate: training the codec for its bits": the loss adds λ times each frame's
bits under a learned prior (μ, ρ), a discretized logistic, each symbol floored at 24 bits;
its gradients in μ, ρ and, straight through the rounding, in the weights.

Every test takes a rate case (``cases.RATE``, both feedbacks) with a learned prior of
``cases.RATE_PRIORS`` and compares with the reference on fixtures whose codes lie at least
``cases.MARGIN`` from a tie and whose symbols at least ``cases.FLOOR_MARGIN`` bits from the
floor (``cases.rate_checked`` asserts both, as the training trajectory's every step does).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import frae
from frae.codec import rate
from frae.config import PRIOR_LOCATION, PRIOR_LOG_SCALE
from parity_tests.cases import RATE_PARAMS, Case, assert_rate_margins, rate_checked
from parity_tests.checks import parameters_without_gradient
from parity_tests.conftest import MakeBackend
from parity_tests.tolerances import TOLERANCES, assert_close

TAIL_BITS = 10.0
"""A symbol of the far tails costs at least this much: where a difference of two float32
sigmoids has lost most of its digits (2^−10 against their rounding of 2^−24)."""
SMALL_STEP = 1e-4
"""Δ/s at most this: p ≈ Δ/(4s), a difference of two sigmoids near ½ that float32 holds to
a few digits."""
FIT_STEPS = 6
"""Steps of a trajectory, each on the whole batch."""
OPTIMIZERS = pytest.mark.parametrize(
    "optimizer, learning_rate", [("sgd", 0.2), ("adam", 1e-2)], ids=["sgd", "adam"]
)
PROMISE_BITS, PROMISE_FREQUENCY = 0.01, 256
"""The integer prior's promise: −log2(f / 2^P) within 0.01 bit of −log2 p wherever f ≥ 256."""


def _pair(
    make_backend: MakeBackend, reference: MakeBackend, case: Case, prior: str
) -> tuple[Any, Any, np.ndarray]:
    """The backend under test and the reference, both holding ``rate_checked``'s weights with
    ``prior``, and its inputs."""
    weights, x = rate_checked(case, prior)
    return make_backend(case.config, weights=weights), reference(case.config, weights=weights), x


def _assert_loss_and_gradients_equal(model: Any, oracle: Any, x: np.ndarray) -> None:
    """Every gradient finite and not all zero, and it and the loss the reference's."""
    loss, grads = model.loss_and_grads(x)
    expected_loss, expected = oracle.loss_and_grads(x)
    missing = parameters_without_gradient(grads)
    assert not missing, f"no finite, non-zero gradient for {missing}"
    assert_close("loss", np.array(loss, np.float32), np.array(expected_loss))
    for name, value in expected.items():
        assert_close("gradients", grads[name], value, name)


def _information(oracle: Any, x: np.ndarray) -> np.ndarray:
    """−log2 p of each of the reference's codes (B, T, L), unfloored."""
    weights, step = oracle.get_weights(), oracle.config.code_step
    codes = oracle.encode(x)
    return rate.information(codes, weights[PRIOR_LOCATION], weights[PRIOR_LOG_SCALE], step)


@pytest.mark.parametrize("case", RATE_PARAMS)
def test_the_rate_loss_and_gradients_equal_the_references(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """The loss with the rate, and the gradient of every weight, μ and ρ included, equal the
    reference's: the rate's pull reaches the code straight through the rounding."""
    _assert_loss_and_gradients_equal(*_pair(make_backend, reference, case, "moderate"))


@pytest.mark.parametrize("case", RATE_PARAMS)
def test_a_zero_rate_weight_adds_nothing_but_the_prior(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """λ = 0: μ and ρ are weights, with zero gradients; the loss and the other gradients are
    the plain quantized model's (the reference's), floored symbols and all."""
    weights, x = rate_checked(case, "far_tails")
    model = make_backend(dataclasses.replace(case.config, rate_weight=0), weights=weights)
    plain = dataclasses.replace(case.config, rate_weight=None)
    shapes = plain.parameter_shapes()
    oracle = reference(plain, weights={k: v for k, v in weights.items() if k in shapes})
    assert model.get_weights().keys() == weights.keys()
    loss, grads = model.loss_and_grads(x)
    expected_loss, expected = oracle.loss_and_grads(x)
    for name in case.config.prior_parameters:
        np.testing.assert_array_equal(grads[name], 0.0, f"{name}'s gradient at λ = 0")
    assert_close("loss", np.array(loss, np.float32), np.array(expected_loss), "the plain one's")
    for name, value in expected.items():
        assert_close("gradients", grads[name], value, name)


@pytest.mark.parametrize("case", RATE_PARAMS)
def test_symbols_in_the_far_tails_cost_their_bits_or_the_floor(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """μ several scales below the codes: symbols of 10 to 24 bits cost their exact bits,
    those beyond cost 24 and pass no gradient; loss, gradients and ``frae.codec.bits``
    ((B, T), and (T,) for one sequence) are the reference's."""
    model, oracle, x = _pair(make_backend, reference, case, "far_tails")
    information = _information(oracle, x)
    tail = (information >= TAIL_BITS) & (information < rate.FLOOR_BITS)
    floored = information > rate.FLOOR_BITS
    assert tail.sum() >= 3 and floored.sum() >= 3, (tail.sum(), floored.sum())
    _assert_loss_and_gradients_equal(model, oracle, x)
    bits = frae.codec.bits(model, x)
    assert bits.shape == x.shape[:2]
    np.testing.assert_array_equal(bits, frae.codec.bits(oracle, x), "bits")
    np.testing.assert_array_equal(frae.codec.bits(model, x[0]), bits[0], "one sequence's bits")


@pytest.mark.parametrize("case", RATE_PARAMS)
def test_a_prior_much_wider_than_its_step_costs_the_references_bits(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Δ/s ≤ 1e-4 and every code near μ (within 0.01 scales): each p a small difference of
    two sigmoids near ½; the loss and every gradient are the reference's."""
    model, oracle, x = _pair(make_backend, reference, case, "small_step")
    weights, step = oracle.get_weights(), case.config.code_step
    scale = np.exp(weights[PRIOR_LOG_SCALE].astype(np.float64))
    assert np.all(step / scale <= SMALL_STEP), step / scale
    assert np.all(np.abs(oracle.encode(x) - weights[PRIOR_LOCATION]) < 0.01 * scale)
    _assert_loss_and_gradients_equal(model, oracle, x)


@pytest.mark.parametrize("prior", ["narrow", "wide"])
@pytest.mark.parametrize("case", RATE_PARAMS)
def test_a_prior_that_floors_every_symbol_passes_no_gradient(
    make_backend: MakeBackend, reference: MakeBackend, case: Case, prior: str
) -> None:
    """s = e^−60 or e^110 (beyond float32), μ off the grid: every symbol costs 24 bits and
    passes no gradient, none NaN (μ's and ρ's are zero); the loss and every gradient are the
    reference's."""
    model, oracle, x = _pair(make_backend, reference, case, prior)
    assert np.all(_information(oracle, x) > rate.FLOOR_BITS)
    loss, grads = model.loss_and_grads(x)
    expected_loss, expected = oracle.loss_and_grads(x)
    for name in case.config.prior_parameters:
        np.testing.assert_array_equal(grads[name], 0.0, f"{name}'s gradient")
    assert_close("loss", np.array(loss, np.float32), np.array(expected_loss))
    for name, value in expected.items():
        assert_close("gradients", grads[name], value, name)


_TRAINED: dict[tuple[object, ...], tuple[list[float], dict[str, np.ndarray]]] = {}
"""``FIT_STEPS`` steps' losses and the weights after, by (backend, config, optimizer):
the trajectory test and the integer prior's both need Adam's."""


def _trained(
    make: MakeBackend, case: Case, optimizer: str, learning_rate: float, *, stepwise: bool = False
) -> tuple[list[float], dict[str, np.ndarray]]:
    """``FIT_STEPS`` full-batch steps of ``make``'s backend from ``rate_checked``'s moderate
    prior: the losses and the weights after. ``stepwise`` (the reference's): a ``fit`` a step,
    each continuing the last one's training state, every step's margins asserted first (the
    trajectory's precondition)."""
    key = (getattr(make, "args", (make,)), case.config, optimizer)
    if key not in _TRAINED:
        weights, x = rate_checked(case, "moderate")
        model = make(case.config, weights=weights)
        losses: list[float] = []
        state = None
        for _ in range(FIT_STEPS if stepwise else 1):
            assert_rate_margins(case, model.get_weights(), x)
            history = model.fit(
                x,
                epochs=1 if stepwise else FIT_STEPS,
                optimizer=optimizer,
                learning_rate=learning_rate,
                training_state=state,
            )
            losses, state = losses + history["loss"], history["training_state"]
        _TRAINED[key] = losses, model.get_weights()
    return _TRAINED[key]


@OPTIMIZERS
@pytest.mark.parametrize("case", RATE_PARAMS)
def test_fit_with_a_rate_follows_the_reference(
    make_backend: MakeBackend,
    reference: MakeBackend,
    case: Case,
    optimizer: str,
    learning_rate: float,
) -> None:
    """``fit`` trains μ and ρ with the other weights: every loss and the weights after equal
    the reference's trajectory; the loss falls and μ and ρ move."""
    expected_losses, expected = _trained(reference, case, optimizer, learning_rate, stepwise=True)
    losses, weights = _trained(make_backend, case, optimizer, learning_rate)
    assert len(losses) == FIT_STEPS
    assert_close(optimizer, np.array(losses, np.float32), np.array(expected_losses), "losses")
    for name, value in expected.items():
        assert_close(f"{optimizer} weights", weights[name], value, name)
    assert losses[-1] < losses[0], losses
    before, _ = rate_checked(case, "moderate")
    moved = TOLERANCES[f"{optimizer} weights"].atol
    for name in case.config.prior_parameters:
        assert np.all(np.abs(weights[name] - before[name]) > moved), f"{name} did not move"


@pytest.mark.parametrize("case", RATE_PARAMS)
def test_the_integer_prior_of_a_trained_model_keeps_its_promise(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """``prior_from_model`` after Adam's steps: frequencies of at least 1 summing to 2^24, each
    of at least 256 within 0.01 bit of the reference's learned p; the bytes it codes here
    read back to this backend's symbols and decompress on the reference to its outputs."""
    pytest.importorskip("constriction")
    _, expected = _trained(reference, case, "adam", 1e-2, stepwise=True)
    _, weights = _trained(make_backend, case, "adam", 1e-2)
    model, step = make_backend(case.config, weights=weights), case.config.code_step
    assert step is not None
    prior = frae.codec.prior_from_model(model)
    frequencies = prior.frequencies.astype(np.int64)
    assert frequencies.min() >= 1
    np.testing.assert_array_equal(frequencies.sum(axis=1), 2**frae.codec.PRECISION)
    symbols = prior.lo[:, None] + np.arange(prior.escape)
    location, log_scale = expected[PRIOR_LOCATION][:, None], expected[PRIOR_LOG_SCALE][:, None]
    learned = rate.information(step * symbols, location, log_scale, step)
    coded = frae.codec.PRECISION - np.log2(frequencies[:, :-1])
    kept = frequencies[:, :-1] >= PROMISE_FREQUENCY
    assert kept.any(axis=1).all(), "a table without a frequency of 256"
    assert np.max(np.abs(coded - learned)[kept]) <= PROMISE_BITS
    _, x = rate_checked(case, "moderate")
    data = frae.codec.compress(model, prior, x)
    np.testing.assert_array_equal(
        frae.codec.read(prior, data), frae.codec.symbols(model.encode(x), step)
    )
    oracle = reference(case.config, weights=weights)
    assert_close("outputs", model.predict(x), frae.codec.decompress(oracle, prior, data))
