"""How a run is judged by the targets (their types: ``bench.reporting.targets``; each
section's own: ``bench.reporting.sections``): each target's ratios from one ``Pivot``
(``bench.reporting.analysis``), each with its spread over its calls and rounds
(``bench.comparing.pairs``; a ratio to the floor from the calls taken in turn with the
floors), the worst or the best of them held to its limit, and the verdict: met or missed
where the whole spread is on one side of the limit, within the spread where it crosses it,
met by those measured, or not measured."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bench.comparing.pairs import Spread
from bench.records import OVER_FLOOR, Shape
from bench.reporting.analysis import THROUGHPUT, Pivot
from bench.reporting.targets import (
    InMicroseconds,
    OverFloor,
    OverItself,
    OverRole,
    OverRoofline,
    Target,
)
from bench.roofline import roofline_us

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


def in_turn(target: Target) -> bool:
    """Whether ``target``'s ratio is over the floor's operation that the floors measure in
    turn with each variant (``bench.records.OVER_FLOOR``): then it is read from the pairs."""
    if not isinstance(target.over, OverFloor):
        return False
    over = target.over.operation or target.operation
    return over == OVER_FLOOR.get(target.operation, target.operation)


def ratio(target: Target, pivot: Pivot, name: str, shape: Shape) -> Spread | None:
    """Variant ``name``'s ratio at ``shape`` with its spread: from its calls in turn with the
    floors where it has them (``bench.comparing.pairs``), else its figure's spread over the
    divisor."""
    key = target.key(pivot, name, shape)
    if in_turn(target) and (found := pivot.paired(key)) is not None:
        return found
    base, value = divisor(target, pivot, name, shape), pivot.figure(key, target.metric)
    if base is None or value is None:
        return None
    own = pivot.spread(key)
    if own is None:  # no calls kept: the median alone
        return Spread(value, value, value).over(base)
    if target.metric == THROUGHPUT:  # B·T per second: the inverse of the time per step
        scale = shape.batch * 1e6
        own = Spread(scale / own.value, scale / own.high, scale / own.low, own.rounds)
    return own.over(base)


def ratios(target: Target, pivot: Pivot) -> dict[str, Spread]:
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
            if (value := ratio(target, pivot, name, shape)) is not None:
                found[name if target.shape else f"B={shape.batch}, T={shape.steps}"] = value
    return found


def verdict(target: Target, values: dict[str, Spread], name: str) -> tuple[str, bool | None]:
    """Met or missed where the spread of the figure judged (``name``'s) is on one side of the
    limit, and by how much; else within the spread. For a target over every variant, the
    worst judged: met only where every spread is within the limit; for the best, met where
    one is."""
    limit, value = target.limit, values[name].value
    ends = [(v.high, v.low) if target.at_most else (v.low, v.high) for v in values.values()]
    surely = [within for within, _ in ends]
    maybe = [beyond for _, beyond in ends]
    pick = (max if target.at_most else min) if target.every else (min if target.at_most else max)
    holds = (lambda v: v <= limit) if target.at_most else (lambda v: v >= limit)
    if holds(pick(surely)):
        return f"met, {max(value / limit, limit / value):.2f}× to spare", True
    if not holds(pick(maybe)):
        return f"missed by {max(value / limit, limit / value):.2f}×", False
    low, high = values[name].low, values[name].high
    return f"within the spread: {low:.3g}–{high:.3g} against {limit:g}", None


def judge(target: Target, pivot: Pivot) -> Outcome:
    """``target`` over its ratios: the worst of them (``every``) or the best, each with its
    spread (``verdict``); with variants of its roles not measured, a target over every one
    is only "met by those measured"."""
    values, statement = ratios(target, pivot), target.text()
    if not values:
        return Outcome(statement, "not measured in this run", NOT_MEASURED, None)
    expected = members(target, pivot) if target.every and target.shape else []
    missing = [name for name in expected if name not in values]
    by_value = {n: v.value for n, v in values.items()}
    name = (max if target.at_most == target.every else min)(by_value, key=by_value.__getitem__)
    said, met = verdict(target, values, name)
    unit = " µs" if isinstance(target.over, InMicroseconds) else "×"
    shown = ", ".join(f"{n} {v.shown(unit)}" for n, v in values.items())
    if missing:
        shown += f"; not measured: {', '.join(missing)}"
        if target.every and met:
            said, met = said.replace("met,", "met by those measured,"), None
    subject = "worst" if target.every else "best"
    return Outcome(statement, f"{shown} ({subject}: {name})", said, met)


def targets(pivot: Pivot, table: tuple[Target, ...]) -> list[Outcome]:
    """Every target of ``table``, judged from one run."""
    return [judge(target, pivot) for target in table]


TARGET_HEADER = ["target", "measured (ratios)", "result"]


def target_rows(judged: Iterable[Outcome]) -> list[list[str]]:
    return [[t.statement, t.measured, t.verdict] for t in judged]
