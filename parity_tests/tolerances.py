"""Every tolerance the suite uses, with the reason for its size.

A comparison takes the tolerance of the less precise of its two arrays. Tighten an entry
when measurements allow; never loosen one to make a failure pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    reason: str


TOLERANCES = {
    np.dtype(np.float64): Tolerance(
        rtol=1e-12,
        atol=1e-12,
        reason="float64 rounding (1e-16) of the same maths by another route, a few hundred "
        "operations per step over at most tens of steps",
    ),
    np.dtype(np.float32): Tolerance(
        rtol=1e-5,
        atol=1e-6,
        reason="float32 rounding (6e-8) of the same maths by another route, a few hundred "
        "operations per step over at most tens of steps",
    ),
}


def assert_close(what: str, actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal shapes, and values within the tolerance of the coarser dtype of the two."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    coarser = min(actual.dtype, expected.dtype, key=lambda dtype: np.finfo(dtype).bits)
    tolerance = TOLERANCES[np.dtype(coarser)]
    np.testing.assert_allclose(
        actual, expected, rtol=tolerance.rtol, atol=tolerance.atol, err_msg=what
    )
