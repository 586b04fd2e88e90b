"""``frae.gru_layout``: the GRU's canonical weights in Keras', PyTorch's and Flax's layouts.
The known examples are written from each framework's documented layout, not from the module,
with H = 2, so that a swapped gate block or a transposed kernel shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from frae import gru_layout
from frae.config import GRU

GRU_2 = GRU("decoder/gru", input_dim=1, state_dim=2)
"""L = 1, H = 2: kernels (1, 6) and (2, 6)."""

R, P, N = [1.0, 2.0], [3.0, 4.0], [5.0, 6.0]
"""The canonical kernel's row: reset, update and candidate blocks."""


def _canonical() -> dict[str, np.ndarray]:
    """Canonical weights whose every entry is distinct: K's blocks R, P, N; U's rows ten and
    twenty times K's; b_K 0.1 times K's; b_U 0.01 times."""
    row = np.array(R + P + N, np.float32)
    return {
        GRU_2.kernel: row[None, :],
        GRU_2.recurrent_kernel: np.stack([10 * row, 20 * row]),
        GRU_2.bias: 0.1 * row,
        GRU_2.recurrent_bias: 0.01 * row,
    }


def test_keras_layout_of_a_known_example() -> None:
    """Keras' columns z | r | h: the update block first, then reset, then the candidate;
    the bias (2, 3H) with b_K in row 0 and b_U in row 1."""
    kernel, recurrent_kernel, bias = gru_layout.to_keras(GRU_2, _canonical())
    keras_row = np.array(P + R + N, np.float32)
    np.testing.assert_array_equal(kernel, [keras_row])
    np.testing.assert_array_equal(recurrent_kernel, [10 * keras_row, 20 * keras_row])
    np.testing.assert_array_equal(bias, [0.1 * keras_row, 0.01 * keras_row])


def test_torch_layout_of_a_known_example() -> None:
    """PyTorch's rows r | z | n, the canonical order, and its kernels (3H, in)."""
    native = gru_layout.to_torch(GRU_2, _canonical())
    column = np.array(R + P + N, np.float32)
    assert list(native) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    np.testing.assert_array_equal(native["weight_ih"], column[:, None])  # (6, 1)
    np.testing.assert_array_equal(native["weight_hh"], np.stack([10 * column, 20 * column], 1))
    np.testing.assert_array_equal(native["bias_ih"], 0.1 * column)
    np.testing.assert_array_equal(native["bias_hh"], 0.01 * column)


def test_flax_layout_of_a_known_example() -> None:
    """Flax's columns r | z | n; b_U's reset and update blocks join dense_i's bias."""
    canonical = _canonical()
    canonical[GRU_2.recurrent_bias][4:] = 0.0  # the candidate block nnx.GRUCell cannot hold
    native = gru_layout.to_flax(GRU_2, canonical)
    row = np.array(R + P + N, np.float32)
    assert list(native) == ["dense_i/kernel", "dense_i/bias", "dense_h/kernel"]
    np.testing.assert_array_equal(native["dense_i/kernel"], [row])
    np.testing.assert_allclose(native["dense_i/bias"], 0.1 * row + 0.01 * np.r_[R + P, 0, 0])
    np.testing.assert_array_equal(native["dense_h/kernel"], [10 * row, 20 * row])


def test_flax_layout_refuses_a_candidate_recurrent_bias() -> None:
    with pytest.raises(ValueError, match="candidate block must be zero"):
        gru_layout.to_flax(GRU_2, _canonical())


def _random(gru: GRU, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        name: rng.normal(size=shape).astype(np.float32)
        for name, shape in gru.parameter_shapes().items()
    }


GRU_3_5 = GRU("decoder/gru", input_dim=3, state_dim=5)
"""L = 3, H = 5: no kernel square, no two sizes equal."""


@pytest.mark.parametrize(
    ("to", "back", "shapes"),
    [
        (gru_layout.to_keras, gru_layout.from_keras, [(3, 15), (5, 15), (2, 15)]),
        (gru_layout.to_torch, gru_layout.from_torch, [(15, 3), (15, 5), (15,), (15,)]),
    ],
    ids=["keras", "torch"],
)
def test_a_round_trip_is_exact(
    to: Callable[..., Any], back: Callable[..., Any], shapes: list[tuple[int, ...]]
) -> None:
    weights = _random(GRU_3_5, seed=1)
    native = to(GRU_3_5, weights)
    arrays = native.values() if isinstance(native, dict) else native
    assert [array.shape for array in arrays] == shapes
    restored = back(GRU_3_5, native)
    assert list(restored) == list(weights)
    for name, value in weights.items():
        assert restored[name].dtype == value.dtype, name
        np.testing.assert_array_equal(restored[name], value, err_msg=name)


def test_keras_to_torch_through_the_canonical_layout() -> None:
    """Keras' weights to PyTorch's: the update and reset blocks move, every kernel
    transposes."""
    keras_weights = gru_layout.to_keras(GRU_3_5, _random(GRU_3_5, seed=3))
    native = gru_layout.to_torch(GRU_3_5, gru_layout.from_keras(GRU_3_5, keras_weights))
    update, reset, candidate = np.split(keras_weights[0], 3, axis=1)
    np.testing.assert_array_equal(
        native["weight_ih"], np.concatenate([reset, update, candidate], 1).T
    )


def test_a_wrong_gate_order_passed_swaps_the_blocks() -> None:
    """Packing with the canonical order and reading as Keras' (the import mistake the kit's
    ``GateBlocksSwappedOnImport`` makes) exchanges the reset and update blocks."""
    weights = _random(GRU_3_5, seed=4)
    misread = gru_layout.from_keras(GRU_3_5, gru_layout.to_keras(GRU_3_5, weights, GRU.GATES))
    for name, value in weights.items():
        reset, update, candidate = np.split(value, 3, axis=-1)
        swapped = np.concatenate([update, reset, candidate], axis=-1)
        np.testing.assert_array_equal(misread[name], swapped, err_msg=name)


def test_reorder_gates_refuses_an_order_that_is_not_the_gates() -> None:
    with pytest.raises(ValueError, match="gate order"):
        gru_layout.reorder_gates(np.zeros(6), ("reset", "reset", "candidate"), GRU.GATES)


def test_a_wrong_shape_is_named() -> None:
    weights = _random(GRU_3_5, seed=5)
    weights[GRU_3_5.recurrent_kernel] = weights[GRU_3_5.recurrent_kernel][:, :12]
    with pytest.raises(ValueError, match="decoder/gru/recurrent_kernel must have shape"):
        gru_layout.to_torch(GRU_3_5, weights)
    kernel, recurrent_kernel, bias = gru_layout.to_keras(GRU_3_5, _random(GRU_3_5, seed=6))
    with pytest.raises(ValueError, match=r"bias must have shape \(2, 3H\)"):
        gru_layout.from_keras(GRU_3_5, [kernel, recurrent_kernel, bias[0]])
