"""The held-out SNR, and the rate–distortion view of the codes.

The SNR, 10·log10(Σ x² / Σ (x − x̂)²) over the held-out windows, is in standardised units:
predicting the training mean scores 0 dB.

The rate–distortion view rounds each code to a grid of step Δ inside the recurrence,
ẑ_t = Δ·round(z_t / Δ): the decoder sees only ẑ_t, and through the feedback so does the
encoder at t + 1, as at a receiver (``closed_loop``). The rate is the empirical entropy of
the rounded codes, summed over the L code dimensions, in bits per frame
(``bits_per_frame``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from frae.config import FRAEConfig
from impls.reference.model import Params, dense_stack, gru_step

Array = npt.NDArray[np.float64]

CODE_STEPS = tuple(2.0**k for k in range(1, -9, -1))
"""The grid steps Δ of the rate–distortion sweep, 2 down to 1/256: the codes are tanh
outputs in (−1, 1), so Δ = 2 leaves one symbol (0 bits) and 1/256 about 9 bits a dimension."""


def snr_db(signal: npt.NDArray[Any], reconstruction: npt.NDArray[Any]) -> float:
    """10·log10(Σ x² / Σ (x − x̂)²), in float64."""
    x = np.asarray(signal, dtype=np.float64)
    error = x - np.asarray(reconstruction, dtype=np.float64)
    return float(10.0 * np.log10(np.sum(x**2) / np.sum(error**2)))


def closed_loop(
    config: FRAEConfig, weights: dict[str, npt.NDArray[Any]], x: npt.NDArray[Any], step: float
) -> tuple[Array, npt.NDArray[np.int64]]:
    """Run the model with its codes rounded inside the recurrence, in float64.

    Each step's code z_t becomes ẑ_t = Δ·round(z_t / Δ) (Δ = ``step``; 0 keeps z_t), and
    the decoder's GRU or dense layers, and so the feedback the encoder reads at t + 1, see
    ẑ_t alone: ``predict`` when Δ = 0, ``decode(ẑ)`` for any Δ. ``weights`` are any
    backend's ``get_weights()``, ``x`` is (B, T, F).

    Returns:
        x̂, (B, T, F) float64, and the symbols round(z_t / Δ), (B, T, L) (zeros when Δ = 0).
    """
    params: Params = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
    sequences = np.asarray(x, dtype=np.float64)
    batch, steps, _ = sequences.shape
    encoder, decoder, gru = config.encoder_layers, config.decoder_layers, config.gru
    feedback = np.zeros((batch, config.feedback_dim))
    outputs = np.empty_like(sequences)
    symbols = np.zeros((batch, steps, config.latent_dim), dtype=np.int64)
    for t in range(steps):
        code = dense_stack(params, encoder, np.concatenate([sequences[:, t], feedback], 1), None)
        if step > 0:
            symbols[:, t] = np.round(code / step)
            code = step * symbols[:, t]
        if gru is None:
            feedback = dense_stack(params, decoder, np.concatenate([code, feedback], 1), None)
            outputs[:, t] = feedback
        else:
            feedback, _ = gru_step(params, gru, code, feedback)
            outputs[:, t] = dense_stack(params, decoder, feedback, None)
    return outputs, symbols


def bits_per_frame(symbols: npt.NDArray[np.integer[Any]]) -> float:
    """Σ over the last axis's L dimensions of each one's empirical entropy, in bits:
    H_l = −Σ_s p_l(s)·log2 p_l(s) over the symbols s that dimension l takes."""
    columns = np.asarray(symbols).reshape(-1, symbols.shape[-1]).T
    total = 0.0
    for column in columns:
        _, counts = np.unique(column, return_counts=True)
        p = counts / counts.sum()
        total -= float(np.sum(p * np.log2(p)))
    return total


@dataclass(frozen=True)
class RatePoint:
    """One grid step Δ of the sweep: the rate in bits per frame and the held-out SNR."""

    step: float
    bits: float
    snr_db: float


def rate_distortion(
    config: FRAEConfig, weights: dict[str, npt.NDArray[Any]], x: npt.NDArray[Any]
) -> list[RatePoint]:
    """``closed_loop`` over ``x`` at each of ``CODE_STEPS``."""
    points = []
    for step in CODE_STEPS:
        reconstruction, symbols = closed_loop(config, weights, x, step)
        points.append(RatePoint(step, bits_per_frame(symbols), snr_db(x, reconstruction)))
    return points


def step_label(step: float) -> str:
    """A power of two as ``2`` or ``1/256``."""
    return f"{step:g}" if step >= 1 else f"1/{round(1 / step)}"
