"""The floor's data layout, shared by the Numba loops (``numba_floor``) and C (``c_forward``).

One time step lives in a ``(rows, B)`` workspace, batch innermost; its rows are, in order,
the encoder input ``[x_t, x̂_{t-1}]``, each encoder layer's output, the decoder input
``[z_t, x̂_{t-1}]`` (the latent layer writes z_t there directly), each decoder layer's
output, x̂_t last. A layer reads one block of rows and writes the next. The weights are one
flat vector in canonical order, each kernel (in, out) row-major.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from frae.backend import Array
from frae.config import FRAEConfig
from frae.config import Layer as ConfigLayer

ACTIVATION_CODES = {"swish": 0, "tanh": 1, "sigmoid": 2, "linear": 3}
LAYER_FIELDS = ("in_row", "fan_in", "out_row", "units", "kernel", "bias", "activation")
"""One layer of ``Plan.layers``: its input and output rows, its offsets in the weights."""

Layer = tuple[int, int, int, int, int, int, int]


@dataclass(frozen=True)
class Plan:
    """Where each quantity of one time step sits in the workspace and in the flat weights.

    Attributes:
        layers: encoder layers (latent last), then decoder layers (output last), each
            ``LAYER_FIELDS``; a kernel (in, out) is stored row-major from ``kernel``, so
            weight (i, j) is at ``kernel + i·units + j``.
        encoder_layers: how many of ``layers`` are the encoder's.
        rows: height of the workspace.
        features, latent: F and L.
        feedback_rows: first rows of the two blocks that receive x̂_{t-1}, in the encoder
            input and in the decoder input.
        code_row: first row of z_t.
        output_row: first row of x̂_t.
        offsets: canonical name -> (start, shape) in the flat weight vector.
    """

    layers: tuple[Layer, ...]
    encoder_layers: int
    rows: int
    features: int
    latent: int
    feedback_rows: tuple[int, int]
    code_row: int
    output_row: int
    offsets: dict[str, tuple[int, tuple[int, ...]]]

    @property
    def size(self) -> int:
        """Number of weights."""
        return sum(math.prod(shape) for _, shape in self.offsets.values())


def plan(config: FRAEConfig) -> Plan:
    """Lay out ``config``'s step: rows of the workspace and offsets of the weights."""
    features, latent = config.input_dim, config.latent_dim
    offsets: dict[str, tuple[int, tuple[int, ...]]] = {}
    start = 0
    for name, shape in config.parameter_shapes().items():
        offsets[name] = (start, shape)
        start += math.prod(shape)
    code_row = 2 * features + sum(config.encoder_units)
    layers: list[Layer] = []
    in_row, row = 0, 2 * features  # the encoder input comes first
    for layer in config.encoder_layers:
        out_row = code_row if layer is config.encoder_layers[-1] else row
        layers.append(_placed(layer, in_row, out_row, offsets))
        in_row, row = out_row, row + layer.units
    in_row = code_row  # the decoder input [z_t, x̂_{t-1}]
    row = code_row + latent + features
    for layer in config.decoder_layers:
        layers.append(_placed(layer, in_row, row, offsets))
        in_row, row = row, row + layer.units
    return Plan(
        layers=tuple(layers),
        encoder_layers=len(config.encoder_layers),
        rows=row,
        features=features,
        latent=latent,
        feedback_rows=(features, code_row + latent),
        code_row=code_row,
        output_row=row - features,
        offsets=offsets,
    )


def _placed(
    layer: ConfigLayer, in_row: int, out_row: int, offsets: dict[str, tuple[int, tuple[int, ...]]]
) -> Layer:
    kernel, bias = offsets[layer.kernel][0], offsets[layer.bias][0]
    activation = ACTIVATION_CODES[layer.activation]
    return (in_row, layer.fan_in, out_row, layer.units, kernel, bias, activation)


def flatten(weights: Mapping[str, Array], layout: Plan, dtype: type[np.floating[Any]]) -> Array:
    """Canonical weights to one flat vector in ``layout``'s order."""
    flat = np.empty(layout.size, dtype=dtype)
    for name, (start, shape) in layout.offsets.items():
        flat[start : start + math.prod(shape)] = np.asarray(weights[name]).ravel()
    return flat


def unflatten(flat: Array, layout: Plan) -> dict[str, Array]:
    """A flat vector (weights or gradients) back to canonical names and shapes (copies)."""
    return {
        name: flat[start : start + math.prod(shape)].reshape(shape).copy()
        for name, (start, shape) in layout.offsets.items()
    }
