"""The stream at each side and chunk length: one sequence sent a chunk at a time, the state
carried from call to call, as a codec runs online; the whole sequence is one timed call. The
sender encodes the point's input, the receiver decodes the codes of one whole ``encode`` of
it, made once a point."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from bench.grid import STREAM_CHUNKS
from bench.measuring.job import Job
from bench.measuring.operations.base import Operation
from bench.measuring.point import OnPoint, Row, Unit
from bench.measuring.timing import Calls, Made, prepare_calls
from bench.records import RECEIVER, SENDER, STREAM


def pieces(sequence: np.ndarray, chunk: int) -> list[np.ndarray]:
    """``sequence`` (B, T, ·) cut along T into contiguous chunks of ``chunk`` frames (the last
    one shorter), once, outside the timing."""
    steps = sequence.shape[1]
    return [np.ascontiguousarray(sequence[:, at : at + chunk]) for at in range(0, steps, chunk)]


def streamer(
    call: Callable[..., tuple[np.ndarray, np.ndarray]], chunks: list[np.ndarray], start: np.ndarray
) -> Callable[[], np.ndarray]:
    """A run of ``call`` over ``chunks``, each call given the state the one before returned,
    the first ``start``."""

    def run() -> np.ndarray:
        state = start
        for chunk in chunks:
            _, state = call(chunk, state=state, return_state=True)
        return state

    return run


def stream(
    model: Any, x: np.ndarray, codes: np.ndarray, side: str, chunk: int
) -> Callable[[], np.ndarray]:
    """One side at one chunk length: ``encode`` over ``x`` (the sender), ``decode`` over
    ``codes`` (the receiver: the caller's one ``encode`` of ``x``), from the zero state.
    The run returns the state after its last frame."""
    call, sequence = (model.encode, x) if side == SENDER else (model.decode, codes)
    return streamer(call, pieces(sequence, chunk), model.initial_state(len(x)))


class Stream(NamedTuple):
    """One side of the stream at one chunk length, ready to run."""

    side: str
    chunk: int
    run: Callable[[], np.ndarray]


def streams(
    model: Any, x: np.ndarray, codes: np.ndarray, chunks: tuple[int, ...] = STREAM_CHUNKS
) -> Iterator[Stream]:
    """Each side at each chunk length (``stream``)."""
    for side in (SENDER, RECEIVER):
        for chunk in chunks:
            yield Stream(side, chunk, stream(model, x, codes, side, chunk))


def encoded(at: OnPoint) -> np.ndarray | dict[str, str]:
    """The codes of one whole ``encode`` of the point's input, or why there are none
    (``unsupported`` or ``error``)."""
    try:
        codes: np.ndarray = at.model.encode(at.x)
    except NotImplementedError as error:
        return {"unsupported": str(error)}
    except Exception as error:  # reported on every side's row
        return {"error": f"{type(error).__name__}: {error}"}
    return codes


class Streaming(Operation):
    """One side of the stream at one chunk length, timed a whole sequence a sample, with no
    warm-up; where the codes could not be made, its record says why."""

    sided = True

    def prepare(self, at: OnPoint, unit: Unit, job: Job, row: Row) -> Made:
        codes, made = at.once(STREAM, encoded), partial(row, unit.operation)
        if isinstance(codes, dict):
            return [made(**codes)]
        assert unit.side is not None and unit.chunk is not None
        run = stream(at.model, at.x, codes, unit.side, unit.chunk)
        calls = Calls(run, run, 1, warm_up=False)
        return prepare_calls(calls, job.settings.for_stream(), made, not job.keeps_models)
