"""The runner: each variant's worker in a process of its own, its records streamed back to
``results.jsonl`` after the run's facts, with a progress bar on standard error."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from bench.catalogue import frameworks, unavailable
from bench.grid import model_points, points_for
from bench.job import Job, Settings
from bench.machine import machine_facts
from bench.records import (
    DEFAULT_MODEL,
    DoneRecord,
    EndRecord,
    Listing,
    Point,
    Record,
    ResultRecord,
    RunRecord,
    VariantRecord,
    to_json,
)
from bench.roles import FLOORS
from bench.threads import environment
from bench.turns import Partner, Worker, ignore, measure
from bench.variant import Variant
from bench.worker import units
from frae.config import FRAEConfig

ROOT = Path(__file__).resolve().parents[1]


def run_variant(
    variant: Variant,
    points: list[Point],
    models: dict[str, FRAEConfig],
    settings: Settings,
    log: Path,
    on_record: Callable[[Record], None],
    round_: int | None = None,
    partners: list[Partner] | None = None,
) -> None:
    """Run one variant's worker over ``points``, each measurement in turn with the
    ``partners`` that make it too (``bench.turns``); pass each record it prints to
    ``on_record``, marked with ``round_``. A worker that fails or times out yields a
    ``variant`` record with the error and the tail of its log."""
    beside = [p for p in partners or [] if p.worker.alive]

    def keep(record: Record) -> None:
        if isinstance(record, VariantRecord | ResultRecord):
            on_record(replace(record, role=variant.role, round=round_))

    with log.open("w") as errors:
        worker = Worker.start(
            variant.name, job_of(variant, models, settings), env_of(variant, settings), errors
        )
        # a worker past its time is ended, and the floors in turn with it, which could hang
        ended = [worker.process, *(p.worker.process for p in beside)]
        timer = threading.Timer(settings.timeout_s, kill, [ended])
        timer.start()
        try:
            if worker.answer(keep) is not None:  # its facts, then idle
                for unit in units(points):
                    measure(worker, unit, beside, keep)
                    if not worker.alive:
                        break
            code = worker.close()
        finally:
            timed_out = not timer.is_alive() and worker.process.returncode == -9
            timer.cancel()
    if code != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        why = f"timed out after {settings.timeout_s:.0f} s" if timed_out else f"exited with {code}"
        error = f"worker {why}: " + " | ".join(tail)
        on_record(VariantRecord(variant.name, variant.role, error=error, round=round_))


def kill(processes: list[subprocess.Popen[str]]) -> None:
    """End ``processes`` at once."""
    for process in processes:
        process.kill()


def job_of(variant: Variant, models: dict[str, FRAEConfig], settings: Settings) -> str:
    """The job of ``variant``'s worker, as JSON."""
    job = Job(
        variant.name,
        variant.backend,
        settings,
        models,
        tuple(frameworks(variant)),
        variant.devices,
    )
    return job.to_json()


def env_of(variant: Variant, settings: Settings) -> dict[str, str]:
    """The environment of ``variant``'s worker: its threads, its own variables."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **environment(settings.threads)}
    env |= variant.env
    if ":" in variant.backend:  # a port by import path is found where the run was started
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    return env


@contextlib.contextmanager
def floors_alive(
    planned: list[Planned], models: dict[str, FRAEConfig], settings: Settings, logs: Path
) -> Iterator[list[Partner]]:
    """A worker of each floor that runs, alive while the block runs: the partners that
    every other variant's measurements are timed in turn with."""
    partners, files = [], []
    try:
        for variant, points, skipped in planned:
            if skipped is None and variant.role in FLOORS:
                files.append((logs / f"{file_name(variant.name)}.in_turn.log").open("w"))
                job, env = job_of(variant, models, settings), env_of(variant, settings)
                worker = Worker.start(variant.name, job, env, files[-1])
                partners.append(Partner(worker, points))
        for partner in partners:
            partner.worker.answer(ignore)  # its facts, then idle
        yield partners
    finally:
        for partner in partners:
            partner.worker.close()
        for file in files:
            file.close()


def listing(variant: Variant) -> Listing:
    """``variant`` as the run's first record lists it."""
    return Listing(**{name: getattr(variant, name) for name in Listing.__dataclass_fields__})


class Planned(NamedTuple):
    """A variant, the points it runs and why it is skipped (``None``: it runs)."""

    variant: Variant
    points: list[Point]
    skipped: str | None

    @property
    def measurements(self) -> int:
        return len(units(self.points))


