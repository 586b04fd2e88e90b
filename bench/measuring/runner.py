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
from typing import IO, Any, NamedTuple

from bench.catalogue import frameworks, unavailable
from bench.grid import model_points, points_for
from bench.measuring.job import Job, Settings
from bench.measuring.machine import machine_facts
from bench.measuring.point import Unit, units
from bench.measuring.threads import environment, one_run_at_a_time
from bench.measuring.turns import Floor, Worker, measure
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
    file_name,
    to_json,
)
from bench.roles import FLOORS
from bench.variant import Variant
from frae.config import FRAEConfig

ROOT = Path(__file__).resolve().parents[2]


def run_group(
    group: list[Planned],
    models: dict[str, FRAEConfig],
    settings: Settings,
    logs: Path,
    on_record: Callable[[Record], None],
    round_: int | None = None,
    floors: list[Floor] | None = None,
) -> None:
    """Run the workers of ``group``, a variant and those compared with it directly, side by
    side: each measurement they share timed in turn by them all and the ``floors`` that make
    it (``bench.measuring.turns``), each other one by its variant with the floors; a floor's own
    measurements are made by its worker alive for the round (``floors_alive``), alone. Each
    record goes to ``on_record``, marked with its variant's role and ``round_``. A worker
    that fails or times out yields a ``variant`` record with the error and its log's tail."""
    alive = {floor.worker.name: floor for floor in floors or [] if floor.worker.alive}
    keep = marked(on_record, group, round_, next(iter(alive.values()), None))
    own = [p for p in group if p.variant.name not in alive]
    beside = [] if len(own) < len(group) else list(alive.values())
    with contextlib.ExitStack() as files:
        started = [(alive[p.variant.name].worker, units(p.points)) for p in group if p not in own]
        for planned in own:  # one at a time: each one's import is its own
            log = files.enter_context((logs / f"{file_name(planned.variant.name)}.log").open("w"))
            worker = start(planned.variant, models, settings, log, keep)
            started.append((worker, units(planned.points)))
        # a worker past its time is ended, and the floors in turn with it, which could hang
        ended = [worker.process for worker, _ in started]
        ended += [floor.worker.process for floor in beside]
        timer = threading.Timer(settings.timeout_s * len(group), kill, [ended])
        timer.start()
        try:
            for members in shared(started):
                measure(members, beside, keep)
            codes = {w.name: w.close() for w, _ in started if w.name not in alive}
        finally:
            timed_out = not timer.is_alive()
            timer.cancel()
    for name, code in codes.items():
        failed(name, code, timed_out, logs, settings, keep)


def start(
    variant: Variant,
    models: dict[str, FRAEConfig],
    settings: Settings,
    log: IO[str],
    keep: Callable[[Record], None],
    keeps_models: bool = False,
) -> Worker:
    """``variant``'s worker, started, its facts given to ``keep``; it then waits."""
    job, env = job_of(variant, models, settings, keeps_models), env_of(variant, settings)
    worker = Worker.start(variant.name, job, env, log)
    worker.answer(keep)
    return worker


def marked(
    on_record: Callable[[Record], None],
    group: list[Planned],
    round_: int | None,
    floor: Floor | None = None,
) -> Callable[[Record], None]:
    """``on_record`` for the records of ``group``'s variants, each marked with its
    variant's role and ``round_``; a floor's own measurements noted (``Floor.note``)."""
    roles = {planned.variant.name: planned.variant.role for planned in group}

    def keep(record: Record) -> None:
        if isinstance(record, VariantRecord | ResultRecord):
            if floor is not None and roles[record.variant] in FLOORS:
                floor.note(record)
            on_record(replace(record, role=roles[record.variant], round=round_))

    return keep


def failed(
    name: str,
    code: int,
    timed_out: bool,
    logs: Path,
    settings: Settings,
    keep: Callable[[Record], None],
) -> None:
    """Where worker ``name`` exited with ``code`` other than 0, a ``variant`` record of
    why, with the tail of its log."""
    if code == 0:
        return
    tail = (logs / f"{file_name(name)}.log").read_text(errors="replace").strip().splitlines()
    ran = timed_out and code == -9
    why = f"timed out after {settings.timeout_s:.0f} s" if ran else f"exited with {code}"
    keep(VariantRecord(name, error=f"worker {why}: " + " | ".join(tail[-5:])))


