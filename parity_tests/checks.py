"""Checks and hostile inputs shared by the parity tests beyond closeness
(``tolerances.assert_close``)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

HUGE = np.longdouble("1e400")
"""A value infinite even in float64 (where ``longdouble`` is wider, finite before the cast)."""


def parameters_without_gradient(grads: Mapping[str, object]) -> list[str]:
    """Every parameter whose gradient is missing (``None``), not finite, or zero everywhere:
    a loss disconnected from the weights shows as every name at once."""
    return [
        name
        for name, grad in grads.items()
        if grad is None or not np.all(np.isfinite(grad)) or not np.any(grad)
    ]


def assert_same_weights(actual: Mapping[str, object], expected: Mapping, what: str = "") -> None:
    """Every weight of ``expected`` bit for bit in ``actual``."""
    for name, value in expected.items():
        np.testing.assert_array_equal(
            actual[name], value, err_msg=f"{what}: {name}" if what else name
        )


def with_entry(array: np.ndarray, at: tuple[int, ...], value: float | np.floating) -> np.ndarray:
    """A copy of ``array`` with one entry set to ``value``, in a dtype that holds it."""
    changed = array.astype(np.result_type(array, value))
    changed[at] = value
    return changed


def masked_nan(array: np.ndarray) -> np.ma.MaskedArray:
    """``array`` with a NaN hidden under its mask: ``np.isfinite`` skips masked entries."""
    masked = np.ma.masked_array(array.copy(), mask=np.zeros(array.shape, bool))
    masked.data.flat[1], masked.mask.flat[1] = np.nan, True
    return masked
