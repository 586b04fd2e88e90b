"""Each call split into what it costs whatever its length and what each time step adds,
at B = 1."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bench.records import (
    STREAM,
)
from bench.reporting.analysis import (
    LABELS,
    TARGET_SHAPE,
    Pivot,
    fit_line,
)
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import (
    UNRESOLVED,
    Rows,
    fmt,
    with_ratio,
)

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


def call_costs(pivot: Pivot, batch: int = TARGET_SHAPE.batch) -> list[CallCost]:
    """Lines (``fit_line``) through each (variant, operation)'s median call time against T at
    ``batch``, where at least ``MIN_FIT_STEPS`` T were measured: the intercept is what a call
    costs whatever its length, the slope the loop's own cost per time step. A ratio to the
    floor at one T mixes the two; the split says which one a backend would have to shrink."""
    times: dict[tuple[str, str], dict[int, float]] = {}
    for key, r in pivot.results.items():
        if key.batch == batch and r.median_s is not None and key.operation != STREAM:
            times.setdefault((key.variant, key.operation), {})[key.steps] = r.median_s
    costs = []
    for (name, operation), by_steps in times.items():
        if len(by_steps) >= MIN_FIT_STEPS:
            steps, slope, intercept, residual = fit_line(by_steps)
            per_call, per_step = intercept * 1e6, slope * 1e6
            costs.append(CallCost(name, operation, batch, steps, per_call, per_step, residual))
    return costs


def timed_steps(pivot: Pivot, batch: int = TARGET_SHAPE.batch) -> list[int]:
    """The T timed at ``batch`` by any variant (the stream aside), sorted."""
    timed = pivot.results.items()
    return sorted({k.steps for k, r in timed if k.batch == batch and r.median_s and not k.side})


def floor_per_step(costs: Iterable[CallCost], pivot: Pivot) -> dict[str, float]:
    """operation -> the floors' least per-step cost among the lines that fit."""
    floors, floor = pivot.floors(), dict[str, float]()
    for c in costs:
        if c.variant in floors and c.fits:
            floor[c.operation] = min(c.per_step_us, floor.get(c.operation, c.per_step_us))
    return floor


CALL_COST_HEADER = ["variant", "operation", "T fitted", "µs per call", "µs per step (× floor)"]


CALL_COST_CAPTION = (
    "Each call's median time at B=1 fitted as per call + per step × T over the T measured "
    f"(least squares on relative errors; at least {MIN_FIT_STEPS} T, and no split where the "
    f"line misses a measurement by over {100 * FIT_TOLERANCE:.0f}%): the fixed cost of a call "
    "apart from the loop's cost per time step."
)


def call_cost_rows(pivot: Pivot) -> Rows:
    """One row per (variant, operation) measured at enough T: its split, or why there is none
    (the line does not fit, or the fixed cost is below what these T resolve)."""
    costs = call_costs(pivot)
    floor = floor_per_step(costs, pivot)
    rows = []
    for c in costs:
        steps = ", ".join(map(str, c.steps))
        if not c.fits:
            poor = f"poor fit ({100 * c.residual:.0f}% off)"
            rows.append([c.variant, LABELS[c.operation], steps, poor, "—"])
            continue
        base = floor.get(c.operation)
        per_step = with_ratio(c.per_step_us, c.per_step_us / base if base else None)
        per_call = fmt(c.per_call_us) if c.per_call_us >= 0 else UNRESOLVED
        rows.append([c.variant, LABELS[c.operation], steps, per_call, per_step])
    return rows


def unsplit_reason(pivot: Pivot, batch: int = TARGET_SHAPE.batch) -> str | None:
    """Why no call is split at ``batch``: fewer than ``MIN_FIT_STEPS`` T measured there."""
    steps = timed_steps(pivot, batch)
    if len(steps) >= MIN_FIT_STEPS:
        return None
    measured = ", ".join(map(str, steps)) or "none"
    return (
        f"Not split into per call and per step: not enough points (a line needs at least "
        f"{MIN_FIT_STEPS} T at B={batch}; this run measured T = {measured})."
    )


def sections(report: Report) -> list[Section]:
    """Each call split into per call and per step at B=1, or why it is not."""
    pivot = report.pivot
    title = "Cost per call and per step (B=1)"
    if rows := call_cost_rows(pivot):
        caption = "B=1: each call fitted as µs per call + µs per step × T (T fitted: report.md)"
        shown = Brief(caption=caption, columns=(0, 1, 3, 4))
        return [Section(title, CALL_COST_CAPTION, CALL_COST_HEADER, rows, brief=shown)]
    reason = unsplit_reason(pivot)
    brief = Brief(caption=reason) if reason else None
    return [Section(title, text=reason or "No variant was timed at B=1.", brief=brief)]