def shared(workers: list[tuple[Worker, list[Unit]]]) -> Iterator[list[tuple[Worker, Unit]]]:
    """Each measurement of the first worker's units with every other worker's same one
    (``Unit.measures``), then each other worker's left, in each one's order."""
    left = [(worker, {unit.measures: unit for unit in made}) for worker, made in workers]
    for _, pending in left:
        for what in list(pending):
            yield [(worker, others.pop(what)) for worker, others in left if what in others]


def groups(planned: list[Planned]) -> list[list[Planned]]:
    """The variants that run, each measured together with those compared with it directly
    (``Variant.compared_with``) that run too; the floors alone."""
    running = [p for p in planned if p.skipped is None]
    names = {p.variant.name for p in running}

    def leads(p: Planned) -> bool:
        return p.variant.role in FLOORS or p.variant.compared_with not in names

    found = {p.variant.name: [p] for p in running if leads(p)}
    for p in running:
        if not leads(p):
            mate = found.get(p.variant.compared_with or "")
            (mate if mate is not None else found.setdefault(p.variant.name, [])).append(p)
    return list(found.values())


def kill(processes: list[subprocess.Popen[str]]) -> None:
    """End ``processes`` at once."""
    for process in processes:
        process.kill()


def job_of(
    variant: Variant,
    models: dict[str, FRAEConfig],
    settings: Settings,
    keeps_models: bool = False,
) -> str:
    """The job of ``variant``'s worker, as JSON."""
    job = Job(
        variant.name,
        variant.backend,
        settings,
        models,
        tuple(frameworks(variant)),
        variant.devices,
        keeps_models,
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
    planned: list[Planned],
    models: dict[str, FRAEConfig],
    settings: Settings,
    logs: Path,
    on_record: Callable[[Record], None],
    round_: int | None = None,
) -> Iterator[list[Floor]]:
    """A worker of each floor that runs, alive while the block runs: it makes the floor's
    own measurements, and every other variant's are timed in turn with it. Each keeps its
    models, which every variant measures at the same points."""
    floors = [p for p in planned if p.skipped is None and p.variant.role in FLOORS]
    keep, alive = marked(on_record, floors, round_), list[Floor]()
    fastest: dict[tuple[Any, ...], tuple[float, str]] = {}
    with contextlib.ExitStack() as files:
        try:
            for p in floors:
                log = files.enter_context((logs / f"{file_name(p.variant.name)}.log").open("w"))
                worker = start(p.variant, models, settings, log, keep, keeps_models=True)
                alive.append(Floor(worker, p.points, fastest))
            yield alive
        finally:
            codes = {floor.worker.name: floor.worker.close() for floor in alive}
    for name, code in codes.items():
        failed(name, code, False, logs, settings, keep)


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
    skipped and its measurements); return the records. One run measures on this machine at
    a time (``bench.measuring.threads.one_run_at_a_time``)."""
    (out / "logs").mkdir(parents=True, exist_ok=True)
    variants, grid = list(variants), list(grid)
    models = models or {DEFAULT_MODEL: FRAEConfig()}
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    records: list[Record] = []
    with one_run_at_a_time(), (out / "results.jsonl").open("w") as results:
        first = _run_record(variants, grid, settings, models, out / "logs")
        planned = plan(variants, grid, settings, models)
        bar = tqdm(
            total=sum(p.measurements for p in planned if p.skipped is None) * settings.rounds,
            unit="measurement",
            file=sys.stderr,
            dynamic_ncols=True,
            disable=not progress,
        )

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
            measure_round(planned, models, settings, out / "logs", keep, bar, tag)
        keep(EndRecord(time.perf_counter() - start))
    bar.close()
    return records


def measure_round(
    planned: list[Planned],
    models: dict[str, FRAEConfig],
    settings: Settings,
    logs: Path,
    keep: Callable[[Record], None],
    bar: Any,
    tag: int | None,
) -> None:
    """One round: the floors alive throughout, each group of variants in turn."""
    logs = logs / ("" if tag is None else f"round{tag}")
    logs.mkdir(exist_ok=True)
    with floors_alive(planned, models, settings, logs, keep, tag) as floors:
        for group in groups(planned):
            before, begin = bar.n, time.perf_counter()
            shown = " + ".join(p.variant.name for p in group)
            bar.set_description(shown if tag is None else f"{shown}, round {tag}")
            run_group(group, models, settings, logs, keep, tag, floors)
            bar.update(sum(len(units(p.points)) for p in group) - (bar.n - before))  # failed
            wall = time.perf_counter() - begin  # each one's worker ran all along
            for p in group:
                keep(DoneRecord(p.variant.name, wall, round=tag))


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


def default_out() -> Path:
    """``reports/<timestamp>/`` under the working folder."""
    return Path("reports") / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
