"""The codec tests' model: a small config with a fine grid, its weights, and the bytes format
1's writer made with it."""

from __future__ import annotations

import numpy as np

import frae

CONFIG = frae.FRAEConfig(latent_dim=2, code_step=2**-6)


def large_weights(seed: int) -> dict[str, np.ndarray]:
    """Weights N(0, 1.5²): codes spread over a dozen symbols (initial weights use one or two)."""
    rng, shapes = np.random.default_rng(seed), CONFIG.parameter_shapes()
    return {name: rng.normal(0.0, 1.5, shape).astype(np.float32) for name, shape in shapes.items()}


FORMAT_1 = (
    "4652414301060002000200000006000000737ddacb9ba2c99023109ee2d77756626c4878f70b416d3723d03a"
    "d774487da4040000001e45152e04000000dcc5744141355585"
)
"""Two sequences of six frames, written by format 1's writer (commit 097b092) with the model of
``large_weights(41)`` and the prior fitted on ``multi_sine(2, 6, seed=5)``."""
FORMAT_1_SYMBOLS = [
    [[-13, 35], [-17, 38], [0, 36], [0, 29], [0, 29], [0, 29]],
    [[-10, 34], [-17, 37], [-1, 38], [0, 33], [0, 33], [0, 33]],
]
