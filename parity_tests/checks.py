"""Checks shared by the parity tests beyond closeness (``tolerances.assert_close``)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def parameters_without_gradient(grads: Mapping[str, object]) -> list[str]:
    """Every parameter whose gradient is missing (``None``), not finite, or zero everywhere.

    A loss disconnected from the weights (the original "No gradients provided for any
    variable") shows here as every name at once.
    """
    return [
        name
        for name, grad in grads.items()
        if grad is None or not np.all(np.isfinite(grad)) or not np.any(grad)
    ]
