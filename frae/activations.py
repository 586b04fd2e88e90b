"""The slope act'(a) of each activation (``frae.ACTIVATIONS``, the contract's "The model"),
written once for every array library.

The backward passes written by hand need act'(a) at every layer and step. Each slope is
written through the output act(a), which the forward pass has already computed, so that
only swish evaluates anything more, σ(a) = 1/(1 + e^−a)::

    swish    act(a) = a·σ(a)    act'(a) = σ(a) + a·σ(a)(1 − σ(a)) = σ(a) + act(1 − σ(a))
    tanh     act(a) = tanh(a)   act'(a) = 1 − act²
    sigmoid  act(a) = σ(a)      act'(a) = act(1 − act)
    linear   act(a) = a         act'(a) = 1

``activation_slope`` takes the library's own σ and ``ones_like``: the arrays of NumPy,
TensorFlow, JAX and PyTorch all combine with each other and with floats under +, − and ×,
so the one formula serves each backend. Swish's slope is σ + act(1 − σ), not the equal
act + σ(1 − act): for a large a that one subtracts two numbers near a and loses the slope of 1
(a diverging fit then never overflows, and its gradients vanish instead).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from frae.config import ACTIVATIONS


class Arithmetic(Protocol):
    """An array under +, − and ×, with another array or with a float."""

    def __add__(self, other: Any, /) -> Any: ...

    def __mul__(self, other: Any, /) -> Any: ...

    def __rsub__(self, other: float, /) -> Any: ...


def activation_slope[A: Arithmetic](
    name: str, pre: A, out: A, sigmoid: Callable[[A], A], ones_like: Callable[[A], A]
) -> A:
    """act'(a) of the activation ``name`` from ``pre`` = a and ``out`` = act(a), with the
    library's own ``sigmoid`` (for swish) and ``ones_like`` (for linear)."""
    if name == "swish":
        sigma = sigmoid(pre)
        return cast(A, sigma + out * (1.0 - sigma))
    if name == "tanh":
        return cast(A, 1.0 - out * out)
    if name == "sigmoid":
        return cast(A, out * (1.0 - out))
    if name == "linear":
        return ones_like(pre)
    raise ValueError(f"activation must be one of {ACTIVATIONS}; got {name!r}")
