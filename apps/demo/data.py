"""Japanese Vowels in windows, standardised.

The contract takes (B, T, F) arrays and has no masks, so each utterance is cut into
non-overlapping windows of T = 7 frames (the shortest utterance's length) from its start:
every frame of every window is real data, each window is one sequence from a zero
feedback, and the last ``n mod 7`` frames of each utterance (about a fifth of all frames)
are left out, where padding would have needed a mask. Training windows beyond a whole
number of mini-batches are left out too (one of 501), so every step has one shape and a
compiled backend traces once. Each channel is standardised with the mean and standard
deviation of the training frames alone; standardised coefficients reach beyond ±4, no
bounded activation's range, so both models end in ``output_activation="linear"``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.demo.settings import BATCH_SIZE, WINDOW

Array = npt.NDArray[np.float64]
Windows = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Signal:
    """The standardised windows of both splits, (B, T, F) float32, and the held-out
    utterances whole, (T_i, F) each, for the plots."""

    train: Windows
    test: Windows
    test_utterances: list[Windows]
    mean: Array
    scale: Array


def read_utterances(split: str) -> list[Array]:
    """The utterances of ``split`` ("train" or "test"), (frames, 12) each, by sktime's loader
    of the copy it ships."""
    try:  # by name: sktime ships no type information
        datasets = importlib.import_module("sktime.datasets")
    except ModuleNotFoundError as error:
        raise ImportError(
            f"frae demo reads its data with sktime: pip install 'frae[demo]' ({error})"
        ) from error
    # sktime's nested frame, one series per channel a cell: the form its reader makes, so
    # the quickest to ask for (a list of frames costs it seconds more)
    nested, _ = datasets.load_japanese_vowels(split=split, return_type="nested_univ")
    return [
        np.stack([channel.to_numpy() for channel in row], axis=1) for _, row in nested.iterrows()
    ]


def cut_windows(utterances: Sequence[npt.NDArray[Any]], length: int) -> npt.NDArray[Any]:
    """Non-overlapping windows of ``length`` frames from each utterance's start, (N, length,
    F): utterance u gives ``len(u) // length`` windows and leaves its last frames out."""
    windows = [
        utterance[start : start + length]
        for utterance in utterances
        for start in range(0, len(utterance) - length + 1, length)
    ]
    return np.stack(windows)


def load_signal(window: int = WINDOW, batch_size: int = BATCH_SIZE) -> Signal:
    return prepare(read_utterances("train"), read_utterances("test"), window, batch_size)


def prepare(train: Sequence[Array], test: Sequence[Array], window: int, batch_size: int) -> Signal:
    """Utterances standardised by the training frames' per-channel mean and standard
    deviation, in windows of ``window`` frames; the training windows cut to a multiple of
    ``batch_size``."""
    frames = np.concatenate(train)
    mean, scale = frames.mean(axis=0), frames.std(axis=0)

    def standardise(utterance: Array) -> Windows:
        return ((utterance - mean) / scale).astype(np.float32)

    train_windows = cut_windows([standardise(u) for u in train], window)
    test_utterances = [standardise(u) for u in test]
    kept = len(train_windows) - len(train_windows) % batch_size
    return Signal(
        train_windows[:kept], cut_windows(test_utterances, window), test_utterances, mean, scale
    )
