"""The floor's data layout, shared by the Numba loops (``numba_floor``) and C (``c_forward``).

One time step lives in a ``(rows, B)`` workspace, batch innermost; its rows are, in order,
the encoder input ``[x_t, x̂_{t-1}]``, each encoder layer's output, the decoder input
``[z_t, x̂_{t-1}]`` (the latent layer writes z_t there directly), each decoder layer's
output, x̂_t last. A layer reads one block of rows and writes the next. The weights are one
flat vector in canonical order, each kernel (in, out) row-major.

With state feedback (the contract's "State feedback") the rows are the encoder input
``[x_t, s_{t-1}]``, each encoder layer's output, z_t, the GRU's gates r, p, n and its
recurrent candidate product c_n (``GRUPlan``), its new state s_t, each decoder layer's output
(the first reads s_t), x̂_t last.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from frae.backend import Array
from frae.config import GRU, FRAEConfig
from frae.config import Layer as ConfigLayer

ACTIVATION_CODES = {"swish": 0, "tanh": 1, "sigmoid": 2, "linear": 3}
"""Each activation as the number the compiled floors take (``frae_activate.h`` too)."""
LAYER_FIELDS = ("in_row", "fan_in", "out_row", "units", "kernel", "bias", "activation")
"""One layer of ``Plan.layers``: its input and output rows, its offsets in the weights."""

Layer = tuple[int, int, int, int, int, int, int]
Offsets = dict[str, tuple[int, tuple[int, ...]]]
"""Canonical name -> (start, shape) in the flat weight vector."""


@dataclass(frozen=True)
class GRUPlan:
    """Where the GRU of a state-feedback model sits in the workspace and in the flat weights.

    Attributes:
        state: H.
        previous_row: first row of s_{t-1}, the encoder input's feedback block.
        gate_row: first of four blocks of H rows: r, p, n (the gates, after their
            activations) and c_n = (s_{t-1} @ U + b_U)'s candidate block, which the backward
            pass needs beside them.
        state_row: first row of s_t.
        kernel, recurrent_kernel, bias, recurrent_bias: offsets of K (L, 3H), U (H, 3H),
            b_K and b_U; column j of gate g is at ``g·H + j``.
    """

    state: int
    previous_row: int
    gate_row: int
    state_row: int
    kernel: int
    recurrent_kernel: int
    bias: int
    recurrent_bias: int


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
        feedback_rows: first rows of the blocks that receive the feedback: x̂_{t-1}'s two,
            in the encoder input and in the decoder input; s_{t-1}'s one, in the encoder
            input (the GRU reads it there).
        code_row: first row of z_t.
        output_row: first row of x̂_t.
        offsets: where each weight is (``Offsets``).
        gru: the GRU's rows and weights with state feedback, else ``None``.
    """

    layers: tuple[Layer, ...]
    encoder_layers: int
    rows: int
    features: int
    latent: int
    feedback_rows: tuple[int, ...]
    code_row: int
    output_row: int
    offsets: Offsets
    gru: GRUPlan | None = None

    @property
    def size(self) -> int:
        """Number of weights."""
        return sum(math.prod(shape) for _, shape in self.offsets.values())

    @property
    def feedback_width(self) -> int:
        """Rows fed back from step to step: F (x̂_t) or H (s_t)."""
        return self.gru.state if self.gru else self.features

    @property
    def fed_back_row(self) -> int:
        """First row of what the next step receives: x̂_t, or s_t."""
        return self.gru.state_row if self.gru else self.output_row


def plan(config: FRAEConfig) -> Plan:
    """Lay out ``config``'s step: rows of the workspace and offsets of the weights; the
    floors' loops have no rounding, so a quantized ``config`` is refused."""
    if config.code_step is not None:
        raise NotImplementedError(
            f"the floors' loops have no rounding: they run float codes, got "
            f"code_step={config.code_step}"
        )
    features, latent, fed_back = config.input_dim, config.latent_dim, config.feedback_dim
    offsets: Offsets = {}
    start = 0
    for name, shape in config.parameter_shapes().items():
        offsets[name] = (start, shape)
        start += math.prod(shape)
    code_row = features + fed_back + sum(config.encoder_units)
    layers: list[Layer] = []
    in_row, row = 0, features + fed_back  # the encoder input comes first
    for layer in config.encoder_layers:
        out_row = code_row if layer is config.encoder_layers[-1] else row
        layers.append(_placed(layer, in_row, out_row, offsets))
        in_row, row = out_row, row + layer.units
    gru = None
    if config.gru is None:
        in_row, row = code_row, code_row + latent + features  # the decoder input [z_t, x̂_{t-1}]
    else:  # s_{t-1} after x_t, the GRU's rows after z_t
        gru = _gru_plan(config.gru, features, code_row + latent, offsets)
        in_row, row = gru.state_row, gru.state_row + gru.state  # the decoder reads s_t
    for layer in config.decoder_layers:
        layers.append(_placed(layer, in_row, row, offsets))
        in_row, row = row, row + layer.units
    return Plan(
        layers=tuple(layers),
        encoder_layers=len(config.encoder_layers),
        rows=row,
        features=features,
        latent=latent,
        feedback_rows=(features,) if gru else (features, code_row + latent),
        code_row=code_row,
        output_row=row - features,
        offsets=offsets,
        gru=gru,
    )


def _gru_plan(gru: GRU, previous_row: int, gate_row: int, offsets: Offsets) -> GRUPlan:
    """The GRU reading s_{t-1} at ``previous_row``, its rows from ``gate_row`` on (its four
    blocks, then s_t), and its weights."""
    return GRUPlan(
        state=gru.state_dim,
        previous_row=previous_row,
        gate_row=gate_row,
        state_row=gate_row + 4 * gru.state_dim,
        kernel=offsets[gru.kernel][0],
        recurrent_kernel=offsets[gru.recurrent_kernel][0],
        bias=offsets[gru.bias][0],
        recurrent_bias=offsets[gru.recurrent_bias][0],
    )


def _placed(layer: ConfigLayer, in_row: int, out_row: int, offsets: Offsets) -> Layer:
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
