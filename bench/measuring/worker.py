"""One variant's measurements, in a process of its own, driven by the runner
(``bench.measuring.turns``).

    python -m bench.measuring.worker '<job as JSON>'

The worker prints its facts (a ``variant`` record) and ``{"kind": "idle"}``, then reads one
command a line on standard input and answers with JSON lines on standard output:

- ``{"unit": UNIT, "alone": BOOL}``: prepare one measurement (``Unit``), on a fresh model for
  each point: its first call (which compiles) and one untimed warm-up. Alone, the worker
  then times the calls itself (``sample``) and prints the record; in turn, it prints
  ``{"kind": "ready", "per_call": K, "rule": [...]}`` (the optimizer steps a call makes and
  ``Rule``) and waits.
- ``"sample"``: one timed call (of an operation of several runs, the codec's: one of each),
  answered ``{"kind": "sample", "seconds": [...]}``, or ``{"kind": "sample", "error": ...}``.
- ``"stop"``: the records of the calls timed so far.

A unit that cannot be timed, or one timed alone, prints its records at once. Whatever it
printed, the worker then prints ``{"kind": "idle"}``: it waits for its next unit. What a unit
times is its operation's (``bench.measuring.operations``); the worker keeps the timing.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from bench.measuring.job import Job
from bench.measuring.point import Bench, Unit, units
from bench.measuring.threads import apply, check, observed, pin
from bench.measuring.timing import Prepared, alone, peak_rss_mb
from bench.records import (
    Point,
    Record,
    ResultRecord,
    VariantRecord,
    to_json,
)

IDLE, READY, SAMPLE = "idle", "ready", "sample"
"""The kinds of the worker's answers that are not records (``bench.records``)."""


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
            answer = bench.prepare(unit)
            if command.get("alone"):
                answer = alone(answer)
            if isinstance(answer, Prepared):
                prepared = answer
                ready = {"kind": READY, "per_call": answer.per_call, "rule": answer.rule}
                say(json.dumps(ready))
                continue
            made = answer
        for record in made:
            say(to_json(record))
        say(json.dumps({"kind": IDLE}))


def measure_shape(job: Job, point: Point) -> Iterator[ResultRecord]:
    """The point's measurements on a fresh model, each timed alone."""
    bench = Bench(job)
    for unit in units([point]):
        yield from alone(bench.prepare(unit))


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
