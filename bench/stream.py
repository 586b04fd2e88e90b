"""The stream operation: one sequence sent a chunk at a time, the recurrence's state carried
from call to call (the contract's "Streaming"), as a codec runs online: the sender's
``encode(chunk, state=s, return_state=True)``, the receiver's ``decode`` of the codes, each
from ``initial_state``. The worker times a run of a side as one sample (µs per frame).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from bench.grid import STREAM_CHUNKS
from bench.records import RECEIVER, SENDER


class Stream(NamedTuple):
    """One side of the stream at one chunk length, ready to run."""

    side: str
    chunk: int
    run: Callable[[], np.ndarray]
    """Streams the whole sequence; returns the state after its last frame."""


def pieces(sequence: np.ndarray, chunk: int) -> list[np.ndarray]:
    """``sequence`` (B, T, ·) cut along T into contiguous chunks of ``chunk`` frames (the last
    one shorter), once, outside the timing."""
    steps = sequence.shape[1]
    return [np.ascontiguousarray(sequence[:, at : at + chunk]) for at in range(0, steps, chunk)]


def streamer(
    call: Callable[..., tuple[np.ndarray, np.ndarray]],
    chunks: list[np.ndarray],
    start: np.ndarray,
) -> Callable[[], np.ndarray]:
    """A run of ``call`` over ``chunks``, each call given the state the one before returned,
    the first ``start``."""

    def run() -> np.ndarray:
        state = start
        for chunk in chunks:
            _, state = call(chunk, state=state, return_state=True)
        return state

    return run


def streams(
    model: Any, x: np.ndarray, codes: np.ndarray, chunks: tuple[int, ...] = STREAM_CHUNKS
) -> Iterator[Stream]:
    """Each side at each chunk length: ``encode`` over ``x``, ``decode`` over ``codes`` (the
    caller's one ``encode`` of ``x``), both from the model's zero state."""
    start = model.initial_state(len(x))
    for side, call, sequence in ((SENDER, model.encode, x), (RECEIVER, model.decode, codes)):
        for chunk in chunks:
            yield Stream(side, chunk, streamer(call, pieces(sequence, chunk), start))
