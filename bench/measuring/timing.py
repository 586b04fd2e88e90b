"""How a worker times a measurement: a first call and a warm-up, then calls timed one by one
until ``Rule`` says enough, each kept, with the record made of them (``bench.records``).
``Prepared`` is a measurement between its warm-up and its records, sampled alone
(``alone``) or in turn with others (``bench.measuring.turns``); what it times is its
operation's (``bench.measuring.operations``).
"""

from __future__ import annotations

import gc
import itertools
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bench.measuring.job import Settings
from bench.measuring.threads import others_busy
from bench.records import (
    ResultRecord,
)

MIN_SAMPLES = 3
REWARM_BELOW_S = 0.02
"""A sample taken in turn shorter than this is preceded by an untimed one: a call made after
its process waited (a pipe's round trip, the others' turns) runs slower than one made
straight after another, its caches cold, which would weigh most on the shortest calls, the
floors' (docs/benchmark.md, "Measured in turn"). Beyond it the cold start is a small part
of the sample."""


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


def seconds_of(call: Callable[[], object]) -> float:
    """The seconds one call of ``call`` takes."""
    begin = time.perf_counter()
    call()
    return time.perf_counter() - begin


class Calls(NamedTuple):
    """One operation's calls on one model and input: the first (and the warm-up), the timed
    one, with ``steps`` optimizer steps, and whether a warm-up comes before the timed ones.
    ``one_step_if_long``: where the warm-up runs past ``Settings.long_step_s``, ``first``
    (one step) is timed a sample, not ``steady``."""

    first: Callable[[], object]
    steady: Callable[[], object]
    steps: int
    warm_up: bool = True
    one_step_if_long: bool = False


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


@dataclass
class Beside(Prepared):
    """A measurement timed in turn with another in the same process (the same calls on a
    second model): a sample is one call of each, the order reversed every other sample. Its
    record keeps the other's seconds per step as a partner's (``ResultRecord.partners_s``,
    under ``partner``), the pairs ``bench.comparing.pairs`` divides, and of what other
    processes took of its CPUs over both calls (``others_s``) the share of its own calls'
    time, as a measurement timed alone counts it over its own calls."""

    partner: str = ""

    def records(self) -> list[ResultRecord]:
        own, other = super().records()
        if own.calls_s is None or other.calls_s is None:
            return [own]
        per_step = [seconds / (other.steps_per_sample or 1) for seconds in other.calls_s]
        partners = {**(own.partners_s or {}), self.partner: per_step}
        ours, both = sum(own.calls_s), sum(own.calls_s) + sum(other.calls_s)
        others_s = None if own.others_s is None else own.others_s * ours / both
        return [replace(own, partners_s=partners, others_s=others_s)]


Made = Prepared | list[ResultRecord]
"""A unit prepared, or its records where it cannot be timed (or was timed in one call)."""


def noted(made: Made, why: str) -> Made:
    """``made`` with ``why`` added to its records' notes."""
    if isinstance(made, Prepared):
        made.note = why if made.note is None else f"{made.note}; {why}"
        return made
    return [replace(record, note="; ".join(filter(None, [record.note, why]))) for record in made]


def alone(made: Made) -> list[ResultRecord]:
    """The records of ``made``, its samples taken one after another until ``Rule`` says
    enough, with what other processes took of its CPUs meanwhile."""
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


def prepare_calls(
    calls: Calls,
    settings: Settings,
    row: Callable[..., ResultRecord],
    collect: bool = True,
) -> Made:
    """An operation's first call, then its warm-up (and a full garbage collection, unless
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
        steady, per_call, note = _warmed(calls, settings, collect)
    except NotImplementedError as error:
        return [row(first_call_s=first_call_s, unsupported=str(error))]
    except Exception as error:  # one failing operation must not hide the others
        return [row(first_call_s=first_call_s, error=f"{type(error).__name__}: {error}")]
    one = partial(seconds_of, steady)
    return Prepared([row], [first_call_s], lambda: [one()], per_call, Rule.of(settings), note)


def prepare_beside(
    calls: Calls,
    beside: Calls,
    partner: str,
    settings: Settings,
    row: Callable[..., ResultRecord],
    collect: bool = True,
) -> Made:
    """``calls`` and ``beside`` each prepared (``prepare_calls``), then timed in turn
    (``Beside``, its record keeping ``beside``'s seconds per step under ``partner``); ``calls``
    alone where ``beside`` cannot be timed, or not the same number of steps a call."""
    own = prepare_calls(calls, settings, row, collect)
    other = prepare_calls(beside, settings, row, collect)
    if not isinstance(own, Prepared):
        return own
    if not isinstance(other, Prepared):
        (record,) = other
        why = record.error or record.unsupported or "one timed call"
        return noted(own, f"not in turn with {partner}, whose calls were not timed: {why}")
    if other.per_call != own.per_call:
        return noted(own, f"not in turn with {partner}, whose calls make other steps")
    reversed_next = itertools.cycle((False, True))

    def each_once() -> list[float]:
        if next(reversed_next):
            theirs = other.run()
            ours = own.run()
        else:
            ours = own.run()
            theirs = other.run()
        return [*ours, *theirs]

    rows, firsts = [*own.rows, *other.rows], [*own.firsts, *other.firsts]
    return Beside(rows, firsts, each_once, own.per_call, own.rule, own.note, partner=partner)


def _warmed(
    calls: Calls, settings: Settings, collect: bool
) -> tuple[Callable[[], object], int, str | None]:
    """The warm-up, then the call to time, its optimizer steps, and why if not as usual."""
    steady, per_call, note = calls.steady, calls.steps, None
    begin = time.perf_counter()
    if calls.warm_up:
        calls.first()
    if calls.one_step_if_long and time.perf_counter() - begin > settings.long_step_s:
        # a fit call's own cost, milliseconds, is under 1 % of such a step
        steady, per_call = calls.first, 1
        note = f"a step over {settings.long_step_s:g} s: fit(x, epochs=1) a sample"
    if collect:  # none falls due while timing; a floor beside the others makes little garbage
        gc.collect()
    return steady, per_call, note


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
