"""One variant's measurements, in a process of its own, driven by the runner (``bench.turns``).

    python -m bench.worker '<job as JSON>'

The worker prints its facts (a ``variant`` record) and ``{"kind": "idle"}``, then reads one
command a line on standard input and answers with JSON lines on standard output:

- ``{"unit": UNIT, "alone": BOOL}``: prepare one measurement (``Unit``), on a fresh model for
  each point: its first call (which compiles) and one untimed warm-up. Alone, the worker
  then times the calls itself (``sample``) and prints the record; in turn, it prints
  ``{"kind": "ready", "per_call": K, "rule": [...]}`` (the optimizer steps a call makes and
  ``Rule``) and waits.
- ``"sample"``: one timed call (the codec's: one of each of its runs), answered
  ``{"kind": "sample", "seconds": [...]}``, or ``{"kind": "sample", "error": ...}``.
- ``"stop"``: the records of the calls timed so far.

A unit that cannot be timed, or one timed alone, prints its records at once. Whatever it
printed, the worker then prints ``{"kind": "idle"}``: it waits for its next unit. The stream
sends one sequence a chunk at a time, the state carried from call to call, as a codec runs
online; the whole sequence is one timed call.
"""

from __future__ import annotations

import gc
import importlib
import json
import resource
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import numpy as np

from bench.codec_runs import CodecRun, codec_runs, codec_weights
from bench.grid import STREAM_CHUNKS
from bench.job import Job, Settings
from bench.records import (
    CODEC,
    CODING,
    RECEIVER,
    SENDER,
    SIDES,
    STREAM,
    Point,
    Record,
    ResultRecord,
    VariantRecord,
    to_json,
)
from bench.threads import apply, check, observed, others_busy, pin

MIN_SAMPLES = 3
REWARM_BELOW_S = 0.02
"""A sample taken in turn shorter than this is preceded by an untimed one: a call made after
its process waited (a pipe's round trip, the others' turns) runs up to twice as long as one
made straight after another, its caches cold, which would weigh most on the shortest
calls, the floors'. Beyond it the cold start is under 1 % of the sample."""
IDLE, READY, SAMPLE = "idle", "ready", "sample"
"""The kinds of the worker's answers that are not records (``bench.records``)."""


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB: ``VmHWM`` on Linux, which
    carries a parent's ``ru_maxrss`` into the child across fork and exec, else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**10  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


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


class Rule(NamedTuple):
    """When a measurement's timed calls stop: at ``max_samples``, or with at least
    ``repeats`` after ``min_time_s``, or with at least ``MIN_SAMPLES`` past ``budget_s``."""

    repeats: int
    min_time_s: float
    budget_s: float
    max_samples: int

    @classmethod
    def of(cls, settings: Settings) -> Rule:
        return cls(settings.repeats, settings.min_time_s, settings.budget_s, settings.max_samples)

    def enough(self, samples: int, elapsed_s: float) -> bool:
        """Whether ``samples`` timed calls over ``elapsed_s`` seconds are enough."""
        if samples >= self.max_samples:
            return True
        if samples >= self.repeats and elapsed_s >= self.min_time_s:
            return True
        return samples >= MIN_SAMPLES and elapsed_s >= self.budget_s


def sample(
    call: Callable[[], object], repeats: int, min_time_s: float, budget_s: float, max_samples: int
) -> list[float]:
    """Seconds of each timed call of ``call``, until ``Rule`` says enough."""
    rule, samples = Rule(repeats, min_time_s, budget_s, max_samples), list[float]()
    start = time.perf_counter()
    while True:
        samples.append(seconds_of(call))
        if rule.enough(len(samples), time.perf_counter() - start):
            return samples


def seconds_of(call: Callable[[], object]) -> float:
    """The seconds one call of ``call`` takes."""
    begin = time.perf_counter()
    call()
    return time.perf_counter() - begin


