"""What a worker measures: each measurement (``Unit``) on the model and input of its point, a
fresh model a point, and each operation's calls: predict, the gradient, the training step,
the stream at each side and chunk length, the codec's runs (``bench.measuring.codec_runs``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from bench.grid import STREAM_CHUNKS
from bench.measuring.codec_runs import CodecRun, codec_runs, codec_weights
from bench.measuring.job import Job
from bench.measuring.threads import others_busy
from bench.measuring.timing import Calls, Made, Prepared, Rule, prepare_calls, seconds_of
from bench.records import (
    CODEC,
    CODING,
    RECEIVER,
    SENDER,
    SIDES,
    STREAM,
    Point,
    ResultRecord,
)


class Unit(NamedTuple):
    """One measurement: ``operation`` on the model and input of ``point`` (a fresh model for
    each point), at ``side`` and ``chunk`` for the stream and the codec."""

    point: Point
    operation: str
    side: str | None = None
    chunk: int | None = None

    def to_json(self) -> list[Any]:
        model, batch, steps, operations = self.point
        return [[model, batch, steps, list(operations)], self.operation, self.side, self.chunk]

    def doing(self, operation: str) -> Unit:
        """The same point, side and chunk length, measuring ``operation``."""
        return self._replace(operation=operation)

    @property
    def measures(self) -> tuple[Any, ...]:
        """What it measures, whatever else its point measures: model, B, T, operation,
        side, chunk."""
        return (*self.point[:3], self.operation, self.side, self.chunk)

    @classmethod
    def from_json(cls, data: list[Any]) -> Unit:
        (model, batch, steps, operations), operation, side, chunk = data
        return cls(Point(model, batch, steps, tuple(operations)), operation, side, chunk)


def units(points: Iterable[Point]) -> list[Unit]:
    """Each point's measurements in order: each operation; the stream's and the codec's at
    each side, then chunk length."""
    found = []
    for point in points:
        for operation in point.operations:
            if operation in (STREAM, CODEC):
                found += [
                    Unit(point, operation, side, chunk) for side in SIDES for chunk in STREAM_CHUNKS
                ]
            else:
                found.append(Unit(point, operation))
    return found


def _calls(model: Any, x: np.ndarray, train_steps: int) -> dict[str, Calls]:
    """Each operation's calls on ``model`` and ``x``."""
    return {
        "predict": Calls(lambda: model.predict(x), lambda: model.predict(x), 1),
        "loss_and_grads": Calls(
            lambda: model.loss_and_grads(x), lambda: model.loss_and_grads(x), 1
        ),
        "train_step": Calls(
            lambda: model.fit(x, epochs=1, learning_rate=1e-3),
            lambda: model.fit(x, epochs=train_steps, learning_rate=1e-3),
            train_steps,
        ),
    }


@dataclass
class OnPoint:
    """A point's model and input, and what is made of them once: the stream's codes and
    the codec's runs (or why there are none)."""

    model: Any
    x: np.ndarray
    failure: str | None
    create_s: float
    codes: Any = None
    codec: dict[tuple[str, int], list[CodecRun]] | None = None
    no_codec: dict[str, str] | None = None
    """Why the point has no codec runs (``error`` or ``unsupported``)."""


