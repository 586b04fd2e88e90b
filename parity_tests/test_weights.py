"""Canonical weights: the contract's names, shapes and initial values, copies (weights files:
``tests/test_weights_files.py``, the library's own, not a port's)."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from parity_tests.checks import assert_same_weights
from parity_tests.conftest import MakeBackend

Layout = list[tuple[str, tuple[int, ...]]]


def _dense(layer: str, rows: int, units: int) -> Layout:
    return [(f"{layer}/kernel", (rows, units)), (f"{layer}/bias", (units,))]


# The contract's "Canonical parameters", written out by hand: the order in which initial
# weights are drawn.
DEFAULT_LAYOUT = [
    *_dense("encoder/dense_0", 4, 4),
    *_dense("encoder/dense_1", 4, 3),
    *_dense("encoder/latent", 3, 1),
    *_dense("decoder/dense_0", 3, 3),
    *_dense("decoder/output", 3, 2),
]
# no dense_1 in the encoder, two hidden decoder layers, and a code read together with 3
# feedback features
OTHER_CONFIG = frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2, decoder_units=(4, 6))
OTHER_LAYOUT = [
    *_dense("encoder/dense_0", 6, 5),
    *_dense("encoder/latent", 5, 2),
    *_dense("decoder/dense_0", 5, 4),
    *_dense("decoder/dense_1", 4, 6),
    *_dense("decoder/output", 6, 3),
]
# The contract's "State feedback", H = 5: the encoder reads [x_t, s_{t-1}] (F + H rows), the
# GRU's K, U, b_K, b_U come between the sides, each 3H wide, and the decoder reads s_t.
STATE_CONFIG = frae.FRAEConfig(feedback="state", state_dim=5)
STATE_LAYOUT = [
    *_dense("encoder/dense_0", 7, 4),
    *_dense("encoder/dense_1", 4, 3),
    *_dense("encoder/latent", 3, 1),
    ("decoder/gru/kernel", (1, 15)),
    ("decoder/gru/recurrent_kernel", (5, 15)),
    ("decoder/gru/bias", (15,)),
    ("decoder/gru/recurrent_bias", (15,)),
    *_dense("decoder/dense_0", 5, 3),
    *_dense("decoder/output", 3, 2),
]
LAYOUTS = [
    pytest.param(None, DEFAULT_LAYOUT, id="default"),
    pytest.param(OTHER_CONFIG, OTHER_LAYOUT, id="other"),
    pytest.param(STATE_CONFIG, STATE_LAYOUT, id="state"),
]


def _spec_rule(layout: Layout, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, 0.05, size=shape).astype(np.float32) for name, shape in layout}


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
@pytest.mark.parametrize(("config", "layout"), LAYOUTS)
def test_initial_weights_follow_the_spec_rule(
    make_backend: MakeBackend, config: frae.FRAEConfig | None, layout: list, seed: int
) -> None:
    weights = make_backend(config, seed=seed).get_weights()
    expected = _spec_rule(layout, seed)
    assert list(weights) == list(expected)
    for name, value in expected.items():
        assert weights[name].dtype == np.float32, name
        np.testing.assert_array_equal(weights[name], value, err_msg=name)


def test_get_weights_returns_copies(make_backend: MakeBackend) -> None:
    model = make_backend(seed=3)
    first = model.get_weights()
    snapshot = {name: value.copy() for name, value in first.items()}
    for value in first.values():
        value += 1.0
    assert_same_weights(model.get_weights(), snapshot)


def test_set_weights_copies_its_input(make_backend: MakeBackend) -> None:
    model = make_backend()
    given = _spec_rule(DEFAULT_LAYOUT, seed=5)
    model.set_weights(given)
    for value in given.values():
        value *= 2.0
    assert_same_weights(model.get_weights(), _spec_rule(DEFAULT_LAYOUT, 5))


def test_weights_given_to_create_are_used(make_backend: MakeBackend) -> None:
    given = _spec_rule(DEFAULT_LAYOUT, seed=9)
    assert_same_weights(make_backend(seed=0, weights=given).get_weights(), given)