class Calls(NamedTuple):
    """One operation's calls on one model and input: the first (and the warm-up), the timed
    one, with ``steps`` optimizer steps, and whether a warm-up comes before the timed ones."""

    first: Callable[[], object]
    steady: Callable[[], object]
    steps: int
    warm_up: bool = True


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
class Prepared:
    """A measurement ready to be timed: each of its runs' record maker and first call (one
    run; the codec's three, timed in turn), one sample of them all, and the samples taken."""

    rows: list[Callable[..., ResultRecord]]
    firsts: list[float]
    run: Callable[[], list[float]]
    """One sample: the seconds of each run."""
    per_call: int
    rule: Rule
    note: str | None = None
    seconds: list[list[float]] = field(default_factory=list)
    others_s: float | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    error: str | None = None

    def sample(self, rewarm: bool = False) -> list[float]:
        """One sample, kept; the error of a failing one kept for the records. ``rewarm``:
        a short sample (``REWARM_BELOW_S``) comes after an untimed one, for its process has
        waited while others took their turns."""
        try:
            if rewarm and (not self.seconds or sum(self.seconds[-1]) < REWARM_BELOW_S):
                self.run()
            cpu, wall = time.process_time(), time.perf_counter()
            taken = self.run()
        except Exception as error:
            self.error = f"{type(error).__name__}: {error}"
            raise
        self.cpu_s += time.process_time() - cpu
        self.wall_s += time.perf_counter() - wall
        self.seconds.append(taken)
        return taken

    def records(self) -> list[ResultRecord]:
        """Each run's record of the samples taken (why, where one failed)."""
        if self.error is not None or not self.seconds:
            why = self.error or "no call was timed"
            return [row(first_call_s=first, error=why) for row, first in self.made()]
        busy = self.cpu_s / self.wall_s if self.wall_s else 0.0
        by_run = np.array(self.seconds).T
        timed = [Timed(times, self.per_call, self.note, busy) for times in by_run]
        return [
            replace(_record(row, first, each), others_s=self.others_s)
            for (row, first), each in zip(self.made(), timed, strict=True)
        ]

    def made(self) -> list[tuple[Callable[..., ResultRecord], float]]:
        return list(zip(self.rows, self.firsts, strict=True))


Made = Prepared | list[ResultRecord]
"""A unit prepared, or its records where it cannot be timed (or was timed in one call)."""


def prepare_calls(
    operation: str,
    calls: Calls,
    settings: Settings,
    row: Callable[..., ResultRecord],
    collect: bool = True,
) -> Made:
    """One operation's first call, then its warm-up (and a full garbage collection, unless
    not to ``collect``): ready to be timed, or its record."""
    first_call_s = None
    row = partial(row, threads=settings.threads)
    try:
        begin = time.perf_counter()
        calls.first()
        first_call_s = time.perf_counter() - begin
        if first_call_s > settings.long_call_s:
            long = f"first call {first_call_s:.0f} s > {settings.long_call_s:.0f} s"
            timed = _timed(calls.steady, calls.steps, f"{long}: one timed call, no warm-up")
            return [_record(row, first_call_s, timed)]
        steady, per_call, note = _warmed(operation, calls, settings, collect)
    except NotImplementedError as error:
        return [row(first_call_s=first_call_s, unsupported=str(error))]
    except Exception as error:  # one failing operation must not hide the others
        return [row(first_call_s=first_call_s, error=f"{type(error).__name__}: {error}")]
    one = partial(seconds_of, steady)
    return Prepared([row], [first_call_s], lambda: [one()], per_call, Rule.of(settings), note)


