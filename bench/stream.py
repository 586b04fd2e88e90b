"""The stream operation: one sequence sent a chunk at a time, the recurrence's state carried
from call to call (the contract's "Streaming"), as a codec runs online.

The sender encodes each chunk of the signal, ``encode(chunk, state=s, return_state=True)``;
the receiver decodes each chunk of codes as it arrives,
``decode(codes_chunk, state=s, return_state=True)``; each side starts from
``initial_state`` and feeds every call the state the one before returned. One run of a side
streams the whole sequence at one chunk length (``bench.grid.STREAM_CHUNKS``); the worker
(``bench.worker``) times it as one sample, so its µs per step is µs per frame.
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
    """``sequence`` (B, T, ·) cut along T into contiguous chunks of ``chunk`` frames, the
    last one shorter where ``chunk`` does not divide T (cut once, outside the timing)."""
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
    """Each side at each chunk length: the sender's ``encode`` over ``x``, the receiver's
    ``decode`` over ``codes`` (one ``encode`` of the whole of ``x``, made by the caller
    before any timing); both from the model's zero state."""
    start = model.initial_state(len(x))
    for side, call, sequence in ((SENDER, model.encode, x), (RECEIVER, model.decode, codes)):
        for chunk in chunks:
            yield Stream(side, chunk, streamer(call, pieces(sequence, chunk), start))
