"""A port of the contract made slower on demand, for the test that ``frae diff`` catches a
regression: the reference, each public call stretched to ``FRAE_SLOWDOWN`` times its own
duration (a busy wait, as more arithmetic would be) where that variable is set."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import Any

from impls.reference import ReferenceBackend


def stretched[Method: Callable[..., Any]](method: Method) -> Method:
    """``method``, taking ``FRAE_SLOWDOWN`` times as long (1 where it is not set)."""

    @functools.wraps(method)
    def slower(*args: Any, **kwargs: Any) -> Any:
        factor = float(os.environ.get("FRAE_SLOWDOWN", "1"))
        begin = time.perf_counter()
        result = method(*args, **kwargs)
        until = begin + (time.perf_counter() - begin) * factor
        while time.perf_counter() < until:
            pass
        return result

    return slower  # type: ignore[return-value]


class SlowedReference(ReferenceBackend):
    """The reference, its predict, gradient and training stretched."""

    predict = stretched(ReferenceBackend.predict)
    loss_and_grads = stretched(ReferenceBackend.loss_and_grads)
    fit = stretched(ReferenceBackend.fit)