def plan(
    variants: Iterable[Variant],
    grid: list[Point],
    settings: Settings,
    models: dict[str, FRAEConfig],
) -> list[Planned]:
    """Each variant's part of ``grid``, or why it is skipped."""
    planned = []
    for variant in variants:
        points, refused = model_points(variant, points_for(variant, grid, settings), models)
        planned.append(Planned(variant, points, unavailable(variant) or refused))
    return planned


def run(
    variants: Iterable[Variant],
    grid: Iterable[Point],
    settings: Settings,
    out: Path,
    progress: bool = True,
    models: dict[str, FRAEConfig] | None = None,
) -> list[Record]:
    """Measure every variant over ``grid``, its points' models by label in ``models``; write
    ``out/results.jsonl`` (the run's record first, then each variant's facts or why it was
    skipped and its measurements); return the records."""
    (out / "logs").mkdir(parents=True, exist_ok=True)
    variants, grid = list(variants), list(grid)
    models = models or {DEFAULT_MODEL: FRAEConfig()}
    first = _run_record(variants, grid, settings, models, out / "logs")
    planned = plan(variants, grid, settings, models)
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    bar = tqdm(
        total=sum(p.measurements for p in planned if p.skipped is None) * settings.rounds,
        unit="measurement",
        file=sys.stderr,
        dynamic_ncols=True,
        disable=not progress,
    )
    records: list[Record] = []
    with (out / "results.jsonl").open("w") as results:

        def keep(record: Record) -> None:
            records.append(record)
            results.write(to_json(record) + "\n")
            results.flush()
            if isinstance(record, ResultRecord):
                bar.update(1)
                shown = "" if record.model == DEFAULT_MODEL else f" model {record.model}"
                bar.set_postfix_str(f"{record.variant}{shown} B={record.batch} T={record.steps}")

        keep(first)
        start = time.perf_counter()
        for variant, _, skipped in planned:
            if skipped is not None:
                keep(VariantRecord(variant.name, variant.role, skipped=skipped))
        for round_ in range(1, settings.rounds + 1):
            tag = round_ if settings.rounds > 1 else None  # one round: records as before rounds
            logs = out / "logs" / ("" if tag is None else f"round{tag}")
            logs.mkdir(exist_ok=True)
            with floors_alive(planned, models, settings, logs) as partners:
                for variant, points, skipped in planned:
                    if skipped is not None:
                        continue
                    before, begin = len(records), time.perf_counter()
                    shown = variant.name if tag is None else f"{variant.name}, round {tag}"
                    bar.set_description(shown)
                    log = logs / f"{file_name(variant.name)}.log"
                    beside = [] if variant.role in FLOORS else partners
                    run_variant(variant, points, models, settings, log, keep, tag, beside)
                    done = sum(1 for r in records[before:] if isinstance(r, ResultRecord))
                    bar.update(len(units(points)) - done)  # a failed worker's
                    keep(DoneRecord(variant.name, time.perf_counter() - begin, round=tag))
        keep(EndRecord(time.perf_counter() - start))
    bar.close()
    return records


def _run_record(
    variants: list[Variant],
    grid: list[Point],
    settings: Settings,
    models: dict[str, FRAEConfig],
    logs: Path,
) -> RunRecord:
    """The run's first record: when and how it was started, on what, over which grid."""
    return RunRecord(
        started=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        command=" ".join(sys.orig_argv),
        machine=machine_facts(),
        grid=grid,
        settings=settings,
        variants={variant.name: listing(variant) for variant in variants},
        models={label: config.to_dict() for label, config in models.items()},
        roofline=measure_roofline(settings.threads, logs),
    )


ROOFLINE_TIMEOUT_S = 60.0
"""The most the roofline's process may take (it takes a second or two)."""


def measure_roofline(threads: int, logs: Path) -> dict[str, Any]:
    """The machine's peaks (``bench.roofline``) from a process pinned and sized as a worker on
    ``threads`` is, as a dict; or ``{"error": ...}`` saying why there are none."""
    env = {**os.environ, **environment(threads)}
    command = [sys.executable, "-m", "bench.roofline", str(threads)]
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=ROOFLINE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {ROOFLINE_TIMEOUT_S:.0f} s"}
    (logs / "roofline.log").write_text(done.stderr)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        return {"error": f"exited with {done.returncode}: {tail}"}
    found: dict[str, Any] = json.loads(lines[-1])
    return found


def file_name(name: str) -> str:
    """A variant's or a model's name as a file name (an import path's ``:`` and ``/``, a
    label's spaces, replaced)."""
    return "".join(c if c.isalnum() or c in "._-[]" else "_" for c in name)


def default_out() -> Path:
    """``reports/<timestamp>/`` under the working folder."""
    return Path("reports") / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
