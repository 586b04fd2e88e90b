"""The backward passes written by hand against central differences: each activation's slope
(``frae.activations``, the one formula every hand-written backward pass reads), and the
oracle's back-propagation through time."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from frae.activations import activation_slope
from impls.reference import model, train
from impls.reference.model import activate, sigmoid
from parity_tests.cases import CASE_PARAMS, Case


@pytest.mark.parametrize("name", frae.ACTIVATIONS)
def test_slope_equals_central_differences(name: str) -> None:
    """In float64 over a ∈ [−8, 8], where every activation bends."""
    pre, step = np.linspace(-8.0, 8.0, 161), 1e-6
    expected = (activate(name, pre + step) - activate(name, pre - step)) / (2 * step)
    slope = activation_slope(name, pre, activate(name, pre), sigmoid, np.ones_like)
    np.testing.assert_allclose(slope, expected, rtol=0, atol=1e-8)


def test_an_unknown_activation_is_refused() -> None:
    with pytest.raises(ValueError, match="activation must be one of"):
        activation_slope("relu", np.zeros(2), np.zeros(2), sigmoid, np.ones_like)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_swish_keeps_its_slope_far_from_zero(dtype: type) -> None:
    """Swish's slope tends to 1 for large a and to 0 for large −a; written as act + σ(1 − act)
    it would cancel to 0 for large a, and a diverging fit's gradients would vanish."""
    pre = np.array([-1e4, -60.0, 60.0, 1e4, 1e20], dtype)
    with np.errstate(over="ignore"):
        out = activate("swish", pre)
        slope = activation_slope("swish", pre, out, sigmoid, np.ones_like)
    np.testing.assert_allclose(slope, [0.0, 0.0, 1.0, 1.0, 1.0], atol=1e-20)


# Fourth-order central differences err by ~STEP⁴ (truncation) plus ~1e-16·loss/STEP
# (rounding): at most 1.5e-7 relative over the cases, where the second-order difference
# at this step erred by 5.3e-5 on the wide case (large third derivatives).
STEP = 1e-4
MAX_RELATIVE_ERROR = 1e-6


def _random_params(case: Case, seed: int) -> model.Params:
    """Weights large enough (std 0.5) that every activation works in its curved range."""
    rng = np.random.default_rng(seed)
    shapes = case.config.parameter_shapes()
    return {name: rng.normal(0.0, 0.5, size=shape) for name, shape in shapes.items()}


def _central_differences(
    case: Case, params: model.Params, x: np.ndarray, y: np.ndarray
) -> model.Params:
    grads = {}
    for name, value in params.items():
        grad = np.empty_like(value)
        for index in np.ndindex(value.shape):
            original = value[index]
            losses = []
            for offset in (STEP, -STEP, 2 * STEP, -2 * STEP):
                value[index] = original + offset
                losses.append(train.loss_and_grads(case.config, params, x, y)[0])
            value[index] = original
            up, down, up2, down2 = losses
            grad[index] = (8 * (up - down) - (up2 - down2)) / (12 * STEP)
        grads[name] = grad
    return grads


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_gradients_equal_central_differences(case: Case) -> None:
    params = _random_params(case, seed=1)
    x = case.inputs(seed=2).astype(np.float64)
    y = case.inputs(seed=3).astype(np.float64)
    _, analytic = train.loss_and_grads(case.config, params, x, y)
    numeric = _central_differences(case, params, x, y)
    for name in params:
        scale = max(np.abs(numeric[name]).max(), np.abs(analytic[name]).max())
        assert scale > 0, f"{name}: gradient is zero, the check would prove nothing"
        error = np.abs(analytic[name] - numeric[name]).max() / scale
        assert error < MAX_RELATIVE_ERROR, f"{name}: relative error {error:.2e}"
