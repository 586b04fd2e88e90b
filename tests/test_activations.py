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
