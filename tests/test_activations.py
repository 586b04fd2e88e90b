"""``frae.activations``: each activation's slope, the one formula every backend's backward
pass written by hand reads."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from frae.activations import activation_slope
from impls.reference.model import activate, sigmoid


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
