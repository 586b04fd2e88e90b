"""The oracle's hand-written back-propagation through time against central differences."""

from __future__ import annotations

import numpy as np
import pytest

from impls.reference import model, train
from parity_tests.cases import CASE_PARAMS, Case

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
