"""How a run is judged by the targets (``bench.targets``): each target's ratios from one
``Pivot`` (``bench.analysis``), the worst or the best of them held to its limit, and the
verdict: met, missed, met by those measured, or not measured."""

from __future__ import annotations

from dataclasses import dataclass

from bench.analysis import Pivot
from bench.records import Shape
from bench.roofline import roofline_us
from bench.targets import (
    ROOFLINE_TARGETS,
    InMicroseconds,
    OverFloor,
    OverItself,
    OverRole,
    OverRoofline,
    Target,
    targets_of,
)

NOT_MEASURED = "not measured"
"""The verdict on a target this run did not measure."""


@dataclass(frozen=True)
class Outcome:
    """A target judged: its statement, the figures measured and the verdict; ``met`` is
    ``None`` where it was not measured, or met only by those measured."""

    statement: str
    measured: str
    verdict: str
    met: bool | None

    @property
    def judged(self) -> bool:
        return self.verdict != NOT_MEASURED


def members(target: Target, pivot: Pivot) -> list[str]:
    """The variants of the target's roles (its one variant, if it names one)."""
    return [
        name
        for name, role in pivot.roles.items()
        if role in target.roles and target.variant in (None, name)
    ]


def divisor(target: Target, pivot: Pivot, name: str, shape: Shape) -> float | None:
    """What the ratio of variant ``name`` at ``shape`` divides by (``Target.over``)."""
    match target.over:
        case OverFloor(operation):
            over = pivot.key(name, operation or target.operation, shape, target.side, target.chunk)
            return pivot.floor_of(over)
        case OverRole(role):
            first = pivot.named(role)[:1]
            key = target.key(pivot, first[0], shape) if first else None
            return None if key is None else pivot.figure(key, target.metric)
        case OverItself(over_shape):
            return pivot.figure(target.key(pivot, name, over_shape), target.metric)
        case InMicroseconds():
            return 1.0
        case OverRoofline(model):
            on_model = model is None or model == pivot.model
            return roofline_us(pivot, target.key(pivot, name, shape)) if on_model else None


def ratios(target: Target, pivot: Pivot) -> dict[str, float]:
    """The target's ratio for each variant of its roles measured (by shape, where the target
    is judged at every shape)."""
    names, operation = members(target, pivot), target.operation
    if target.fastest and target.shape:
        shape = target.shape
        timed = {
            n: v for n in names if (v := pivot.figure(target.key(pivot, n, shape))) is not None
        }
        names = sorted(timed, key=timed.__getitem__)[:1]
    found = {}
    for name in names:
        measured = [k.shape for k in pivot.results if (k.variant, k.operation) == (name, operation)]
        for shape in [target.shape] if target.shape else measured:
            value = pivot.figure(target.key(pivot, name, shape), target.metric)
            base = divisor(target, pivot, name, shape)
            if value is not None and base is not None:
                found[name if target.shape else f"B={shape.batch}, T={shape.steps}"] = value / base
    return found


def judge(target: Target, pivot: Pivot) -> Outcome:
    """``target`` over its ratios: the worst of them (``every``) or the best; with variants
    of its roles not measured, a target over every one is only "met by those measured"."""
    values, statement = ratios(target, pivot), target.text()
    if not values:
        return Outcome(statement, "not measured in this run", NOT_MEASURED, None)
    expected = members(target, pivot) if target.every and target.shape else []
    missing = [name for name in expected if name not in values]
    name = (max if target.at_most == target.every else min)(values, key=values.__getitem__)
    value, limit = values[name], target.limit
    met: bool | None = value <= limit if target.at_most else value >= limit
    factor = max(value / limit, limit / value)
    verdict = f"met, {factor:.2f}× to spare" if met else f"missed by {factor:.2f}×"
    unit = " µs" if isinstance(target.over, InMicroseconds) else "×"
    shown = ", ".join(f"{n} {v:.3g}{unit}" for n, v in values.items())
    if missing:
        shown += f"; not measured: {', '.join(missing)}"
        if target.every and met:
            verdict, met = verdict.replace("met,", "met by those measured,"), None
    subject = "worst" if target.every else "best"
    return Outcome(statement, f"{shown} ({subject}: {name})", verdict, met)


def targets(pivot: Pivot, table: tuple[Target, ...] = ()) -> list[Outcome]:
    """Every target of ``table`` (none given: the model's, ``targets_of``), judged from one run."""
    return [judge(target, pivot) for target in table or targets_of(pivot)]


def measured_targets(pivot: Pivot) -> list[Outcome]:
    """For a model beside the run's first: the targets over the floor and the roofline's that
    its measurements judge (not batching: at width 256 the floor itself gains 1.5×, not 8×;
    nor a framework's own limit, set for the default model)."""
    judged = [
        judge(t, pivot)
        for t in targets_of(pivot)
        if isinstance(t.over, OverFloor) and t.variant is None
    ]
    return [outcome for outcome in judged + roofline_targets(pivot) if outcome.judged]


def roofline_targets(pivot: Pivot) -> list[Outcome]:
    """The roofline's targets judged, where the pivot holds the model they name."""
    return [
        judge(target, pivot)
        for target in ROOFLINE_TARGETS
        if not isinstance(target.over, OverRoofline) or target.over.model in (None, pivot.model)
    ]
