"""The decoder GRU's canonical weights in the layouts of Keras, PyTorch and Flax (the
contract's "State feedback"), as pure NumPy functions; each backend moves the arrays into its
framework.

Canonical (``GRU.parameter_shapes``): K (L, 3H), U (H, 3H), b_K (3H,), b_U (3H,), applied as
``a = z_t @ K + b_K`` and ``c = s_{t-1} @ U + b_U``, column blocks [reset | update |
candidate] (``GRU.GATES``), the reset gate multiplying ``c``'s candidate block after its
bias. The three frameworks compute the same gates, stored differently:

- Keras' ``GRUCell(reset_after=True)``: ``[kernel (L, 3H), recurrent_kernel (H, 3H),
  bias (2, 3H)]``, bias row 0 the input bias and row 1 the recurrent one; column blocks
  [z | r | h] = [update | reset | candidate] (``KERAS_GATES``).
- PyTorch's ``nn.GRUCell``: ``weight_ih (3H, L)``, ``weight_hh (3H, H)``, ``bias_ih``,
  ``bias_hh`` (3H,); row blocks [r | z | n] = [reset | update | candidate]
  (``TORCH_GATES``), the kernels transposed as ``nn.Linear``'s are.
- Flax's ``nnx.GRUCell``: ``dense_i`` (kernel (L, 3H), bias (3H,)) and ``dense_h`` (kernel
  (H, 3H), no bias); column blocks [r | z | n] (``FLAX_GATES``). With no recurrent bias it
  holds b_U's reset and update blocks in ``dense_i``'s bias and cannot hold its candidate
  block (inside r ⊙ (·)), which must be zero.

Keras to PyTorch is ``to_torch(gru, from_keras(gru, weights))``: every conversion passes
through the canonical layout. Each takes the framework's block order as ``gates``, so that
order is data, written once here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from frae.config import GRU

Array = npt.NDArray[Any]
"""An array of any dtype: the conversions move blocks and never change values."""

Gates = Sequence[str]
"""A block order: the names of ``GRU.GATES`` in the order a layout stores them."""

KERAS_GATES: Gates = ("update", "reset", "candidate")
TORCH_GATES: Gates = ("reset", "update", "candidate")
FLAX_GATES: Gates = ("reset", "update", "candidate")

TORCH_NAMES = {
    "kernel": "weight_ih",
    "recurrent_kernel": "weight_hh",
    "bias": "bias_ih",
    "recurrent_bias": "bias_hh",
}
"""``nn.GRUCell``'s name for each canonical GRU parameter, by its name within the GRU."""


def reorder_gates(array: npt.ArrayLike, source: Gates, target: Gates, axis: int = -1) -> Array:
    """``array``'s three gate blocks along ``axis``, stored in the order ``source``, in the
    order ``target``; ``array`` itself, as an array, where the orders agree.

    Raises:
        ValueError: either order is not a permutation of ``GRU.GATES``, or ``axis`` does not
            split into three blocks.
    """
    for order in (source, target):
        if sorted(order) != sorted(GRU.GATES):
            raise ValueError(f"a gate order must order {GRU.GATES}; got {tuple(order)}")
    value = np.asarray(array)
    if tuple(source) == tuple(target):
        return value
    blocks = np.split(value, 3, axis=axis)
    return np.concatenate([blocks[list(source).index(gate)] for gate in target], axis=axis)


def _checked(gru: GRU, weights: Mapping[str, npt.ArrayLike]) -> dict[str, Array]:
    """The GRU's K, U, b_K, b_U from ``weights`` as arrays, each checked against its
    canonical shape."""
    arrays = {}
    for name, shape in gru.parameter_shapes().items():
        value = np.asarray(weights[name])
        if value.shape != shape:
            raise ValueError(f"{name} must have shape {shape}; got {value.shape}")
        arrays[name] = value
    return arrays


