"""Checks, calls and hostile inputs shared by the parity tests beyond closeness
(``tolerances.assert_close``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

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


Call = Callable[..., tuple[np.ndarray, np.ndarray]]
"""``predict``, ``encode`` or ``decode`` of a backend: ``call(x, state=s, return_state=True)``
gives the outputs and the last state."""


def streamed(call: Call, sequences: np.ndarray, cuts: list[int], state: object = None) -> tuple:
    """``call`` on each chunk of ``sequences`` (cut before each index in ``cuts``), each chunk
    starting from the state the one before returned: the outputs joined, and the last state."""
    outputs = []
    for chunk in np.split(sequences, cuts, axis=-2):
        output, state = call(chunk, state=state, return_state=True)
        outputs.append(output)
    return np.concatenate(outputs, axis=-2), state


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
