"""The integer prior from a learned one (``frae.codec.learned_prior``): the window, the
frequencies rounded to nearest, and the contract's promise of 0.01 bit where f ≥ 256."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from frae.codec import learned_prior, rate
from frae.codec.prior import MAX_TABLE_SYMBOLS, PRECISION

STEP = 2**-4


def table_bits(prior: frae.codec.Prior, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """(symbols, −log2(f / 2^P)) of one dimension's table, the escape left out."""
    frequencies = prior.frequencies[dimension, :-1].astype(np.float64)
    symbols = prior.lo[dimension] + np.arange(len(frequencies))
    return symbols, PRECISION - np.log2(frequencies)


def random_priors(count: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """(μ, ρ, Δ) of L = 3 over steps 2^−14 … 1 and scales from a tenth of Δ to 4096 Δ."""
    rng = np.random.default_rng(11)
    priors = []
    for _ in range(count):
        step = 2.0 ** -int(rng.integers(0, 15))
        log_scale = np.log(step) + rng.uniform(np.log(0.1), np.log(4096.0), 3)
        priors.append((rng.normal(0.0, 2.0, 3) * step * 50, log_scale, step))
    return priors


@pytest.mark.parametrize(("location", "log_scale", "step"), random_priors(12))
def test_the_tables_keep_the_promise_and_sum_to_two_to_the_p(
    location: np.ndarray, log_scale: np.ndarray, step: float
) -> None:
    prior = learned_prior.prior_from_parameters(location, log_scale, step)
    assert prior.frequencies.min() >= 1
    np.testing.assert_array_equal(prior.frequencies.sum(axis=1, dtype=np.int64), 2**PRECISION)
    for dimension in range(3):
        symbols, bits = table_bits(prior, dimension)
        expected = rate.information(step * symbols, location[dimension], log_scale[dimension], step)
        kept = prior.frequencies[dimension, :-1] >= 256
        assert kept.any() and np.max(np.abs(bits - expected)[kept]) <= 0.01


def test_the_window_holds_every_symbol_of_probability_two_to_the_minus_p() -> None:
    prior = learned_prior.prior_from_parameters([0.3], [-1.5], STEP)
    symbols, _ = table_bits(prior, 0)
    inside = rate.information(STEP * symbols, 0.3, -1.5, STEP)
    beside = rate.information(STEP * np.array([symbols[0] - 1, symbols[-1] + 1]), 0.3, -1.5, STEP)
    assert inside.max() <= PRECISION < beside.min()


def test_a_wider_range_is_a_window_of_the_table_limit_centred_on_the_location() -> None:
    location = 5.0  # symbol 80
    prior = learned_prior.prior_from_parameters([location], [np.log(STEP * 200)], STEP)
    assert prior.escape == MAX_TABLE_SYMBOLS
    assert prior.lo[0] == 80 - MAX_TABLE_SYMBOLS // 2


def test_narrower_windows_widen_upwards_and_downwards_at_the_clip() -> None:
    top = frae.codec.SYMBOL_LIMIT * STEP
    prior = learned_prior.prior_from_parameters([0.0, 0.0, top], [-1.0, -3.0, -3.0], STEP)
    wide, _ = table_bits(learned_prior.prior_from_parameters([0.0], [-1.0], STEP), 0)
    narrow, _ = table_bits(learned_prior.prior_from_parameters([0.0], [-3.0], STEP), 0)
    assert prior.escape == len(wide) > len(narrow)
    assert prior.lo.tolist() == [wide[0], narrow[0], frae.codec.SYMBOL_LIMIT - len(wide) + 1]


def test_a_shortfall_is_taken_from_the_largest_frequency_first() -> None:
    """Two symbols of p = ½ each: none forced, scale 2^24 − 1, each rint(8388607.5) = 8388608
    (ties to even), the escape 0: one count from the first of the two equal largest."""
    frequencies = learned_prior._frequencies(np.array([1.0, 1.0]))
    assert frequencies.tolist() == [2**23 - 1, 2**23, 1]


def test_a_model_with_a_learned_prior_codes_with_its_tables() -> None:
    config = frae.FRAEConfig(latent_dim=2, code_step=STEP, rate_weight=0.5)
    weights = frae.params.initial_weights(config, 1)
    weights["prior/log_scale"] = np.array([-3.0, -2.0], np.float32)
    model = frae.create("reference", config, weights=weights)
    prior = frae.codec.prior_from_model(model)
    expected = learned_prior.prior_from_parameters([0.0, 0.0], [-3.0, -2.0], STEP)
    assert prior == expected
    x = frae.data.multi_sine(2, 9, seed=4)
    decoded = frae.codec.decompress(model, prior, frae.codec.compress(model, prior, x))
    np.testing.assert_array_equal(decoded, model.decode(model.encode(x)))
    with pytest.raises(ValueError, match="no learned prior"):
        frae.codec.prior_from_model(frae.create("reference", frae.FRAEConfig(code_step=STEP)))
