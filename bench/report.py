"""The benchmark's report: tables with every figure's ratio to the native floor, the targets
met or missed, and plots, all from the records ``bench.harness`` writes.

``write(records, out)`` writes ``report.md``, ``step_time_vs_T.png``,
``throughput_vs_B.png`` and ``first_call.png`` into ``out`` and returns the summary for the
terminal. Every table, target and plot reads one ``Pivot`` of the records and finds the
variants it needs by their role (``bench.harness.Variant.role``), never by name.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tabulate import tabulate

from bench.records import (
    DEFAULT_MODEL,
    OPERATIONS,
    DoneRecord,
    EndRecord,
    Record,
    ResultRecord,
    RunRecord,
    VariantRecord,
)

FLOOR_ROLES = ("floor", "simd_floor", "matrix_floor")
"""The native floors: scalar loops, loops vectorised over the batch, matrix products."""
Key = tuple[str, str, int, int]
"""(variant, operation, B, T)."""
Shape = tuple[int, int]
"""(B, T)."""
TARGET_SHAPE: Shape = (1, 1000)
"""Where the per-step targets are judged."""
BATCHED_SHAPE: Shape = (256, 1000)
LABELS = {"predict": "predict", "loss_and_grads": "loss_and_grads", "train_step": "train step"}
TIME, THROUGHPUT = "us_per_step", "sequence_steps_per_s"
"""The figures a target divides: µs per time step, sequence-steps per second."""


@dataclass
class Pivot:
    """One run's records, pivoted once.

    Attributes:
        results: every measurement, timed or not, by (variant, operation, B, T), in the
            order of the run.
        roles: variant -> role, in the order of the run.
        facts: variant -> its facts from its process, or why it did not run.
        walls: variant -> seconds its worker took.
        run: the run's first record (``None`` for records without one, as in tests).
        wall_s: seconds the whole run took.
        model: the label of the model whose measurements ``results`` holds.
    """

    results: dict[Key, ResultRecord] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    facts: dict[str, VariantRecord] = field(default_factory=dict)
    walls: dict[str, float] = field(default_factory=dict)
    run: RunRecord | None = None
    wall_s: float | None = None
    model: str = DEFAULT_MODEL

    @classmethod
    def of(cls, records: Iterable[Record], model: str | None = None) -> Pivot:
        """The pivot of ``records``, in the order they were written, with the measurements
        of ``model`` (default: the run's first, ``models_of``)."""
        records = list(records)
        pivot = cls(model=model or next(iter(models_of(records)), DEFAULT_MODEL))
        for r in records:
            match r:
                case RunRecord():
                    pivot.run = r
                    pivot.roles |= {name: listing.role for name, listing in r.variants.items()}
                case VariantRecord():
                    pivot.facts[r.variant] = r
                case ResultRecord() if r.model == pivot.model:
                    pivot.results[(r.variant, r.operation, r.batch, r.steps)] = r
                case DoneRecord():
                    pivot.walls[r.variant] = r.wall_s
                case EndRecord():
                    pivot.wall_s = r.wall_s
            if isinstance(r, VariantRecord | ResultRecord):
                pivot.roles.setdefault(r.variant, r.role or "baseline")
        return pivot

    def named(self, role: str) -> list[str]:
        """The variants of ``role``, in the order of the run."""
        return [name for name, found in self.roles.items() if found == role]

    def figure(self, key: Key, metric: str = TIME) -> float | None:
        """``metric`` of one measurement, if it was timed."""
        found = self.results.get(key)
        return None if found is None else getattr(found, metric)

    def floor(self, operation: str, batch: int, steps: int) -> float | None:
        """The floor's µs per step for ``operation`` at (B, T): the fastest of the floors
        (``FLOOR_ROLES``) measured there, the tightest bound this run has."""
        names = [name for role in FLOOR_ROLES for name in self.named(role)]
        figures = [self.figure((name, operation, batch, steps)) for name in names]
        return min((f for f in figures if f is not None), default=None)

    @property
    def state_feedback(self) -> bool:
        """Whether the model feeds back its GRU's state (contract section 1b), as the run's
        record of its config says."""
        config = self.run.models.get(self.model, {}) if self.run else {}
        return config.get("feedback") == "state"

    def floor_ratio(self, key: Key) -> float | None:
        """µs per step of a measurement over the floor's (``floor``), same operation and
        shape."""
        floor, value = self.floor(*key[1:]), self.figure(key)
        return None if value is None or floor is None else value / floor

    def first_calls(self) -> dict[tuple[str, str], tuple[float, Shape]]:
        """(variant, operation) -> seconds of its first call in the variant's process and the
        shape (B, T) it compiled: the first it ran (later shapes may only retrace)."""
        found: dict[tuple[str, str], tuple[float, Shape]] = {}
        for (name, operation, b, t), r in self.results.items():
            if r.first_call_s is not None:
                found.setdefault((name, operation), (r.first_call_s, (b, t)))
        return found


def models_of(records: Iterable[Record]) -> list[str]:
    """The labels of the models measured, the run's first: in the order of the run's record,
    then of the measurements (records without a run's record have the default model)."""
    labels: list[str] = []
    for r in records:
        if isinstance(r, RunRecord):
            labels += r.models
        elif isinstance(r, ResultRecord):
            labels.append(r.model)
    return list(dict.fromkeys(labels))


@dataclass(frozen=True)
class Target:
    """One target, as data: ``metric`` of the variants of ``role`` for ``operation`` at
    ``shape``, divided by the same figure of the variant of role ``over``, held to ``limit``.

    Attributes:
        statement: its text; ``{limit}``, ``{at}`` ("B=…, T=…"), ``{B}``, ``{T}`` and
            ``{over_B}`` are filled in.
        at_most: the ratio must be ≤ ``limit``, else ≥.
        every: every variant of ``role`` must meet it, else the best one.
        over: the divisor's role (``"floor"``: the fastest floor there, ``Pivot.floor``);
            ``None``: the same variant at ``over_shape``.
        over_operation: the divisor's operation, if not ``operation``.
        shape: where it is judged; ``None``: at every shape both were measured.
        fastest: only the variant of ``role`` fastest at ``shape`` is judged.
    """

    statement: str
    limit: float
    operation: str = "predict"
    role: str = "compiled"
    at_most: bool = True
    every: bool = True
    over: str | None = "floor"
    over_operation: str | None = None
    metric: str = TIME
    shape: Shape | None = TARGET_SHAPE
    over_shape: Shape | None = None
    fastest: bool = False

    def text(self) -> str:
        """The statement with its limit and shapes filled in."""
        (b, t), over_b = self.shape or (0, 0), (self.over_shape or (0, 0))[0]
        return self.statement.format(limit=self.limit, at=f"B={b}, T={t}", B=b, T=t, over_B=over_b)


FASTER = "every compiled backend's {} ≥ {{limit:g}}× faster per step than the textbook fix ({{at}})"
TARGETS = (
    Target("every compiled backend's predict ≤ {limit:g}× the floor per step ({at})", 3.0),
    Target("the best compiled predict ≤ {limit:g}× the floor per step ({at})", 1.5, every=False),
    Target(
        "the best training step ≤ {limit:g}× the floor's forward + BPTT per step ({at})",
        3.0,
        "train_step",
        every=False,
        over_operation="loss_and_grads",
    ),
    Target(
        "every compiled backend's training step ≤ {limit:g}× the floor's forward + BPTT ({at})",
        6.0,
        "train_step",
        over_operation="loss_and_grads",
    ),
    # at one shape, a throughput over the textbook fix's is its time over ours
    Target(FASTER.format("predict"), 300.0, at_most=False, over="textbook", metric=THROUGHPUT),
    Target(
        FASTER.format("training step"),
        300.0,
        "train_step",
        at_most=False,
        over="textbook",
        metric=THROUGHPUT,
    ),
    Target(
        "batching pays: the best backend's predict throughput at B={B} ≥ {limit:g}× its own at "
        "B={over_B} (T={T}; best: fastest compiled predict at B={B})",
        8.0,
        at_most=False,
        every=False,
        over=None,
        metric=THROUGHPUT,
        shape=BATCHED_SHAPE,
        over_shape=TARGET_SHAPE,
        fastest=True,
    ),
    Target(
        "the floor is a floor: Numba's forward ≤ {limit:g}× the plain C forward, at every shape",
        1.5,
        role="floor",
        over="check",
        shape=None,
    ),
    *(
        Target(
            "training is linear in T: every compiled backend's training step per step at "
            "T={T} ≤ {limit:g}× its own at T=1000 (B={B})",
            1.15,
            "train_step",
            over=None,
            shape=(batch, 10_000),
            over_shape=(batch, 1000),
        )
        for batch in (1, 256)
    ),
    Target(
        "the best compiled predict ≤ {limit:g}× the floor per step ({at})",
        2.0,
        every=False,
        shape=BATCHED_SHAPE,
    ),
    Target(
        "the best training step ≤ {limit:g}× the floor's forward + BPTT per step ({at})",
        3.0,
        "train_step",
        every=False,
        over_operation="loss_and_grads",
        shape=BATCHED_SHAPE,
    ),
)


STATE = "state feedback: "
"""The state-feedback model's targets begin so: each ratio is over the floors that run the
GRU (``numba_floor``, ``simd_floor``)."""
STATE_TARGETS = (
    Target(STATE + "every compiled backend's predict ≤ {limit:g}× the floor per step ({at})", 3.0),
    Target(
        STATE + "the best compiled predict ≤ {limit:g}× the floor per step ({at})",
        1.25,
        every=False,
    ),
    Target(
        STATE + "the best training step ≤ {limit:g}× the floor's forward + BPTT per step ({at})",
        2.5,
        "train_step",
        every=False,
        over_operation="loss_and_grads",
    ),
    Target(
        STATE + "every compiled backend's training step ≤ {limit:g}× the floor's forward + "
        "BPTT ({at})",
        6.0,
        "train_step",
        over_operation="loss_and_grads",
    ),
    Target(
        STATE + "the best compiled predict ≤ {limit:g}× the floor per step ({at})",
        2.0,
        every=False,
        shape=BATCHED_SHAPE,
    ),
    Target(
        STATE + "the best training step ≤ {limit:g}× the floor's forward + BPTT per step ({at})",
        4.0,
        "train_step",
        every=False,
        over_operation="loss_and_grads",
        shape=BATCHED_SHAPE,
    ),
)
"""The state-feedback model's targets: predict and a training step at the output model's
two shapes, over the floors with the GRU, limits set from this machine's measurements
(``STATE_TARGETS_ORIGIN``). The output model's other targets are not repeated: the textbook
fix, batching and length measure the loop, which the GRU does not change."""


def targets_of(pivot: Pivot) -> tuple[Target, ...]:
    """The targets of the pivot's model: ``STATE_TARGETS`` for a state-feedback model, else
    ``TARGETS``."""
    return STATE_TARGETS if pivot.state_feedback else TARGETS


@dataclass(frozen=True)
class Outcome:
    """A target judged: its statement, the figures measured and the verdict."""

    statement: str
    measured: str
    verdict: str
    met: bool | None
    """``None``: not measured in this run, or met only by those measured."""


def ratios(target: Target, pivot: Pivot) -> dict[str, float]:
    """The target's ratio for each variant of its role measured (by shape, where the target
    is judged at every shape)."""
    names, operation = pivot.named(target.role), target.operation
    if target.fastest and target.shape:
        shape = target.shape
        timed = {n: v for n in names if (v := pivot.figure((n, operation, *shape))) is not None}
        names = sorted(timed, key=timed.__getitem__)[:1]
    found, over_operation = {}, target.over_operation or operation
    for name in names:
        measured = [key[2:] for key in pivot.results if key[:2] == (name, operation)]
        # itself, or the floor (``Pivot.floor``), or the first of the divisor's role
        own = target.over in (None, "floor")
        for over in [name] if own else pivot.named(target.over or "")[:1]:
            for b, t in [target.shape] if target.shape else measured:
                value = pivot.figure((name, operation, b, t), target.metric)
                over_shape = target.over_shape or (b, t)
                base = (
                    pivot.floor(over_operation, *over_shape)
                    if target.over == "floor" and target.metric == TIME
                    else pivot.figure((over, over_operation, *over_shape), target.metric)
                )
                if value is not None and base is not None:
                    found[name if target.shape else f"B={b}, T={t}"] = value / base
    return found


def judge(target: Target, pivot: Pivot) -> Outcome:
    """``target`` over its ratios: the worst of them (``every``) or the best.

    Variants of its role not measured are listed; a target over every one of them is then
    not met, only "met by those measured".
    """
    values, statement = ratios(target, pivot), target.text()
    if not values:
        return Outcome(statement, "not measured in this run", "not measured", None)
    expected = pivot.named(target.role) if target.every and target.shape else []
    missing = [name for name in expected if name not in values]
    name = (max if target.at_most == target.every else min)(values, key=values.__getitem__)
    value, limit = values[name], target.limit
    met: bool | None = value <= limit if target.at_most else value >= limit
    factor = max(value / limit, limit / value)
    verdict = f"met, {factor:.2f}× to spare" if met else f"missed by {factor:.2f}×"
    shown = ", ".join(f"{n} {v:.3g}×" for n, v in values.items())
    if missing:
        shown += f"; not measured: {', '.join(missing)}"
        if target.every and met:
            verdict, met = verdict.replace("met,", "met by those measured,"), None
    subject = "worst" if target.every else "best"
    return Outcome(statement, f"{shown} ({subject}: {name})", verdict, met)


def targets(pivot: Pivot) -> list[Outcome]:
    """Every one of the model's targets (``targets_of``), judged from one run."""
    return [judge(target, pivot) for target in targets_of(pivot)]


MIN_FIT_STEPS = 3
"""A line through two points always fits: the split needs at least three T."""
FIT_TOLERANCE = 0.1
"""The most a fitted call time may differ from a measured one, relative to it."""


@dataclass(frozen=True)
class CallCost:
    """A call's time split as ``per_call + per_step·T``, fitted over the T measured at one B;
    where the line does not fit (``residual`` over ``FIT_TOLERANCE``) no split is given."""

    variant: str
    operation: str
    batch: int
    steps: tuple[int, ...]
    per_call_us: float
    per_step_us: float
    residual: float
    """The largest |fitted − measured| / measured over the T fitted."""

    @property
    def fits(self) -> bool:
        return self.residual <= FIT_TOLERANCE


def call_costs(pivot: Pivot, batch: int = TARGET_SHAPE[0]) -> list[CallCost]:
    """Lines through each (variant, operation)'s median call time against T at ``batch``,
    where at least ``MIN_FIT_STEPS`` T were measured, fitted by least squares on relative
    errors (weights 1/time: the short calls count as much as the long ones).

    The intercept is what a call costs whatever its length (dispatch, argument handling,
    launching the compiled program, converting the result); the slope is the loop's own
    cost per time step. A ratio to the floor at one T mixes the two; the split says which
    one a backend would have to shrink.
    """
    times: dict[tuple[str, str], dict[int, float]] = {}
    for (name, operation, b, steps), r in pivot.results.items():
        if b == batch and r.median_s is not None:
            times.setdefault((name, operation), {})[steps] = r.median_s
    costs = []
    for (name, operation), by_steps in times.items():
        if len(by_steps) >= MIN_FIT_STEPS:
            lengths = np.array(sorted(by_steps), dtype=float)
            seconds = np.array([by_steps[int(t)] for t in lengths])
            slope, intercept = np.polyfit(lengths, seconds, 1, w=1 / seconds)
            residual = np.abs(slope * lengths + intercept - seconds) / seconds
            costs.append(
                CallCost(
                    name,
                    operation,
                    batch,
                    tuple(int(t) for t in lengths),
                    float(intercept * 1e6),
                    float(slope * 1e6),
                    float(residual.max()),
                )
            )
    return costs


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"


def _with_ratio(value: float | None, ratio: float | None) -> str:
    """'figure (ratio×)', or the figure alone."""
    return _fmt(value) + (f" ({_fmt(ratio)}×)" if ratio is not None else "")


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    # the cells are formatted already: no parsing as numbers, no realigning of decimals
    fmt = "github" if markdown else "simple"
    return tabulate(rows, header, tablefmt=fmt, disable_numparse=True)


def call_cost_rows(pivot: Pivot) -> list[list[str]]:
    """One row per (variant, operation) measured at enough T: its split, the per-step part
    also over the floor's, or why there is none (the line does not fit, or the fixed cost
    is below what these T resolve: a negative intercept)."""
    costs = call_costs(pivot)
    floors = {name for role in FLOOR_ROLES for name in pivot.named(role)}
    floor: dict[str, float] = {}
    for c in costs:
        if c.variant in floors and c.fits:
            floor[c.operation] = min(c.per_step_us, floor.get(c.operation, c.per_step_us))
    rows = []
    for c in costs:
        steps = ", ".join(map(str, c.steps))
        if not c.fits:
            poor = f"poor fit ({100 * c.residual:.0f}% off)"
            rows.append([c.variant, LABELS[c.operation], steps, poor, "—"])
            continue
        base = floor.get(c.operation)
        per_step = _with_ratio(c.per_step_us, c.per_step_us / base if base else None)
        per_call = _fmt(c.per_call_us) if c.per_call_us >= 0 else "below resolution"
        rows.append([c.variant, LABELS[c.operation], steps, per_call, per_step])
    return rows


def unsplit_reason(pivot: Pivot, batch: int = TARGET_SHAPE[0]) -> str | None:
    """Why no call is split at ``batch``: fewer than ``MIN_FIT_STEPS`` T measured there."""
    steps = sorted({k[3] for k, r in pivot.results.items() if k[2] == batch and r.median_s})
    if len(steps) >= MIN_FIT_STEPS:
        return None
    measured = ", ".join(map(str, steps)) or "none"
    return (
        f"Not split into per call and per step: not enough points (a line needs at least "
        f"{MIN_FIT_STEPS} T at B={batch}; this run measured T = {measured})."
    )


CALL_COST_HEADER = ["variant", "operation", "T fitted", "µs per call", "µs per step (× floor)"]
CALL_COST_CAPTION = (
    "Each call's median time at B=1 fitted as per call + per step × T over the T measured "
    f"(least squares on relative errors; at least {MIN_FIT_STEPS} T, and no split where the "
    f"line misses a measurement by over {100 * FIT_TOLERANCE:.0f}%): the fixed cost of a call "
    "apart from the loop's cost per time step."
)


SPREAD_LIMIT = 0.25
"""An interquartile range over this fraction of the median makes a reading to doubt."""
BELOW_FLOOR = 0.5
"""A figure under this fraction of the floor's says the floor does not bound it there."""
PARTS = (("predict", "loss_and_grads"), ("loss_and_grads", "train_step"))
"""(part, whole): a gradient runs the forward, a training step the gradient; a part clearly
slower than its whole (its lower quartile above the whole's upper one) contradicts it."""
FLAG = "!"
"""Marks a flagged figure in the tables."""


def flags(pivot: Pivot) -> dict[Key, list[str]]:
    """Each measurement to doubt, with why: a wide spread, or a part slower than its whole
    at the same shape (``PARTS``)."""
    found: dict[Key, list[str]] = {}
    for key, r in pivot.results.items():
        if r.median_s is None or r.q1_s is None or r.q3_s is None:
            continue
        why = []
        spread = (r.q3_s - r.q1_s) / r.median_s
        if spread > SPREAD_LIMIT:
            why.append(f"spread: IQR {100 * spread:.0f}% of the median")
        if (ratio := pivot.floor_ratio(key)) is not None and ratio < BELOW_FLOOR:
            why.append(f"{ratio:.2g}× the floor: the floor does not bound this model here")
        for part, whole in PARTS:
            other = pivot.results.get((key[0], whole, *key[2:]))
            if key[1] == part and other and other.q3_s is not None and r.q1_s > other.q3_s:
                times = r.median_s / other.median_s if other.median_s else float("nan")
                why.append(f"{times:.2g}× its {LABELS[whole]}, which contains it")
        if why:
            found[key] = why
    return found


def flag_rows(pivot: Pivot) -> list[list[str]]:
    """One row per flagged measurement: where, and why."""
    return [
        [name, LABELS[operation], str(b), str(t), "; ".join(why)]
        for (name, operation, b, t), why in flags(pivot).items()
    ]


FLAG_HEADER = ["variant", "operation", "B", "T", "why"]
FLAG_CAPTION = (
    f"Measurements marked {FLAG} in the tables: an interquartile range over "
    f"{100 * SPREAD_LIMIT:.0f}% of the median (a noisy machine, or too few samples); under "
    f"{BELOW_FLOOR:g}× the floor (its loops, one multiply-add at a time, are no limit for "
    "a model of wide layers, which a framework runs on a tuned matrix product); or a "
    "part clearly slower than its whole at the same shape (its lower quartile above the "
    "whole's upper one: a gradient runs the forward, a training step the gradient). Rerun "
    "them before drawing conclusions."
)


def summary_shape(pivot: Pivot) -> Shape:
    """``TARGET_SHAPE`` if it was measured, else the smallest B at the longest T."""
    shapes = {(k[2], k[3]) for k, r in pivot.results.items() if r.median_s is not None}
    if TARGET_SHAPE in shapes or not shapes:
        return TARGET_SHAPE
    return min(shapes, key=lambda shape: (-shape[1], shape[0]))


def summary_rows(pivot: Pivot) -> list[list[str]]:
    """One row per variant at ``summary_shape``: each operation's µs/step (× floor), the first
    call of predict and of a training step, import time and peak memory."""
    compiles, shape, rows, doubted = pivot.first_calls(), summary_shape(pivot), [], flags(pivot)
    for name, role in pivot.roles.items():
        fact = pivot.facts.get(name, VariantRecord(name))
        if fact.skipped or fact.error:
            rows.append([name, role, "skipped" if fact.skipped else "failed", *[""] * 5])
            continue
        keys = [(name, operation, *shape) for operation in OPERATIONS]
        cells = [_with_ratio(pivot.figure(key), pivot.floor_ratio(key)) for key in keys]
        cells = [
            cell + (FLAG if key in doubted else "") for cell, key in zip(cells, keys, strict=True)
        ]
        first = " / ".join(
            _fmt(compiles[name, op][0] if (name, op) in compiles else None, 2)
            for op in ("predict", "train_step")
        )
        peaks = [r.peak_rss_mb for k, r in pivot.results.items() if k[0] == name and r.peak_rss_mb]
        peak = _fmt(max(peaks, default=None), 4)
        rows.append([name, role, *cells, first, _fmt(fact.import_s, 2), peak])
    return rows


SUMMARY_HEADER = ["variant", "role", *LABELS.values(), "compile s (predict / train)"]
SUMMARY_HEADER += ["import s", "peak MB"]
SUMMARY_CAPTION = (
    "µs per time step, median (× the floor's same operation); compile: the first call "
    "of the operation in the variant's process"
)


HAND_WRITTEN = "_bptt"
"""A backend named ``NAME_bptt`` is ``NAME`` with its backward pass written by hand."""


def autodiff_rows(pivot: Pivot) -> list[list[str]]:
    """Per framework and B at T = 1000: its own autodiff's gradient and training step
    beside the hand-written backward's, and their ratio (above 1: autodiff costs more)."""
    rows = []
    for hand in (name for name in pivot.roles if name.endswith(HAND_WRITTEN)):
        autodiff = hand.removesuffix(HAND_WRITTEN)
        for batch in sorted({k[2] for k in pivot.results if k[0] == hand and k[3] == 1000}):
            cells = []
            for operation in ("loss_and_grads", "train_step"):
                own = pivot.figure((autodiff, operation, batch, 1000))
                by_hand = pivot.figure((hand, operation, batch, 1000))
                price = own / by_hand if own is not None and by_hand else None
                cells += [_fmt(own), _fmt(by_hand), _fmt(price) + ("×" if price else "")]
            rows.append([autodiff, str(batch), *cells])
    return rows


AUTODIFF_HEADER = ["backend", "B", "gradient: autodiff", "by hand", "price"]
AUTODIFF_HEADER += ["training step: autodiff", "by hand", "price"]
AUTODIFF_CAPTION = (
    "µs per time step at T=1000, medians. *By hand*: the same backend with its backward "
    "pass written in the framework (`jax.custom_vjp`, `tf.custom_gradient`, "
    "`torch.autograd.Function`): one reverse loop carrying only the feedback's gradient, "
    "each weight's gradient one product over all steps after it. *Price*: autodiff over by "
    "hand, what the framework's own differentiation costs (below 1: it is the faster)."
)


ON_DEVICES = re.compile(r"^(?P<variant>.+) on (?P<count>\d+) devices$")
"""A data-parallel variant's name (``bench.harness.on_devices``): its variant and count."""


def devices_rows(pivot: Pivot) -> list[list[str]]:
    """Per variant on the devices axis: its training step on one device (its own row) and on
    N, at the shapes it ran, and their ratio (above 1: the split costs more than it gains)."""
    rows = []
    for name in pivot.named("devices"):
        found = ON_DEVICES.match(name)
        if found is None:
            continue
        for (_, operation, batch, steps), result in pivot.results.items():
            if result.variant != name or operation != "train_step":
                continue
            one = pivot.figure((found["variant"], operation, batch, steps))
            many = pivot.figure((name, operation, batch, steps))
            ratio = many / one if many is not None and one else None
            cells = [_fmt(one), _fmt(many), _fmt(ratio) + ("×" if ratio else "")]
            rows.append([found["variant"], found["count"], str(batch), str(steps), *cells])
    return rows


DEVICES_HEADER = ["variant", "devices", "B", "T", "1 device", "N devices", "N / 1"]
DEVICES_CAPTION = (
    "A training step's µs per time step, medians: on one device (the variant's own row) and "
    "with each mini-batch split over N devices of one process (`create(..., devices=N)`, the "
    "framework's own engine averaging the gradients). This machine has {cores} cores and no "
    "accelerator: its N devices are virtual CPU devices sharing those cores, so the ratio "
    "measures what the engine costs (the split, the all-reduce of the gradients, a program "
    "per device), not a speed-up. On a machine with N accelerators the same command runs "
    "them and measures the speed-up."
)


def detail_rows(pivot: Pivot) -> list[list[str]]:
    """Every measurement: µs/step with its IQR, throughput, ratio, first call, memory, and
    its note with why it is flagged, if it is."""
    rows, doubted = [], flags(pivot)
    for key, r in pivot.results.items():
        label = [r.variant, LABELS[r.operation], str(r.batch), str(r.steps)]
        first = _fmt(r.first_call_s, 3)
        if r.median_s is None:
            why = r.unsupported or r.error or ""
            rows.append([*label, "—", "—", "—", "—", first, "", "", why])
            continue
        timing = [_fmt(r.us_per_step), _fmt(r.iqr_us_per_step, 2), f"{r.sequence_steps_per_s:.3g}"]
        notes = "; ".join(filter(None, [r.note, *doubted.get(key, [])]))
        memory = [str(r.samples), _fmt(r.peak_rss_mb, 4), notes]
        rows.append([*label, *timing, _fmt(pivot.floor_ratio(key)), first, *memory])
    return rows


DETAIL_HEADER = ["variant", "operation", "B", "T", "µs/step (median)", "IQR µs/step"]
DETAIL_HEADER += ["sequence-steps/s", "×floor", "first call s", "samples", "peak MB", "note"]
LINES = {
    "floor": "-",
    "check": "--",
    "compiled": "-",
    "by_hand": "--",
    "textbook": "-.",
    "baseline": ":",
}
COLOURS = {"floor": "black", "simd_floor": "darkgray", "matrix_floor": "gray", "check": "dimgray"}
"""The floors and the check in greys; every other variant gets a colour of its own."""


Panel = dict[str, list[tuple[int, float]]]
"""variant -> its (T or B, figure) points."""


def scaling_panels(pivot: Pivot, by_steps: bool, value: int) -> dict[str, Panel]:
    """operation -> its panel, for predict and a training step: µs per step against T at
    B = ``value`` (``by_steps``), or throughput against B at T = ``value``. A panel where no
    variant has two points says nothing about scaling and is left out."""
    panels: dict[str, Panel] = {}
    for operation in ("predict", "train_step"):
        lines: Panel = {}
        for (name, op, b, t), r in pivot.results.items():
            figure = r.us_per_step if by_steps else r.sequence_steps_per_s
            if op == operation and (b if by_steps else t) == value and figure is not None:
                lines.setdefault(name, []).append((t if by_steps else b, figure))
        if any(len(points) > 1 for points in lines.values()):
            panels[operation] = lines
    return panels


def _scaling_plot(pivot: Pivot, by_steps: bool, value: int, path: Path) -> Path | None:
    """``scaling_panels`` side by side, or ``None`` where there is none."""
    import matplotlib
    import matplotlib.pyplot as plt

    panels = scaling_panels(pivot, by_steps, value)
    if not panels:
        return None
    tab10 = matplotlib.colormaps["tab10"]
    palette = itertools.cycle(tab10(i) for i in range(10) if i != 7)  # its grey is the check's
    colours = {n: COLOURS.get(role) or next(palette) for n, role in pivot.roles.items()}
    size = (13 if len(panels) > 1 else 8, 4.8)
    figure, axes = plt.subplots(1, len(panels), figsize=size, sharey=True, layout="constrained")
    axes = np.atleast_1d(axes)
    for axis, (operation, lines) in zip(axes, panels.items(), strict=True):
        for name, points in lines.items():
            style = {"color": colours[name], "linestyle": LINES.get(pivot.roles[name], "-")}
            axis.plot(*zip(*sorted(points), strict=True), marker="o", label=name, **style)
        title = f"{LABELS[operation]}, {'B' if by_steps else 'T'}={value}"
        if pivot.model != DEFAULT_MODEL:
            title += f", model {pivot.model}"
        axis.set(xscale="log", yscale="log", title=title)
        axis.set_xlabel("T (time steps)" if by_steps else "B (sequences per call)")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs per time step (median)" if by_steps else "sequence-steps per second")
    handles = {h.get_label(): h for axis in axes for h in axis.get_lines()}
    figure.legend(handles.values(), handles.keys(), loc="outside right center", fontsize=8)
    return _save(figure, path)


def _wide_steps(pivot: Pivot) -> int:
    """The T of the throughput plot: T=1000, where every variant runs, if measured at several
    B; else the T with the most B, the longest of those."""
    batches_at: dict[int, set[int]] = {}
    for _, _, b, t in pivot.results:
        batches_at.setdefault(t, set()).add(b)
    if len(batches_at.get(BATCHED_SHAPE[1], ())) >= 2:
        return BATCHED_SHAPE[1]
    return max(batches_at, key=lambda t: (len(batches_at[t]), t), default=0)


def first_call_figure(pivot: Pivot) -> Any:
    """Each operation's first call per variant as a point on a log axis, labelled with the
    shape it compiled (``Pivot.first_calls``): a matplotlib figure, or ``None``."""
    import matplotlib.pyplot as plt

    compiles = pivot.first_calls()
    if not compiles:
        return None
    names = list(dict.fromkeys(name for name, _ in compiles))
    figure, axis = plt.subplots(figsize=(10, 0.45 * len(names) + 1.5), layout="constrained")
    markers = dict(zip(OPERATIONS, "osD", strict=True))
    for index, operation in enumerate(OPERATIONS):
        found = [
            (row, *compiles[name, operation])
            for row, name in enumerate(names)
            if (name, operation) in compiles
        ]
        if not found:
            continue
        at = [row + (index - 1) * 0.22 for row, _, _ in found]
        seconds = [s for _, s, _ in found]
        axis.scatter(seconds, at, marker=markers[operation], label=LABELS[operation])
        for y, s, (b, t) in zip(at, seconds, (shape for *_, shape in found), strict=True):
            axis.annotate(
                f"B={b}, T={t}", (s, y), xytext=(4, -3), textcoords="offset points", fontsize=6
            )
    axis.set_yticks(range(len(names)), names)
    axis.invert_yaxis()
    title = "first call of each operation in a fresh process (trace and compile), at its shape"
    axis.set(xscale="log", xlabel="seconds", title=title)
    axis.grid(True, axis="x", which="both", alpha=0.3)
    axis.legend(fontsize=8)
    return figure


def plots(pivot: Pivot, out: Path, suffix: str = "") -> list[Path]:
    """Time per step against T (B=1), throughput against B (``_wide_steps``) and each
    operation's first call per variant, as PNGs; those with nothing to draw are left out."""
    import matplotlib

    matplotlib.use("Agg")
    drawn = [
        _scaling_plot(pivot, True, 1, out / f"step_time_vs_T{suffix}.png"),
        _scaling_plot(pivot, False, _wide_steps(pivot), out / f"throughput_vs_B{suffix}.png"),
    ]
    if (figure := first_call_figure(pivot)) is not None:
        drawn.append(_save(figure, out / f"first_call{suffix}.png"))
    return [path for path in drawn if path is not None]


def _save(figure: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


ROLES = {
    "floor": "scalar loops; a ×floor divides by the fastest floor at its shape",
    "simd_floor": "the loops vectorised over the batch",
    "matrix_floor": "matrix products, for models of wide layers",
    "check": "the check that the floor is one",
    "compiled": "the suite's backends, held to the targets",
    "by_hand": "a compiled backend with its backward pass written by hand, beside its "
    "autodiff twin in the price of autodiff",
    "textbook": "the speed-up targets are measured against it",
    "devices": "a compiled backend's training step split over N devices, beside its own",
    "baseline": "for comparison",
}
HEAD = """\
# FRAE benchmark

Run {run.started}, `{run.command}`, {wall} s in all; grid (B, T: operations): {grid}.

## Machine and versions

- {m[processor]}, {m[cpu_count]} CPUs ({m[affinity]} usable), {m[platform]}, Python {m[python]}
- {versions}
- C compiler: {compiler}
- thread variables: {thread_variables}{threads}

## How it was measured

- Each variant runs in a fresh process, one after another. Per operation and input shape, on a
  fresh model: the **first call** (trace and compile; for the training step `fit(x, epochs=1)`),
  one untimed warm-up call, then calls timed one by one until at least {s[repeats]} and
  {s[min_time_s]} s (at most {s[max_samples]}; at least 3 once {s[budget_s]} s have passed; one
  timed call, no warm-up, where the first call took over {s[long_call_s]} s, as the note says).
  Reported: the **median** and the **interquartile range**. Every backend returns NumPy, so the
  work is finished when the clock stops.
- **training step** = `fit(x, epochs={s[train_steps]})` / {s[train_steps]} (`fit(x, epochs=1)` where
  the warm-up's step took over {s[long_step_s]} s, as the note says): forward, BPTT and one
  Adam update on the whole batch, through the public `fit` (its loss is read back every step).
- **µs/step**: call time / T, for the whole batch; **sequence-steps/s**: B·T / call time;
  **×floor**: over the floor's figure for the same operation and shape (below 1: faster; at
  B > 1 the SIMD floor's).
- **peak MB**: the peak resident memory of the variant's process after the measurement, its
  imports and every shape before included (`getrusage` `ru_maxrss`; on Linux `VmHWM`, the same
  for this process image alone: Linux carries the parent's `ru_maxrss` into the child).
  **import s**: importing the backend and its framework in a fresh process, after NumPy and
  the core.
- Every **×floor** divides by the fastest of the native floors measured for the same
  operation, model and shape: the tightest bound the run has. The floors, each the same
  forward and back-propagation through time without a framework, one thread:
  - the **scalar floor** ({floor}): plain loops compiled by Numba (float32, fastmath off, batch
    innermost, no allocation in the loop); the **check** is its forward in plain C. Both
    evaluate exp one lane at a time;
  - the **SIMD floor** ({simd}): the same loops in C vectorised over the batch and compiled
    for this machine with `-O3 -march=native -ffast-math`, which allows it what the
    frameworks do not: sums reassociated, approximate vector exp and tanh (glibc's libmvec),
    no NaN or infinity semantics;
  - the **matrix floor** ({matrix}): each layer a matrix product in C (same flags), for
    models of wide layers, where loops one multiply-add at a time are no limit.
- **Capped** to {cap}, because they interpret every time step: {slow}. Skipped or failed
  variants are listed below with why.
- Roles: {roles}.
"""
"""The report's head: the run, the machine and how it was measured."""


TARGETS_ORIGIN = (
    "Where the targets come from: the **floor** is the limit, the same model compiled "
    "natively without a framework (the fastest of the floors at each shape); a "
    "compiled backend within a small factor of it (3× for predict, 1.5× for the best; a "
    "training step 6×, or 3× for the best, over the floor's forward + BPTT, which has no "
    "optimizer) pays little for its framework. The **textbook fix**, the same "
    "`tf.while_loop` in graph mode without XLA (the answer the original question got), sets "
    "the speed-ups: compiling that loop made it about a thousand times faster per step at "
    "B = 1, of which 300× is asked. **Batching** (8× the throughput at B = 256 over B = 1) "
    "asks a backend to use the lanes a batch offers; **linear in T** (1.15×) that a step's "
    "cost not grow with the sequence (no T-long copy in the backward loop). The limits are "
    "this benchmark's own, set from those floors and that fix, not a framework's promise."
)


STATE_TARGETS_ORIGIN = (
    "Where the state-feedback model's targets come from: the **floor** runs the GRU too "
    "(`numba_floor`, and `simd_floor`, which vectorises the GRU over its 3H columns at B = 1 "
    "and over the batch above; the matrix floor and the C check have no GRU and are left "
    "out), so a ratio says what a framework pays beyond the GRU's own arithmetic. The limits "
    "come from this benchmark's runs of the model with H = 8 on a 2-core machine "
    '(docs/performance.md, "State feedback: the GRU\'s cost"): at B = 1 the best predict was '
    "at the floor (within 10%: 1.25× asked) and the best training step 1.4–1.9× (2.5× asked); "
    "at B = 256 the best predict 1.35–1.7× (2× asked) and the best training step 3.1–3.6× "
    "(4× asked, where the output model asks 3×: the frameworks' GRU backward at B = 256 "
    "costs them 2.5× what it costs the floor). The targets over every compiled backend keep "
    "the output model's limits (3× predict, 6× training), which the state model's slowest "
    "backends miss as the output model's do."
)


def model_rows(pivot: Pivot) -> tuple[list[str], list[list[str]]]:
    """For a model other than the run's first: per variant, predict and a training step at
    every (B, T) measured, µs per step (× floor); the header names each shape."""
    shapes = sorted({(k[2], k[3]) for k in pivot.results})
    columns = [(op, b, t) for b, t in shapes for op in ("predict", "train_step")]
    doubted, rows = flags(pivot), []
    for name in dict.fromkeys(k[0] for k in pivot.results):
        keys = [(name, op, b, t) for op, b, t in columns]
        cells = [_with_ratio(pivot.figure(k), pivot.floor_ratio(k)) for k in keys]
        rows.append(
            [name, *(c + (FLAG if k in doubted else "") for c, k in zip(cells, keys, strict=True))]
        )
    one_t = len({t for _, t in shapes}) == 1  # then the caption says T
    header = [
        "variant",
        *(f"{LABELS[op]} B={b}" + ("" if one_t else f" T={t}") for op, b, t in columns),
    ]
    return header, rows


def measured_targets(pivot: Pivot) -> list[Outcome]:
    """For a model beside the run's first: the targets over the floor that its measurements
    judge. Batching is not judged there: at width 256 a step is enough work that the floor
    itself gains 1.5×, not 8×, from B = 1 to 256."""
    judged = [judge(target, pivot) for target in targets_of(pivot) if target.over == "floor"]
    return [outcome for outcome in judged if outcome.verdict != "not measured"]


def markdown(records: list[Record], images: list[Path], preamble: str = "") -> str:
    """The whole report; ``preamble`` (Markdown) goes before the summary."""
    pivot = Pivot.of(records)
    run = pivot.run
    if run is None:
        raise ValueError("records must begin with the run's record (kind 'run'), got none")
    # runs from before one-step samples had no such setting: never one step
    m, s, (batch, steps) = run.machine, {"long_step_s": "∞", **run.settings}, summary_shape(pivot)
    threads = [f"\n- {n}: threads {f.threads}" for n, f in pivot.facts.items() if f.threads]
    roles = [f"**{r}** ({why}): {', '.join(pivot.named(r)) or 'none'}" for r, why in ROLES.items()]
    head = HEAD.format(
        run=run,
        wall=_fmt(pivot.wall_s, 3),
        grid="; ".join(_point(point) for point in run.grid),
        m=m,
        versions=", ".join(f"{k} {v}" for k, v in m["versions"].items()),
        compiler=m["c_compiler"] or "none",
        thread_variables=m["thread_variables"] or "none set (framework defaults)",
        threads="".join(threads),
        s=s,
        floor=", ".join(f"`{name}`" for name in pivot.named("floor")) or "none in this run",
        simd=", ".join(f"`{name}`" for name in pivot.named("simd_floor")) or "none in this run",
        matrix=", ".join(f"`{n}`" for n in pivot.named("matrix_floor")) or "none in this run",
        cap=f"T ≤ {s['slow_max_steps']}" + (f", B ≤ {b}" if (b := s["slow_max_batch"]) else ""),
        slow=", ".join(n for n, listing in run.variants.items() if listing.slow) or "none",
        roles="; ".join(roles),
    )
    judged = [[t.statement, t.measured, t.verdict] for t in targets(pivot)]
    lines = [head, *([preamble.rstrip(), ""] if preamble else [])]
    lines += [f"## Summary at B={batch}, T={steps}{_on(pivot)}", "", SUMMARY_CAPTION + ".", ""]
    lines += [_table(SUMMARY_HEADER, summary_rows(pivot), markdown=True), "", "## Targets", ""]
    lines += [STATE_TARGETS_ORIGIN if pivot.state_feedback else TARGETS_ORIGIN, ""]
    lines += [_table(["target", "measured (ratios)", "result"], judged, markdown=True)]
    lines += ["", "## Cost per call and per step (B=1)", ""]
    if costs := call_cost_rows(pivot):
        lines += [CALL_COST_CAPTION, "", _table(CALL_COST_HEADER, costs, markdown=True)]
    else:
        lines += [unsplit_reason(pivot) or "No variant was timed at B=1."]
    if price := autodiff_rows(pivot):
        lines += ["", "## The price of autodiff (T=1000)", "", AUTODIFF_CAPTION, ""]
        lines += [_table(AUTODIFF_HEADER, price, markdown=True)]
    if on_devices := devices_rows(pivot):
        lines += ["", "## Data-parallel training: the devices axis", ""]
        lines += [DEVICES_CAPTION.format(cores=m.get("cpu_count", "?")), ""]
        lines += [_table(DEVICES_HEADER, on_devices, markdown=True)]
    for other in models_of(records)[1:]:
        lines += ["", *_model_section(Pivot.of(records, other), markdown=True)]
    if doubted := flag_rows(pivot):
        lines += ["", "## Readings to doubt", "", FLAG_CAPTION, ""]
        lines += [_table(FLAG_HEADER, doubted, markdown=True)]
    lines += ["", "## Variants", ""]
    for name, listing in run.variants.items():
        fact, wall = pivot.facts.get(name, VariantRecord(name)), pivot.walls.get(name)
        status = f", {wall:.0f} s" if wall is not None else ""
        status += f" — **skipped**: {fact.skipped}" if fact.skipped else ""
        status += f" — **failed**: {fact.error}" if fact.error else ""
        lines.append(f"- `{name}` ({listing.role}): {listing.about}; `{listing.backend}`{status}")
    lines += ["", "## Every measurement", ""]
    lines += [_table(DETAIL_HEADER, detail_rows(pivot), markdown=True), "", "## Plots", ""]
    lines += [f"![{path.stem}]({path.name})" for path in images]
    return "\n".join(lines) + "\n"


def _point(point: tuple[str, int, int, tuple[str, ...]]) -> str:
    model, b, t, operations = point
    return (
        f"({'' if model == DEFAULT_MODEL else model + ', '}B={b}, T={t}: {', '.join(operations)})"
    )


def _on(pivot: Pivot) -> str:
    """ ", model LABEL" for a model other than the default."""
    return "" if pivot.model == DEFAULT_MODEL else f", model {pivot.model}"


def _model_section(pivot: Pivot, markdown: bool) -> list[str]:
    """A model measured beside the run's first: its config, its table and its targets."""
    config = pivot.run.models.get(pivot.model, {}) if pivot.run else {}
    header, rows = model_rows(pivot)
    fields = ", ".join(f"{k}={v}" for k, v in config.items())
    steps = sorted({k[3] for k in pivot.results})
    at = f"at T={steps[0]}, " if len(steps) == 1 else ""
    caption = f"µs per time step {at}median (× the floor's same operation); {fields}"
    title = f"## Model {pivot.model}" if markdown else f"model {pivot.model}:"
    captions = [caption] if markdown else textwrap.wrap(caption, WIDTH)
    lines = [title, "", *captions, "", _table(header, rows, markdown)]
    judged = measured_targets(pivot)
    if markdown:
        rows = [[t.statement, t.measured, t.verdict] for t in judged]
        lines += ["", _table(["target", "measured (ratios)", "result"], rows, markdown=True)]
    else:
        lines += ["", *_target_lines(judged)]
    return lines


def _target_lines(judged: list[Outcome]) -> list[str]:
    """Targets for the terminal, wrapped to ``WIDTH``; those not measured counted in one line."""
    lines, unmeasured = [], sum(t.verdict == "not measured" for t in judged)
    for target in (t for t in judged if t.verdict != "not measured"):
        lines += textwrap.wrap(
            target.statement, WIDTH, initial_indent="  ", subsequent_indent="    "
        )
        lines += textwrap.wrap(
            target.measured, WIDTH, initial_indent="    ", subsequent_indent="    "
        )
        lines.append(f"    -> {target.verdict}")
    if unmeasured:
        lines.append(f"  ({unmeasured} more not measured in this run: report.md lists them)")
    return lines


WIDTH = 100
"""The terminal's columns; the Markdown report has the details."""
TERMINAL_FLAGS = 8
"""Readings to doubt the terminal names; the report lists every one."""
TERMINAL_SUMMARY = [0, 2, 3, 4, 5]
"""The summary's columns in the terminal: variant, the three operations, compile."""


def summary(records: list[Record]) -> str:
    """The summary table, the call-cost split, the targets, the other models and the
    readings to doubt, for the terminal (``WIDTH`` columns)."""
    pivot = Pivot.of(records)
    batch, steps = summary_shape(pivot)
    caption = f"B={batch}, T={steps}{_on(pivot)}: {SUMMARY_CAPTION}"
    lines = [*textwrap.wrap(caption, WIDTH), ""]
    rows = [[row[i] for i in TERMINAL_SUMMARY] for row in summary_rows(pivot)]
    header = [*SUMMARY_HEADER[:1], *SUMMARY_HEADER[2:5], "compile s"]
    lines += [_table(header, rows, markdown=False)]
    if costs := call_cost_rows(pivot):
        lines += [
            "",
            "B=1: each call fitted as µs per call + µs per step × T (T fitted: report.md)",
        ]
        header = [h for i, h in enumerate(CALL_COST_HEADER) if i != 2]
        lines += ["", _table(header, [row[:2] + row[3:] for row in costs], markdown=False)]
    elif reason := unsplit_reason(pivot):
        lines += ["", *textwrap.wrap(reason, WIDTH)]
    lines += ["", "targets (where they come from: report.md):", *_target_lines(targets(pivot))]
    if on_devices := devices_rows(pivot):
        lines += ["", "data-parallel training step, µs per step (on a CPU: the engine's cost):"]
        lines += ["", _table(DEVICES_HEADER, on_devices, markdown=False)]
    for other in models_of(records)[1:]:
        lines += ["", *_model_section(Pivot.of(records, other), markdown=False)]
    if doubted := flag_rows(pivot):
        shown = [f"{r[0]} {r[1]} B={r[2]} T={r[3]}" for r in doubted[:TERMINAL_FLAGS]]
        more = len(doubted) - len(shown)
        lines += ["", f"{len(doubted)} readings to doubt ({FLAG} in the tables; why: report.md):"]
        lines += textwrap.wrap(
            ", ".join(shown) + (f" and {more} more" if more else ""),
            WIDTH,
            initial_indent="  ",
            subsequent_indent="  ",
        )
    return "\n".join(lines)


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)


def write(records: Iterable[Record], out: Path, preamble: str = "") -> str:
    """Write ``report.md`` (with ``preamble``, Markdown, before the summary) and the plots
    of every model into ``out``; return the summary for the terminal."""
    records = list(records)
    models = models_of(records)
    images = plots(Pivot.of(records), out)
    for other in models[1:]:
        images += plots(Pivot.of(records, other), out, f"_{_slug(other)}")
    (out / "report.md").write_text(markdown(records, images, preamble))
    return summary(records)
