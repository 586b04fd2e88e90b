"""Data sets the project builds itself: nothing is downloaded."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def multi_sine(
    batch: int = 8, steps: int = 200, features: int = 2, *, waves: int = 3, seed: int = 0
) -> npt.NDArray[np.float32]:
    """Smooth, learnable sequences: each feature a sum of ``waves`` random sines.

    Periods lie between 10 and 100 steps; amplitudes are scaled so every value stays in
    [0, 1] around 0.5, a range the default swish output can reach (swish(a) >= -0.28).
    Returns float32 of shape ``(batch, steps, features)``.
    """
    rng = np.random.default_rng(seed)
    shape = (batch, 1, features, waves)
    period = rng.uniform(10.0, 100.0, size=shape)
    phase = rng.uniform(0.0, 2 * np.pi, size=shape)
    amplitude = rng.uniform(0.2, 1.0, size=shape)
    amplitude /= amplitude.sum(axis=-1, keepdims=True)
    time = np.arange(steps, dtype=np.float64)[None, :, None, None]
    signal: npt.NDArray[np.float64] = np.sum(
        amplitude * np.sin(2 * np.pi * time / period + phase), axis=-1
    )
    return (0.5 + 0.5 * signal).astype(np.float32)


def original_problem(seed: int = 0) -> npt.NDArray[np.float32]:
    """The question that started the project: one sequence of 10 uniform 2-feature samples."""
    return np.random.default_rng(seed).uniform(0.0, 1.0, size=(1, 10, 2)).astype(np.float32)
