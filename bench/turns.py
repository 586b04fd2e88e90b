"""Measuring in turn: a variant's worker and the floors' workers, all alive and pinned to the
same cores, take their samples in turn, one of each a round (the order reversed every other
round), so that what the machine does to one sample it does to the sample it is compared with.

The runner (``bench.runner``) drives each worker (``bench.worker``) a measurement at a time.
A variant's measurement that a floor can make too (the operation a ratio to the floor divides
by, ``bench.records.OVER_FLOOR``, at the same model and shape) is timed in turn with it; the
floor's seconds per step are kept beside the variant's calls (``ResultRecord.partners_s``),
the pairs that ``bench.pairs`` turns into ratios.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from bench.records import CODEC, OVER_FLOOR, Point, Record, ResultRecord, from_json
from bench.worker import IDLE, READY, SAMPLE, Rule, Unit

ROOT = Path(__file__).resolve().parents[1]
Keep = Callable[[Record], None]


def ignore(record: Record) -> None:
    """What a floor measured in turn with a variant is kept in the variant's record."""


@dataclass
class Worker:
    """A worker process (``bench.worker``), driven a command at a time over its pipes."""

    name: str
    process: subprocess.Popen[str]
    alive: bool = True

    @classmethod
    def start(cls, name: str, job: str, env: dict[str, str], log: IO[str]) -> Worker:
        """``python -m bench.worker JOB``, its standard error into ``log``."""
        command = [sys.executable, "-m", "bench.worker", job]
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
class Partner:
    """A floor's worker, alive for a round, and the points it measures (``bench.grid``)."""

    worker: Worker
    points: list[Point]
    taken: list[list[float]] = field(default_factory=list)
    per_call: int = 1

    def unit_for(self, unit: Unit) -> Unit | None:
        """What this floor measures beside ``unit``: the operation a ratio to the floor
        divides by, at the same model and shape, if the floor measures it there."""
        if unit.operation == CODEC or not self.worker.alive:
            return None
        operation = OVER_FLOOR.get(unit.operation, unit.operation)
        point = unit.point
        for own in self.points:
            if own[:3] == point[:3] and operation in own.operations:
                return unit._replace(operation=operation)
        return None


def measure(worker: Worker, unit: Unit, partners: Iterable[Partner], keep: Keep) -> None:
    """``unit`` on ``worker``, timed in turn with each partner that measures it too (alone
    where none does); its records, with the partners' seconds, given to ``keep``."""
    beside = [(p, own) for p in partners if (own := p.unit_for(unit)) is not None]
    worker.send({"unit": unit.to_json(), "alone": not beside})
    said = worker.answer(keep)
    if said is None or said["kind"] != READY:
        return
    ready = []
    for partner, own in beside:
        partner.worker.send({"unit": own.to_json(), "alone": False})
        answer = partner.worker.answer(ignore)
        if answer is not None and answer["kind"] == READY:
            partner.taken, partner.per_call = [], answer["per_call"]
            ready.append(partner)
    taken = in_turn(worker, ready, Rule(*said["rule"]))
    for partner in ready:
        partner.worker.send("stop")
        partner.worker.answer(ignore)
    paired = {
        p.worker.name: [seconds[0] / p.per_call for seconds in p.taken]
        for p in ready
        if len(p.taken) == taken
    }
    worker.send("stop")
    worker.answer(lambda r: keep(with_partners(r, paired)))


def with_partners(record: Record, paired: dict[str, list[float]]) -> Record:
    """``record`` with the floors' seconds taken in turn with it, where it was timed."""
    if not paired or not isinstance(record, ResultRecord) or record.calls_s is None:
        return record
    return replace(record, partners_s=paired)


def in_turn(worker: Worker, partners: list[Partner], rule: Rule) -> int:
    """Samples of ``worker`` and each partner in turn, one of each a round, the order
    reversed every other round, until ``rule`` says enough, the worker's failure or its end;
    each partner's kept in its ``taken``. Returns how many of the worker's were taken."""
    taken, start = 0, time.perf_counter()
    while True:
        order: list[Worker | Partner] = [worker, *partners]
        for turn in order if taken % 2 == 0 else order[::-1]:
            one = turn if isinstance(turn, Worker) else turn.worker
            one.send(SAMPLE)
            said = one.answer(ignore)
            if turn is worker and (said is None or "error" in said):
                return taken
            if isinstance(turn, Partner) and said is not None and "seconds" in said:
                turn.taken.append(said["seconds"])
        taken += 1
        if rule.enough(taken, time.perf_counter() - start):
            return taken
