"""The rate a learned prior gives the codes (``frae.codec.rate``): the bits in the product's
log form against independent forms where each is exact, the floor, and the slopes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import frae
from frae.codec import rate

STEP = 2**-3


def direct(codes: np.ndarray, location: float, log_scale: float, step: float) -> np.ndarray:
    """−log2(σ(a) − σ(b)): the difference of two sigmoids, exact only away from the tails."""
    scale = math.exp(log_scale)
    a, b = (codes - location + step / 2) / scale, (codes - location - step / 2) / scale
    with np.errstate(divide="ignore"):  # p rounds to 0 in the far tail above μ
        return np.asarray(-np.log2(1 / (1 + np.exp(-a)) - 1 / (1 + np.exp(-b))))


def test_the_bits_equal_the_difference_of_sigmoids_where_it_keeps_its_digits() -> None:
    codes = STEP * np.arange(-12, 13)
    np.testing.assert_allclose(
        rate.information(codes, 0.1, -0.5, STEP), direct(codes, 0.1, -0.5, STEP), rtol=1e-12
    )


@pytest.mark.parametrize("side", [-1, 1])
def test_far_tails_cost_their_true_bits(side: int) -> None:
    """Beyond 40 scales p = e^−|x|·(1 − e^−c) to 1e-17 (x = b above μ, −a below), where a
    difference of sigmoids is 0 above μ."""
    location, log_scale, scale = 0.05, -3.0, math.exp(-3.0)
    codes = location + side * STEP * np.arange(40, 60) * 2  # 40 to 70 scales away
    a, b = (codes - location + STEP / 2) / scale, (codes - location - STEP / 2) / scale
    nearest = b if side > 0 else -a
    expected = (nearest - math.log(-math.expm1(-STEP / scale))) / math.log(2)
    np.testing.assert_allclose(rate.information(codes, location, log_scale, STEP), expected, 1e-13)
    if side > 0:
        assert np.all(np.isinf(direct(codes, location, log_scale, STEP)))


def test_a_wide_scale_near_the_centre_costs_log2_of_four_scales_over_the_step() -> None:
    """At u = μ, p = σ(c/2)² · (1 − e^−c) = c/4 · (1 + O(c²)) for c = Δ/s small: within c²
    bits."""
    for log_scale in (4.0, 8.0):
        c = STEP / math.exp(log_scale)
        found = rate.information(np.array([0.0]), 0.0, log_scale, STEP)[0]
        assert found == pytest.approx(-math.log2(c / 4), abs=c * c)


def test_a_symbol_beyond_the_floor_costs_24_bits_and_no_slope() -> None:
    codes = STEP * np.arange(0, 200, 5)
    information = rate.information(codes, 0.0, -2.0, STEP)
    assert information.min() < rate.FLOOR_BITS < information.max()
    floored = information > rate.FLOOR_BITS
    np.testing.assert_array_equal(rate.symbol_bits(codes, 0.0, -2.0, STEP)[floored], 24.0)
    for slope in rate.slopes(codes, 0.0, -2.0, STEP):
        assert np.all(slope[floored] == 0.0) and np.all(slope[~floored][1:] != 0.0)


@pytest.mark.parametrize(("location", "log_scale"), [(0.1, -0.7), (0.6, -2.5), (-0.2, 1.5)])
def test_the_slopes_are_the_bits_derivatives(location: float, log_scale: float) -> None:
    """Against central differences of step 1e-6 (an error of about 1e-9 here)."""
    scales_away = np.array([-6.0, -1.3, 0.0, 0.4, 2.0, 5.5])
    codes, h = location + math.exp(log_scale) * scales_away, 1e-6

    def bits(u: np.ndarray = codes, mu: float = location, rho: float = log_scale) -> np.ndarray:
        return rate.symbol_bits(u, mu, rho, STEP)

    assert np.all(bits() < rate.FLOOR_BITS)
    slopes = rate.slopes(codes, location, log_scale, STEP)
    numeric = [
        (bits(u=codes + h) - bits(u=codes - h)) / (2 * h),
        (bits(mu=location + h) - bits(mu=location - h)) / (2 * h),
        (bits(rho=log_scale + h) - bits(rho=log_scale - h)) / (2 * h),
    ]
    for found, expected in zip(slopes, numeric, strict=True):
        np.testing.assert_allclose(found, expected, atol=1e-8)


def test_bits_of_a_model_sum_its_codes_bits_per_frame() -> None:
    config = frae.FRAEConfig(latent_dim=2, code_step=STEP, rate_weight=0.1)
    weights = frae.params.initial_weights(config, 3)
    weights["prior/location"] = np.array([0.2, -0.1], np.float32)
    weights["prior/log_scale"] = np.array([-1.0, -2.0], np.float32)
    model = frae.create("reference", config, weights=weights)
    x = frae.data.multi_sine(3, 5, seed=2)
    codes = model.encode(x)
    found = frae.codec.bits(model, x)
    assert found.shape == (3, 5) and frae.codec.bits(model, x[1]).shape == (5,)
    for dimension, (mu, rho) in enumerate([(0.2, -1.0), (-0.1, -2.0)]):
        prior = np.float32(mu), np.float32(rho)
        found = found - rate.symbol_bits(codes[..., dimension], *prior, STEP)
    np.testing.assert_allclose(found, 0.0, atol=1e-12)
    np.testing.assert_array_equal(frae.codec.bits(model, x[1]), frae.codec.bits(model, x)[1])


def test_bits_of_a_model_without_a_learned_prior_is_refused() -> None:
    model = frae.create("reference", frae.FRAEConfig(code_step=STEP))
    with pytest.raises(ValueError, match=r"no learned prior.*rate_weight"):
        frae.codec.bits(model, frae.data.multi_sine(1, 3))
