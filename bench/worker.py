"""One backend's measurements, in a process of its own (started by ``bench.runner``).

    python -m bench.worker '<job as JSON>'

prints one JSON line per record (``bench.records``): the variant's facts, then one line per
(operation, B, T). On a fresh model per shape: the first call (which compiles), one untimed
warm-up, then calls timed one by one. The stream sends one sequence a chunk at a time, the
state carried from call to call, as a codec runs online; the whole sequence is one timed call.
"""

from __future__ import annotations

import gc
import importlib
import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from itertools import product
from pathlib import Path
from typing import Any, NamedTuple

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
from bench.threads import apply, check, observed, pin

MIN_SAMPLES = 3


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


def sample(
    call: Callable[[], object], repeats: int, min_time_s: float, budget_s: float, max_samples: int
) -> list[float]:
    """Seconds of each timed call of ``call`` (see the module docstring for when it stops)."""
    samples: list[float] = []
    start = time.perf_counter()
    while True:
        begin = time.perf_counter()
        call()
        samples.append(time.perf_counter() - begin)
        elapsed = time.perf_counter() - start
        enough = len(samples) >= repeats and elapsed >= min_time_s
        over_budget = len(samples) >= MIN_SAMPLES and elapsed >= budget_s
        if len(samples) >= max_samples or enough or over_budget:
            return samples


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


def measure_shape(job: Job, point: Point) -> Iterator[ResultRecord]:
    """The point's operations on a fresh model (``job.config(point.model)``) and one
    (B, T) input."""
    import frae
    from frae.data import multi_sine

    config = job.config(point.model)
    x = multi_sine(batch=point.batch, steps=point.steps, features=config.input_dim, seed=0)
    weights = codec_weights(config) if CODEC in point.operations else None
    start = time.perf_counter()
    try:
        model = frae.create(job.backend, config, seed=0, weights=weights, devices=job.devices)
        failure = None
    except Exception as error:  # reported on every operation's row
        model, failure = None, f"{type(error).__name__}: {error}"
    create_s = time.perf_counter() - start
    calls = _calls(model, x, job.settings.train_steps)
    rows = partial(
        ResultRecord,
        batch=point.batch,
        steps=point.steps,
        model=point.model,
        create_s=create_s,
        artifact_kib=getattr(model, "artifact_kib", None),
    )
    for operation in point.operations:
        row = partial(rows, job.variant, operation)
        if operation == STREAM:
            yield from measure_stream(model, x, job, row, failure)
        elif operation == CODEC:
            yield from measure_codec(model, x, job, partial(rows, job.variant), failure)
        else:
            yield row(error=failure) if failure else measure(operation, calls[operation], job, row)


def measure_stream(
    model: Any, x: np.ndarray, job: Job, row: Callable[..., ResultRecord], failure: str | None
) -> Iterator[ResultRecord]:
    """The stream's records, one per side and chunk length (``streams``), on the codes
    of one whole ``encode`` of ``x``; where they could not be made, every record says why."""
    sides = [partial(row, side=side, chunk=chunk) for side in SIDES for chunk in STREAM_CHUNKS]
    if failure is None:
        try:
            codes = model.encode(x)
        except NotImplementedError as error:
            yield from (side(unsupported=str(error)) for side in sides)
            return
        except Exception as error:  # reported on every side's row
            failure = f"{type(error).__name__}: {error}"
    if failure is not None:
        yield from (side(error=failure) for side in sides)
        return
    streaming = replace(job, settings=job.settings.for_stream())
    for stream in streams(model, x, codes, STREAM_CHUNKS):
        calls = Calls(stream.run, stream.run, 1, warm_up=False)
        yield measure(STREAM, calls, streaming, partial(row, side=stream.side, chunk=stream.chunk))


def measure_codec(
    model: Any, x: np.ndarray, job: Job, row: Callable[..., ResultRecord], failure: str | None
) -> Iterator[ResultRecord]:
    """The codec's records (``bench.codec_runs``), made by ``row(operation, ...)``: through
    packets, the coder alone and the codec with its coder bypassed, one per side and chunk
    length; where they could not be made, every record says why."""
    why = {"error": failure} if failure else {}
    if not why:
        try:
            runs = list(codec_runs(model, x, STREAM_CHUNKS))
        except NotImplementedError as error:
            why = {"unsupported": str(error)}
        except Exception as error:  # reported on every row
            why = {"error": f"{type(error).__name__}: {error}"}
    if why:
        for operation, side, chunk in product(CODING, SIDES, STREAM_CHUNKS):
            yield row(operation, side=side, chunk=chunk, **why)
        return
    together: dict[tuple[str, int], list[CodecRun]] = {}
    for run in runs:
        together.setdefault((run.side, run.chunk), []).append(run)
    for group in together.values():
        yield from measure_in_turn(group, job, row)


