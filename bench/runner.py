"""The runner: each variant's worker in a process of its own, its records streamed back to
``results.jsonl`` after the run's facts, with a progress bar on standard error."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
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
    from_json,
    to_json,
)
from bench.threads import environment
from bench.variant import Variant
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
) -> None:
    """Run one variant's worker; pass each record it prints to ``on_record``, marked with
    ``round_``. A worker that fails or times out yields a ``variant`` record with the error
    and the tail of its log."""
    job = Job(
        variant.name,
        variant.backend,
        settings,
        tuple(points),
        models,
        tuple(frameworks(variant)),
        variant.devices,
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **environment(settings.threads)}
    env |= variant.env
    if ":" in variant.backend:  # a port by import path is found where the run was started
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    with log.open("w") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", job.to_json()],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        timer = threading.Timer(settings.timeout_s, process.kill)
        timer.start()
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("{"):  # a library may print to stdout too
                    record = from_json(line)  # a variant's facts or a measurement
                    if isinstance(record, VariantRecord | ResultRecord):
                        on_record(replace(record, role=variant.role, round=round_))
            code = process.wait()
        finally:
            timed_out = not timer.is_alive() and process.returncode == -9
            timer.cancel()
    if code != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        why = f"timed out after {settings.timeout_s:.0f} s" if timed_out else f"exited with {code}"
        error = f"worker {why}: " + " | ".join(tail)
        on_record(VariantRecord(variant.name, variant.role, error=error, round=round_))


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
        return sum(len(point.operations) for point in self.points)


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
            for variant, points, skipped in planned:
                if skipped is not None:
                    continue
                before, begin = len(records), time.perf_counter()
                bar.set_description(variant.name if tag is None else f"{variant.name}, round {tag}")
                suffix = "" if tag is None else f".round{tag}"
                log = out / "logs" / f"{file_name(variant.name)}{suffix}.log"
                run_variant(variant, points, models, settings, log, keep, tag)
                done = sum(1 for r in records[before:] if isinstance(r, ResultRecord))
                bar.update(sum(len(p.operations) for p in points) - done)  # a failed worker's
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
