"""Measuring in turn: the workers of the variants compared with each other and the floors'
workers, all alive and pinned to the same cores, take their samples in turn, one of each a
round (the order reversed every other round), so that what the machine does to one sample
it does to the samples it is compared with.

The runner (``bench.measuring.runner``) drives each worker (``bench.measuring.worker``) a
measurement at a time. A group of variants compared directly (a route and its framework's defaults,
a backward by autodiff and by hand, one device and N) measures each measurement they share in turn;
a floor that measures it too (the operation a ratio to the floor divides by,
``bench.records.OVER_FLOOR``, at the same model and shape) takes its turn as well. Each member's
record keeps the others' seconds per step beside its calls (``ResultRecord.partners_s``), the pairs
that ``bench.comparing.pairs`` turns into ratios.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import IO, Any

from bench.measuring.point import Unit
from bench.measuring.timing import Rule
from bench.measuring.worker import IDLE, READY, SAMPLE
from bench.records import CODEC, OVER_FLOOR, Point, Record, ResultRecord, from_json

ROOT = Path(__file__).resolve().parents[2]
Keep = Callable[[Record], None]


def ignore(record: Record) -> None:
    """What a floor measured in turn with a variant is kept in the variant's record."""


@dataclass
class Worker:
    """A worker process (``bench.measuring.worker``), driven a command at a time over its pipes."""

    name: str
    process: subprocess.Popen[str]
    alive: bool = True

    @classmethod
    def start(cls, name: str, job: str, env: dict[str, str], log: IO[str]) -> Worker:
        """``python -m bench.measuring.worker JOB``, its standard error into ``log``."""
        command = [sys.executable, "-m", "bench.measuring.worker", job]
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            bufsize=1,
        )
        return cls(name, process)

    def send(self, command: object) -> None:
        """One command; a worker that has ended is marked so."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):  # ended, or its pipe closed
            self.alive = False

    def answer(self, keep: Keep) -> dict[str, Any] | None:
        """The lines up to the worker's next answer that is not a record (``idle``, ``ready``,
        ``sample``), each record given to ``keep``; ``None`` where the worker ended first."""
        assert self.process.stdout is not None
        while self.alive:
            line = self.process.stdout.readline()
            if not line:
                self.alive = False
            elif line.startswith("{"):  # a library may print to stdout too
                data = json.loads(line)
                if data.get("kind") in (IDLE, READY, SAMPLE):
                    return dict(data)
                keep(from_json(line))
        return None

    def close(self) -> int:
        """End the worker (its commands end); its exit status."""
        if self.process.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        return self.process.wait()


@dataclass
class Floor:
    """A floor's worker, alive for a round, the points it measures (``bench.grid``) and,
    shared by every floor of the round, the fastest floor of each measurement the floors
    have made on their own (``fastest``)."""

    worker: Worker
    points: list[Point]
    fastest: dict[tuple[Any, ...], tuple[float, str]] = field(default_factory=dict)

    def unit_for(self, unit: Unit) -> Unit | None:
        """What this floor measures beside ``unit``: the operation a ratio to the floor
        divides by, at the same model and shape, if the floor measures it there and no
        other floor measured it faster on its own (the ratio divides by the fastest)."""
        if unit.operation == CODEC or not self.worker.alive:
            return None
        own = unit.doing(OVER_FLOOR.get(unit.operation, unit.operation))
        fastest = self.fastest.get(own.measures)
        if fastest is not None and fastest[1] != self.worker.name:
            return None
        for point in self.points:
            if point[:3] == unit.point[:3] and own.operation in point.operations:
                return own
        return None

    def note(self, record: Record) -> None:
        """Keep ``record``, one of a floor's own measurements, if the fastest of its kind."""
        if isinstance(record, ResultRecord) and record.median_s is not None:
            r = record
            what = (r.model, r.batch, r.steps, r.operation, r.side, r.chunk)
            if what not in self.fastest or record.median_s < self.fastest[what][0]:
                self.fastest[what] = (record.median_s, record.variant)


@dataclass
class Turn:
    """One worker's part in a measurement taken in turn: whether its records are kept (a
    member of the group measured) or it is a floor, the optimizer steps a call makes, and
    the seconds of each sample it took."""

    worker: Worker
    member: bool
    per_call: int = 1
    taken: list[list[float]] = field(default_factory=list)
    failed: bool = False

    def per_step(self) -> list[float]:
        return [seconds[0] / self.per_call for seconds in self.taken]


def measure(members: list[tuple[Worker, Unit]], floors: Iterable[Floor], keep: Keep) -> None:
    """One measurement (each member's ``Unit``, the same operation, model and shape), timed
    in turn by every member and each floor that measures it too; alone where only one would.
    Each member's records get the others' seconds per step (``ResultRecord.partners_s``)."""
    beside = [(f.worker, own) for f in floors if (own := f.unit_for(members[0][1])) is not None]
    alone = len(members) == 1 and not beside
    turns, rule = [], None
    for worker, unit in members:
        worker.send({"unit": unit.to_json(), "alone": alone})
        said = worker.answer(keep)
        if said is not None and said["kind"] == READY:
            turns.append(Turn(worker, True, said["per_call"]))
            rule = rule or Rule(*said["rule"])
    if rule is None:
        return
    for worker, unit in beside:
        worker.send({"unit": unit.to_json(), "alone": False})
        said = worker.answer(ignore)
        if said is not None and said["kind"] == READY:
            turns.append(Turn(worker, False, said["per_call"]))
    in_turn(turns, rule)
    for turn in turns:
        turn.worker.send("stop")
        others = {
            other.worker.name: other.per_step()
            for other in turns
            if other is not turn and len(other.taken) == len(turn.taken)
        }
        turn.worker.answer(partial(with_partners, keep, others) if turn.member else ignore)


def with_partners(keep: Keep, paired: dict[str, list[float]], record: Record) -> None:
    """``record`` to ``keep``, with the others' seconds taken in turn with it if it was
    timed, beside those its own process took in turn with it (``timing.Beside``)."""
    if paired and isinstance(record, ResultRecord) and record.calls_s is not None:
        record = replace(record, partners_s={**(record.partners_s or {}), **paired})
    keep(record)


def in_turn(turns: list[Turn], rule: Rule) -> int:
    """A sample of each turn that has not failed, one after another, the order reversed
    every other round, until ``rule`` says enough or no member is left; each kept in its
    ``taken``. Returns the rounds."""
    rounds, start = 0, time.perf_counter()
    while any(turn.member and not turn.failed for turn in turns):
        for turn in turns if rounds % 2 == 0 else turns[::-1]:
            if turn.failed:
                continue
            turn.worker.send(SAMPLE)
            said = turn.worker.answer(ignore)
            if said is None or "seconds" not in said:
                turn.failed = True
            else:
                turn.taken.append(said["seconds"])
        rounds += 1
        if rule.enough(rounds, time.perf_counter() - start):
            break
    return rounds