def measure_in_turn(
    runs: list[CodecRun], job: Job, row: Callable[..., ResultRecord]
) -> list[ResultRecord]:
    """The records of ``runs`` (one side and chunk length), timed in turn, a sample of each
    a round, so that a drift of the machine falls on each alike: the coder's share is the
    difference of two of them. The rounds stop as ``sample``'s calls do."""
    settings = job.settings.for_stream()
    rows = [
        partial(row, run.operation, side=run.side, chunk=run.chunk, threads=settings.threads)
        for run in runs
    ]
    seconds: list[list[float]] = [[] for _ in runs]

    def each_once(into: list[list[float]]) -> None:
        for times, run in zip(into, runs, strict=True):
            begin = time.perf_counter()
            run.run()
            times.append(time.perf_counter() - begin)

    try:
        first: list[list[float]] = [[] for _ in runs]
        each_once(first)  # a stream's first run: its compiles, and nothing to warm up
        cpu, wall = time.process_time(), time.perf_counter()
        rounds = settings.repeats, settings.min_time_s, settings.budget_s, settings.max_samples
        sample(lambda: each_once(seconds), *rounds)
        busy = (time.process_time() - cpu) / (time.perf_counter() - wall)
    except Exception as error:  # every run's record says why
        return [made(error=f"{type(error).__name__}: {error}") for made in rows]
    return [
        _record(made, firsts[0], Timed(np.array(times), 1, None, busy))
        for made, firsts, times in zip(rows, first, seconds, strict=True)
    ]


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


def streams(
    model: Any, x: np.ndarray, codes: np.ndarray, chunks: tuple[int, ...] = STREAM_CHUNKS
) -> Iterator[Stream]:
    """Each side at each chunk length: ``encode`` over ``x``, ``decode`` over ``codes`` (the
    caller's one ``encode`` of ``x``), both from the model's zero state."""
    start = model.initial_state(len(x))
    for side, call, sequence in ((SENDER, model.encode, x), (RECEIVER, model.decode, codes)):
        for chunk in chunks:
            yield Stream(side, chunk, streamer(call, pieces(sequence, chunk), start))


def measure(
    operation: str, calls: Calls, job: Job, row: Callable[..., ResultRecord]
) -> ResultRecord:
    """One operation's record (made by ``row``): its first call, then its steady state."""
    first_call_s = None
    row = partial(row, threads=job.settings.threads)
    try:
        begin = time.perf_counter()
        calls.first()
        first_call_s = time.perf_counter() - begin
        timed = _steady(operation, calls, first_call_s, job.settings)
    except NotImplementedError as error:
        return row(first_call_s=first_call_s, unsupported=str(error))
    except Exception as error:  # one failing operation must not hide the others
        return row(first_call_s=first_call_s, error=f"{type(error).__name__}: {error}")
    return _record(row, first_call_s, timed)


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


def _steady(operation: str, calls: Calls, first_call_s: float, settings: Settings) -> Timed:
    """The timed calls after a first call of ``first_call_s``."""
    if first_call_s > settings.long_call_s:
        long = f"first call {first_call_s:.0f} s > {settings.long_call_s:.0f} s"
        return _timed(calls.steady, calls.steps, f"{long}: one timed call, no warm-up", 1, 0.0)
    steady, per_call, note = calls.steady, calls.steps, None
    begin = time.perf_counter()
    if calls.warm_up:
        calls.first()
    if operation == "train_step" and time.perf_counter() - begin > settings.long_step_s:
        # a fit call's own cost, milliseconds, is under 1 % of such a step
        steady, per_call = calls.first, 1
        note = f"a step over {settings.long_step_s:g} s: fit(x, epochs=1) a sample"
    gc.collect()
    return _timed(steady, per_call, note, settings.repeats, settings.min_time_s, settings)


def _timed(
    call: Callable[[], object],
    per_call: int,
    note: str | None,
    repeats: int,
    min_time_s: float,
    settings: Settings | None = None,
) -> Timed:
    """``sample``'s calls of ``call`` (one alone without ``settings``), with the cores busy."""
    budget_s, max_samples = (settings.budget_s, settings.max_samples) if settings else (0.0, 1)
    cpu, wall = time.process_time(), time.perf_counter()
    seconds = sample(call, repeats, min_time_s, budget_s, max_samples)
    busy = (time.process_time() - cpu) / (time.perf_counter() - wall)
    return Timed(np.array(seconds), per_call, note, busy)


def main(argv: list[str] | None = None) -> None:
    """Run the job given as JSON in ``argv[0]``; print one JSON line per record."""
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
    for point in job.points:
        for record in measure_shape(job, point):
            emit(record)


if __name__ == "__main__":
    main()
