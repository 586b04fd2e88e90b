"""The contract's "Quantized codes": the code rounded half to even and clipped inside the
recurrence, the feedback computed from it, gradients straight through.

Backends are compared with the reference on inputs whose reference margin to a rounding tie
is at least ``cases.MARGIN`` (each test asserts it before it compares): closer to a tie, float32
rounding may pick the neighbouring symbol, a valid code from which the two trajectories part.
"""

from __future__ import annotations

import numpy as np
import pytest

from frae import codec
from frae.data import multi_sine
from parity_tests.cases import (
    QUANTIZED,
    RATE_PARAMS,
    TIES,
    Case,
    margin_checked,
    quantized_params,
    tie_case,
    tie_weights,
    unrounded_codes,
)
from parity_tests.checks import parameters_without_gradient, streamed
from parity_tests.conftest import MakeBackend
from parity_tests.tolerances import assert_close


def _margin_checked_pair(make_backend: MakeBackend, reference: MakeBackend, case: Case) -> tuple:
    """The backend under test and the reference, both holding ``large_weights``, and the
    inputs of ``margin_checked``."""
    weights, x = margin_checked(case)
    return make_backend(case.config, weights=weights), reference(case.config, weights=weights), x


@pytest.mark.parametrize("case", quantized_params("tanh_coarse", "tanh_fine", "swish", "state"))
def test_symbols_equal_the_references(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """encode's codes lie on the grid and their symbols are the reference's, exactly; the
    outputs of the closed loop are the reference's."""
    model, oracle, x = _margin_checked_pair(make_backend, reference, case)
    step = case.config.code_step
    codes, expected = model.encode(x), codec.symbols(oracle.encode(x), step)
    assert len(np.unique(expected)) >= 3, "the fixture's codes use too few symbols"
    np.testing.assert_array_equal(codec.symbols(codes, step) * step, codes, "codes off the grid")
    np.testing.assert_array_equal(codec.symbols(codes, step), expected, "symbols")
    assert_close("outputs", model.predict(x), oracle.predict(x), "closed-loop outputs")


@pytest.mark.parametrize("case", quantized_params("swish", "state"))
def test_decode_quantizes_what_it_is_given(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """decode of off-grid codes (beyond the clip too) equals decode of their rounding, and
    the reference's; decode(encode(x)) equals predict(x)."""
    model, oracle, x = _margin_checked_pair(make_backend, reference, case)
    step = case.config.code_step
    codes = model.encode(x)
    nudged = codes + step * np.random.default_rng(43).uniform(-0.45, 0.45, codes.shape)
    nudged[0, 0], codes[0, 0] = 50_000 * step, codec.SYMBOL_LIMIT * step  # clipped to Q
    nudged = nudged.astype(np.float32)
    decoded = model.decode(codes)
    np.testing.assert_array_equal(model.decode(nudged), decoded, "decode of off-grid codes")
    assert_close("outputs", decoded, oracle.decode(nudged), "decode against the reference")
    assert_close("self", model.decode(model.encode(x)), model.predict(x), "decode(encode(x))")


@pytest.mark.parametrize("case", [*quantized_params("swish", "state"), RATE_PARAMS[0]])
def test_quantized_chunks_equal_one_call(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """predict, encode and decode in chunks chained through their states equal one call of
    the reference, outputs and last state."""
    model, oracle, x = _margin_checked_pair(make_backend, reference, case)
    calls = {"predict": x, "encode": x, "decode": oracle.encode(x).astype(np.float32)}
    for cuts in ([3], list(range(1, case.steps))):
        for method, sequences in calls.items():
            outputs, state = streamed(getattr(model, method), sequences, cuts)
            expected, last = getattr(oracle, method)(sequences, return_state=True)
            assert_close("outputs", outputs, expected, f"{method} cut at {cuts}")
            assert_close("outputs", state, last, f"{method} cut at {cuts}: last state")


@pytest.mark.parametrize("case", quantized_params("clipped", "clipped_state"))
def test_straight_through_gradients_equal_the_references(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Every gradient equals the reference's straight-through one: round passed as the
    identity, the clip blocking where |z / Δ| > Q (the fixture has codes on both sides)."""
    weights, x = margin_checked(case)
    limit = codec.SYMBOL_LIMIT * case.config.code_step
    clipped = np.abs(unrounded_codes(case, weights, x)) > limit
    assert clipped.any() and not clipped.all(), f"{clipped.mean():.0%} of the codes clipped"
    y = case.inputs(seed=44)
    _, grads = make_backend(case.config, weights=weights).loss_and_grads(x, y)
    _, expected = reference(case.config, weights=weights).loss_and_grads(x, y)
    missing = parameters_without_gradient(grads)
    assert not missing, f"no finite, non-zero gradient for {missing}"
    for name, grad in grads.items():
        assert_close("gradients", grad, expected[name], name)


@pytest.mark.parametrize("feedback", ["output", "state"])
def test_a_tie_rounds_to_the_even_symbol(
    make_backend: MakeBackend, reference: MakeBackend, feedback: str
) -> None:
    """Codes exactly k + ½ steps of Δ in float32 (``tie_case``) give the even symbols."""
    case = tie_case(feedback)
    weights = tie_weights(case.config)
    model = make_backend(case.config, weights=weights)
    oracle = reference(case.config, weights=weights)
    x = case.inputs(46)
    even = np.broadcast_to(np.rint(TIES).astype(np.int32), (case.batch, case.steps, len(TIES)))
    np.testing.assert_array_equal(codec.symbols(model.encode(x), case.config.code_step), even)
    assert_close("outputs", model.predict(x), oracle.predict(x), "outputs from the tied codes")


def test_fit_with_a_code_step_lowers_the_loss(make_backend: MakeBackend) -> None:
    """Straight-through training of the quantized model on a learnable signal."""
    config = QUANTIZED["swish"].config
    x = multi_sine(batch=8, steps=100, seed=47)
    losses = make_backend(config, seed=7).fit(x, epochs=60, learning_rate=1e-2)["loss"]
    assert losses[-1] < 0.7 * losses[0], f"loss {losses[0]:.4f} -> {losses[-1]:.4f}"