class Bench:
    """The worker's state: the job, and the model and input of the point it measures (fresh
    for each point), with the stream's codes and the codec's runs made once a point. A
    floor measuring beside others (``Job.keeps_models``) keeps each point's model for the
    next variant that measures there."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.point: Point | None = None
        self.at = OnPoint(None, np.zeros((0, 0, 0)), None, 0.0)
        self.kept: dict[Point, OnPoint] = {}

    def on(self, point: Point) -> OnPoint:
        """A fresh model and input for ``point``, unless it is the one measured (or kept)."""
        if point != self.point:
            self.point = point
            found = self.kept.get(point)
            self.at = found if found is not None else self._fresh(point)
            if self.job.keeps_models:
                self.kept[point] = self.at
        return self.at

    def _fresh(self, point: Point) -> OnPoint:
        import frae
        from frae.data import multi_sine

        config = self.job.config(point.model)
        x = multi_sine(batch=point.batch, steps=point.steps, features=config.input_dim, seed=0)
        weights = codec_weights(config) if CODEC in point.operations else None
        start = time.perf_counter()
        try:
            model = frae.create(
                self.job.backend, config, seed=0, weights=weights, devices=self.job.devices
            )
            failure = None
        except Exception as error:  # reported on every operation's row
            model, failure = None, f"{type(error).__name__}: {error}"
        return OnPoint(model, x, failure, time.perf_counter() - start)

    def row(self, unit: Unit) -> Callable[..., ResultRecord]:
        """The records of ``unit`` (its operation still to give, for the codec's runs)."""
        point = unit.point
        return partial(
            ResultRecord,
            self.job.variant,
            batch=point.batch,
            steps=point.steps,
            model=point.model,
            side=unit.side,
            chunk=unit.chunk,
            create_s=self.at.create_s,
            artifact_kib=getattr(self.at.model, "artifact_kib", None),
        )

    def prepare(self, unit: Unit) -> Made:
        """``unit`` ready to be timed, or its records."""
        at = self.on(unit.point)
        row = self.row(unit)
        if unit.operation == CODEC:
            return self._codec(unit, row)
        made = partial(row, unit.operation)
        if at.failure is not None:
            return [made(error=at.failure)]
        if unit.operation == STREAM:
            return self._stream(unit, made)
        calls = _calls(at.model, at.x, self.job.settings.train_steps)[unit.operation]
        collect = not self.job.keeps_models
        return prepare_calls(unit.operation, calls, self.job.settings, made, collect)

    def _stream(self, unit: Unit, row: Callable[..., ResultRecord]) -> Made:
        """One side of the stream at one chunk length, on the codes of one whole ``encode``
        of the point's input; where they could not be made, its record says why."""
        at = self.at
        if at.codes is None:
            try:
                at.codes = at.model.encode(at.x)
            except NotImplementedError as error:
                at.codes = {"unsupported": str(error)}
            except Exception as error:  # reported on every side's row
                at.codes = {"error": f"{type(error).__name__}: {error}"}
        if isinstance(at.codes, dict):
            return [row(**at.codes)]
        assert unit.side is not None and unit.chunk is not None
        run = stream(at.model, at.x, at.codes, unit.side, unit.chunk)
        calls = Calls(run, run, 1, warm_up=False)
        settings, collect = self.job.settings.for_stream(), not self.job.keeps_models
        return prepare_calls(STREAM, calls, settings, row, collect)

    def _codec(self, unit: Unit, row: Callable[..., ResultRecord]) -> Made:
        """The codec's runs at one side and chunk length (``bench.measuring.codec_runs``): through
        packets, the coder alone and the codec with its coder bypassed, timed in turn, a
        sample of each a round, so that a drift of the machine falls on each alike (the
        coder's share is the difference of two of them); where they could not be made, every
        run's record says why."""
        at = self.at
        if at.codec is None and at.no_codec is None:
            at.codec, at.no_codec = _codec_runs(at.model, at.x, at.failure)
        if at.codec is None or unit.side is None or unit.chunk is None:
            return [row(operation, **(at.no_codec or {})) for operation in CODING]
        runs = at.codec[unit.side, unit.chunk]
        settings = self.job.settings.for_stream()
        rows: list[Callable[..., ResultRecord]] = [
            partial(row, run.operation, threads=settings.threads, **(run.sizes or {}))
            for run in runs
        ]

        def each_once() -> list[float]:
            return [seconds_of(run.run) for run in runs]

        try:
            firsts = each_once()  # a stream's first run: its compiles, and nothing to warm up
        except Exception as error:  # every run's record says why
            return [made(error=f"{type(error).__name__}: {error}") for made in rows]
        return Prepared(rows, firsts, each_once, 1, Rule.of(settings))

    def alone(self, unit: Unit) -> list[ResultRecord]:
        """``unit``'s records, its calls timed one after another until ``Rule`` says enough."""
        made = self.prepare(unit)
        if isinstance(made, list):
            return made
        start, taken = time.perf_counter(), others_busy()
        try:
            while not made.rule.enough(len(made.seconds), time.perf_counter() - start):
                made.sample()
        except Exception:  # the records say why
            pass
        made.others_s = taken.since()
        return made.records()


def _codec_runs(
    model: Any, x: np.ndarray, failure: str | None
) -> tuple[dict[tuple[str, int], list[CodecRun]] | None, dict[str, str] | None]:
    """The codec's runs by side and chunk length, or why there are none."""
    if failure:
        return None, {"error": failure}
    try:
        runs = list(codec_runs(model, x, STREAM_CHUNKS))
    except NotImplementedError as error:
        return None, {"unsupported": str(error)}
    except Exception as error:  # reported on every row
        return None, {"error": f"{type(error).__name__}: {error}"}
    together: dict[tuple[str, int], list[CodecRun]] = {}
    for run in runs:
        together.setdefault((run.side, run.chunk), []).append(run)
    return together, None


def measure_shape(job: Job, point: Point) -> Iterator[ResultRecord]:
    """The point's measurements on a fresh model, each timed alone."""
    bench = Bench(job)
    for unit in units([point]):
        yield from bench.alone(unit)


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