def to_keras(
    gru: GRU, weights: Mapping[str, npt.ArrayLike], gates: Gates = KERAS_GATES
) -> list[Array]:
    """Canonical GRU weights as ``keras.layers.GRUCell(reset_after=True).set_weights`` takes
    them: ``[K, U, [b_K; b_U]]``, each column block moved from ``GRU.GATES``'s order to
    ``gates``' (the reset and update blocks swap)."""
    kernel, recurrent_kernel, bias, recurrent_bias = _checked(gru, weights).values()
    arrays = (kernel, recurrent_kernel, np.stack([bias, recurrent_bias]))
    return [reorder_gates(array, GRU.GATES, gates) for array in arrays]


def from_keras(
    gru: GRU, keras_weights: Sequence[npt.ArrayLike], gates: Gates = KERAS_GATES
) -> dict[str, Array]:
    """``to_keras``' inverse: ``GRUCell(reset_after=True).get_weights()`` with column blocks
    in the order ``gates``, as canonical weights by name."""
    kernel, recurrent_kernel, bias = (
        reorder_gates(array, gates, GRU.GATES) for array in keras_weights
    )
    if bias.ndim != 2 or bias.shape[0] != 2:
        raise ValueError(f"a Keras GRUCell's bias must have shape (2, 3H); got {bias.shape}")
    values = (kernel, recurrent_kernel, bias[0], bias[1])
    return _checked(gru, dict(zip(gru.parameter_shapes(), values, strict=True)))


def to_torch(
    gru: GRU, weights: Mapping[str, npt.ArrayLike], gates: Gates = TORCH_GATES
) -> dict[str, Array]:
    """Canonical GRU weights as ``nn.GRUCell``'s parameters by its names (``TORCH_NAMES``):
    ``weight_ih = Kᵀ``, ``weight_hh = Uᵀ``, ``bias_ih = b_K``, ``bias_hh = b_U``, each block
    moved from ``GRU.GATES``'s order to ``gates``' (the same order: nothing moves)."""
    return {
        TORCH_NAMES[name.rpartition("/")[2]]: reorder_gates(value, GRU.GATES, gates).T
        for name, value in _checked(gru, weights).items()
    }


def from_torch(
    gru: GRU, torch_weights: Mapping[str, npt.ArrayLike], gates: Gates = TORCH_GATES
) -> dict[str, Array]:
    """``to_torch``'s inverse: ``nn.GRUCell``'s parameters (or their gradients) by its names,
    row blocks in the order ``gates``, as canonical weights by name; the kernels come back
    as transposed views, with nothing copied where no block moves."""
    canonical = {}
    for name in gru.parameter_shapes():
        value = np.asarray(torch_weights[TORCH_NAMES[name.rpartition("/")[2]]])
        canonical[name] = reorder_gates(value.T, gates, GRU.GATES)
    return _checked(gru, canonical)


def to_flax(
    gru: GRU, weights: Mapping[str, npt.ArrayLike], gates: Gates = FLAX_GATES
) -> dict[str, Array]:
    """Canonical GRU weights as ``nnx.GRUCell``'s state by path: ``dense_i/kernel = K``,
    ``dense_i/bias = b_K + [b_U,r | b_U,p | 0]``, ``dense_h/kernel = U``, blocks in the
    order ``gates``. b_U's reset and update blocks add to b_K's, as both enter the same sum.

    Raises:
        ValueError: b_U's candidate block is not zero: ``nnx.GRUCell`` cannot hold it.
    """
    kernel, recurrent_kernel, bias, recurrent_bias = _checked(gru, weights).values()
    gate_biases, candidate_bias = np.split(recurrent_bias, [2 * gru.state_dim])
    if np.any(candidate_bias != 0):
        raise ValueError(
            f"{gru.recurrent_bias}'s candidate block must be zero for nnx.GRUCell, which has "
            f"no recurrent bias; got largest magnitude {float(np.abs(candidate_bias).max())}"
        )
    input_bias = bias + np.concatenate([gate_biases, np.zeros_like(candidate_bias)])
    return {
        "dense_i/kernel": reorder_gates(kernel, GRU.GATES, gates),
        "dense_i/bias": reorder_gates(input_bias, GRU.GATES, gates),
        "dense_h/kernel": reorder_gates(recurrent_kernel, GRU.GATES, gates),
    }
