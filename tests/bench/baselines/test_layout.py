"""``bench.baselines.layout``: the floors' flat weights and the rows of their workspace."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from bench.baselines.layout import flatten, plan, unflatten
from tests.bench_cases import NO_HIDDEN_CONFIG, STATE_CONFIGS

pytestmark = pytest.mark.backend_specific("numba_floor")


def test_the_floor_layout_reads_the_concatenation_directly_without_hidden_units() -> None:
    """With no hidden layers the latent and output layers read their inputs' blocks."""
    layout = plan(NO_HIDDEN_CONFIG)
    latent, output = layout.layers
    assert latent[:2] == (0, 4)  # [x_t, x̂_{t-1}]
    assert output[:2] == (layout.code_row, 3)  # [z_t, x̂_{t-1}]
    weights = frae.initial_weights(NO_HIDDEN_CONFIG, seed=5)
    assert all(
        np.array_equal(a, weights[k])
        for k, a in unflatten(flatten(weights, layout, np.float32), layout).items()
    )


def test_the_floor_layout_places_the_gru_between_the_encoder_and_the_decoder() -> None:
    """[x_t, s_{t-1}] in, z_t, the GRU's four blocks and s_t, then the decoder reading s_t;
    s_{t-1} is the one block fed back, and the flat weights hold the GRU's four tensors."""
    config = STATE_CONFIGS["state_deep"]  # F = 3, encoder (12, 6), L = 2, decoder (10, 5), H = 11
    layout = plan(config)
    gru = layout.gru
    assert gru is not None and gru.state == 11
    assert layout.layers[0][:2] == (0, 3 + 11)  # [x_t, s_{t-1}]
    assert layout.code_row == 3 + 11 + 12 + 6
    assert (gru.previous_row, gru.gate_row) == (3, layout.code_row + 2)
    assert gru.state_row == gru.gate_row + 4 * 11
    assert layout.layers[layout.encoder_layers][:2] == (gru.state_row, 11)  # reads s_t
    assert layout.feedback_rows == (3,) and layout.feedback_width == 11
    assert (layout.output_row, layout.rows) == (layout.rows - 3, gru.state_row + 11 + 10 + 5 + 3)
    weights = frae.initial_weights(config, seed=5)
    assert gru.recurrent_kernel == gru.kernel + 2 * 33
    assert gru.bias == gru.recurrent_kernel + 11 * 33
    round_trip = unflatten(flatten(weights, layout, np.float64), layout)
    assert all(np.array_equal(a, weights[k]) for k, a in round_trip.items())
    assert round_trip.keys() == weights.keys()