def _warmed(
    operation: str, calls: Calls, settings: Settings, collect: bool
) -> tuple[Callable[[], object], int, str | None]:
    """The warm-up, then the call to time, its optimizer steps, and why if not as usual."""
    steady, per_call, note = calls.steady, calls.steps, None
    begin = time.perf_counter()
    if calls.warm_up:
        calls.first()
    if operation == "train_step" and time.perf_counter() - begin > settings.long_step_s:
        # a fit call's own cost, milliseconds, is under 1 % of such a step
        steady, per_call = calls.first, 1
        note = f"a step over {settings.long_step_s:g} s: fit(x, epochs=1) a sample"
    if collect:  # none falls due while timing; a floor beside the others makes little garbage
        gc.collect()
    return steady, per_call, note


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
        """The codec's runs at one side and chunk length (``bench.codec_runs``): through
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
            partial(row, run.operation, threads=settings.threads) for run in runs
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


def _record(row: Callable[..., ResultRecord], first_call_s: float, timed: Timed) -> ResultRecord:
    """The record ``row`` makes of a first call and the timed calls after it."""
    q1, median, q3 = np.percentile(timed.seconds / timed.per_call, [25, 50, 75])
    return row(
        first_call_s=first_call_s,
        note=timed.note,
        samples=len(timed.seconds),
        steps_per_sample=timed.per_call,
        median_s=float(median),
        q1_s=float(q1),
        q3_s=float(q3),
        calls_s=timed.seconds.tolist(),
        cores_busy=timed.cores_busy,
        peak_rss_mb=peak_rss_mb(),
    )


class Timed(NamedTuple):
    """An operation's timed calls: each one's seconds, its optimizer steps, how they were not
    timed as usual (if so), and CPU time over wall time across them."""

    seconds: np.ndarray
    per_call: int
    note: str | None
    cores_busy: float


def _timed(call: Callable[[], object], per_call: int, note: str | None) -> Timed:
    """One timed call of ``call``, with the cores busy."""
    cpu, wall = time.process_time(), time.perf_counter()
    seconds = seconds_of(call)
    busy = (time.process_time() - cpu) / (time.perf_counter() - wall)
    return Timed(np.array([seconds]), per_call, note, busy)


def serve(bench: Bench, commands: TextIO, say: Callable[[str], None]) -> None:
    """Answer ``commands`` (the module docstring's), one a line, until they end."""
    prepared: Prepared | None = None
    say(json.dumps({"kind": IDLE}))
    for line in commands:
        command = json.loads(line)
        if command == SAMPLE and prepared is not None:
            try:
                said: dict[str, Any] = {"kind": SAMPLE, "seconds": prepared.sample(rewarm=True)}
            except Exception:  # the records say why
                said = {"kind": SAMPLE, "error": prepared.error or "failed"}
            say(json.dumps(said))
            continue
        if command == "stop" and prepared is not None:
            made, prepared = prepared.records(), None
        else:
            unit = Unit.from_json(command["unit"])
            answer = bench.alone(unit) if command.get("alone") else bench.prepare(unit)
            if isinstance(answer, Prepared):
                prepared = answer
                ready = {"kind": READY, "per_call": answer.per_call, "rule": answer.rule}
                say(json.dumps(ready))
                continue
            made = answer
        for record in made:
            say(to_json(record))
        say(json.dumps({"kind": IDLE}))


def main(argv: list[str] | None = None) -> None:
    """Start the job given as JSON in ``argv[0]``: print the variant's facts, then answer the
    commands on standard input (the module docstring's)."""
    job = Job.from_json((sys.argv[1:] if argv is None else argv)[0])

    def emit(record: Record) -> None:
        print(to_json(record), flush=True)

    pin(job.settings.threads)  # before any framework starts its pools
    import frae  # the core, not counted in the import time
    from frae.devices import framework_of, start_devices

    if job.devices:  # before the framework starts: it fixes its devices then
        start_devices(framework_of(job.backend), cpu_devices=job.devices)
    frameworks = list(job.frameworks)
    start = time.perf_counter()
    apply(job.settings.threads, frameworks)  # imports each framework it sets, first
    importlib.import_module(frae.registry.module_of(job.backend))
    import_s = time.perf_counter() - start
    threads = observed(frameworks)
    routes = getattr(frae.registry.factory_of(job.backend), "routes", ())
    emit(
        VariantRecord(
            job.variant,
            backend=job.backend,
            import_s=import_s,
            threads=threads,
            routes=[str(setting) for setting in routes],
            peak_rss_mb=peak_rss_mb(),
        )
    )
    check(job.settings.threads, threads)
    serve(Bench(job), sys.stdin, lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
