"""The suite's closeness check; the tolerances themselves, each with the reason for its size,
are the core package's (``frae/tolerances.py``), which ``frae compare`` holds to as well."""

from __future__ import annotations

import numpy as np

from frae.tolerances import FLOAT64, TOLERANCES, Tolerance, held_to

__all__ = ["FLOAT64", "TOLERANCES", "Tolerance", "assert_close"]


def assert_close(
    quantity: str,
    actual: np.ndarray,
    expected: np.ndarray,
    what: str = "",
    float32_error: float = 0.0,
) -> None:
    """Equal shapes, and values within ``TOLERANCES[quantity]`` (``FLOAT64`` if both are);
    ``float32_error`` is what a plain float32 evaluation errs by, for tolerances that
    allow for it."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    label = f"{quantity} {what}".strip()
    assert actual.shape == expected.shape, f"{label}: shape {actual.shape} != {expected.shape}"
    both_float64 = actual.dtype == expected.dtype == np.float64
    tolerance = held_to(quantity, both_float64=both_float64)
    atol = tolerance.absolute(expected, float32_error)
    np.testing.assert_allclose(actual, expected, rtol=tolerance.rtol, atol=atol, err_msg=label)
