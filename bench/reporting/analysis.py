"""What a run's records say, before any of it is written out: the pivot, the floors, the call
costs, the stream's costs and the readings to doubt. Every figure is read through one
``Pivot``, which finds the variants by their role and their listing, never by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from bench.comparing.pairs import Spread, figure_spread, paired
from bench.comparing.rounds import pooled
from bench.grid import TARGET_SHAPE
from bench.records import (
    BYPASSED,
    CODEC,
    CODER,
    DEFAULT_MODEL,
    STREAM,
    DoneRecord,
    EndRecord,
    Key,
    Listing,
    Record,
    ResultRecord,
    RunRecord,
    Shape,
    VariantRecord,
)
from bench.roles import FLOORS, Role


class FirstCall(NamedTuple):
    """The first call of an operation in a variant's process (which traces and compiles), at
    the first shape it ran."""

    seconds: float
    shape: Shape


LABELS = {
    "predict": "predict",
    "loss_and_grads": "loss_and_grads",
    "train_step": "train step",
    STREAM: "stream",
    CODEC: "codec",
    CODER: "coder alone",
    BYPASSED: "codec, coder bypassed",
}
"""Each operation as the tables name it."""


def label(operation: str, side: str | None = None, chunk: int | None = None) -> str:
    """A measurement's operation as the tables name it, with the stream's side and chunk
    length: "train step", "stream sender, chunk 10"."""
    named = LABELS.get(operation, operation)
    return named if side is None else f"{named} {side}, chunk {chunk}"


TIME, THROUGHPUT = "us_per_step", "sequence_steps_per_s"
"""The figures a target divides: µs per time step, sequence-steps per second."""


@dataclass
class Pivot:
    """One run's records, pivoted once: every measurement of ``model`` by ``Key``, and by
    variant its role, the run's listing of it, its facts and its worker's seconds, all in the
    order of the run."""

    results: dict[Key, ResultRecord] = field(default_factory=dict)
    roles: dict[str, Role] = field(default_factory=dict)
    listings: dict[str, Listing] = field(default_factory=dict)
    facts: dict[str, VariantRecord] = field(default_factory=dict)
    walls: dict[str, float] = field(default_factory=dict)
    run: RunRecord | None = None
    wall_s: float | None = None
    model: str = DEFAULT_MODEL
    rounds: dict[Key, list[ResultRecord]] = field(default_factory=dict)
    """Each measurement's rounds apart (``bench.comparing.rounds``), or its one record."""

    @classmethod
    def of(cls, records: Iterable[Record], model: str | None = None) -> Pivot:
        """The pivot of ``records``, in the order they were written, with the measurements
        of ``model`` (default: the run's first, ``models_of``)."""
        records = list(records)
        rounds: dict[Key, list[ResultRecord]] = {}
        for r in records:
            if isinstance(r, ResultRecord):
                rounds.setdefault(r.key, []).append(r)
        records = pooled(records)  # a run of several rounds: each measurement once
        pivot = cls(model=model or next(iter(models_of(records)), DEFAULT_MODEL), rounds=rounds)
        for r in records:
            match r:
                case RunRecord():
                    pivot.run, pivot.listings = r, dict(r.variants)
                    pivot.roles |= {name: Role(found.role) for name, found in r.variants.items()}
                case VariantRecord():
                    pivot.facts[r.variant] = r
                case ResultRecord() if r.model == pivot.model:
                    pivot.results[r.key] = r
                case DoneRecord():
                    pivot.walls[r.variant] = r.wall_s
                case EndRecord():
                    pivot.wall_s = r.wall_s
            if isinstance(r, VariantRecord | ResultRecord):
                pivot.roles.setdefault(r.variant, Role(r.role or Role.BASELINE))
        return pivot

    def named(self, role: Role) -> list[str]:
        """The variants of ``role``, in the order of the run."""
        return [name for name, found in self.roles.items() if found == role]

    def key(
        self,
        variant: str,
        operation: str,
        shape: Shape,
        side: str | None = None,
        chunk: int | None = None,
    ) -> Key:
        """Where ``variant`` measured ``operation`` at ``shape`` on the pivot's model."""
        return Key(variant, operation, self.model, *shape, side, chunk)

    def figure(self, key: Key, metric: str = TIME) -> float | None:
        """``metric`` of one measurement, if it was timed."""
        found = self.results.get(key)
        return None if found is None else getattr(found, metric)

    def floors(self) -> list[str]:
        """The variants of the floors' roles (``bench.roles.FLOORS``)."""
        return [name for role in FLOORS for name in self.named(role)]

    def floor_of(self, key: Key) -> float | None:
        """The fastest floor's µs per step where ``key`` was measured, whatever its variant:
        the tightest bound the run has."""
        figures = [self.figure(key.of(name)) for name in self.floors()]
        return min((f for f in figures if f is not None), default=None)

    @property
    def config(self) -> dict[str, Any]:
        """The ``FRAEConfig`` fields of the pivot's model, as the run recorded them."""
        return self.run.models.get(self.model, {}) if self.run else {}

    @property
    def on(self) -> str:
        """ ", model LABEL" for a model other than the default, as captions name it."""
        return "" if self.model == DEFAULT_MODEL else f", model {self.model}"

    @property
    def state_feedback(self) -> bool:
        """Whether the model feeds back its GRU's state (the contract's "State feedback")."""
        return self.config.get("feedback") == "state"

    def spread(self, key: Key) -> Spread | None:
        """µs per step of one measurement with its spread over its calls and rounds."""
        return figure_spread(self.rounds.get(key, []))

    def spread_or_median(self, key: Key) -> Spread | None:
        """``spread``, or the median alone where the measurement kept no calls (a file of
        format 1 upgraded, a test's made-up records); ``None`` where it was not timed."""
        if (found := self.spread(key)) is not None:
            return found
        value = self.figure(key)
        return None if value is None else Spread(value, value, value)

    def paired(self, key: Key) -> Spread | None:
        """One measurement over the floor from its calls in turn with the floors
        (``bench.comparing.pairs``); ``None`` where it was not timed in turn with one."""
        return paired(self.rounds.get(key, []), self.floors())

    def in_turn(self, key: Key, other: str) -> Spread | None:
        """One measurement over variant ``other``'s same one, from the calls they took in
        turn (``bench.measuring.turns``); ``None`` where they did not."""
        return paired(self.rounds.get(key, []), (other,))

    def floor_ratio(self, key: Key) -> float | None:
        """µs per step of a measurement over the floor's (``floor_of``)."""
        floor, value = self.floor_of(key), self.figure(key)
        return None if value is None or floor is None else value / floor

    def first_calls(self) -> dict[tuple[str, str], FirstCall]:
        """(variant, operation) -> its first call in the variant's process."""
        found: dict[tuple[str, str], FirstCall] = {}
        for key, r in self.results.items():
            if r.first_call_s is not None:
                found.setdefault((key.variant, key.operation), FirstCall(r.first_call_s, key.shape))
        return found

    def shapes(self) -> list[Shape]:
        """Every shape measured, sorted by B, then T."""
        return sorted({key.shape for key in self.results})

    def twins(self) -> Iterator[tuple[str, str]]:
        """(autodiff, by hand) for each variant written by hand beside its autodiff twin."""
        for name, listing in self.listings.items():
            if listing.twin_of is not None:
                yield listing.twin_of, name

    def defaults(self) -> Iterator[tuple[str, str]]:
        """(route, defaults) for each variant run beside a route it is compared with
        (``Variant.beside``: a framework's defaults)."""
        for name, listing in self.listings.items():
            if listing.beside is not None:
                yield listing.beside, name

    def on_devices(self) -> Iterator[tuple[str, str, int]]:
        """(on one device, on N, N) for each data-parallel variant."""
        for name in self.named(Role.DEVICES):
            listing = self.listings.get(name)
            if listing is not None and listing.of is not None and listing.devices is not None:
                yield listing.of, name, listing.devices


def models_of(records: Iterable[Record]) -> list[str]:
    """The labels of the models measured, in the order of the run's record, then of the
    measurements."""
    labels: list[str] = []
    for r in records:
        if isinstance(r, RunRecord):
            labels += r.models
        elif isinstance(r, ResultRecord):
            labels.append(r.model)
    return list(dict.fromkeys(labels))


def summary_shape(pivot: Pivot) -> Shape:
    """``TARGET_SHAPE`` if it was measured, else the smallest B at the longest T."""
    shapes = {key.shape for key, r in pivot.results.items() if r.median_s is not None}
    if TARGET_SHAPE in shapes or not shapes:
        return TARGET_SHAPE
    return min(shapes, key=lambda shape: (-shape.steps, shape.batch))


def fit_line(by_length: dict[int, float]) -> tuple[tuple[int, ...], float, float, float]:
    """(lengths, slope, intercept, largest relative residual) of the line through
    ``by_length``'s times, least squares on relative errors (weights 1/time: the short calls
    count as much as the long ones)."""
    lengths = np.array(sorted(by_length), dtype=float)
    times = np.array([by_length[int(n)] for n in lengths])
    slope, intercept = np.polyfit(lengths, times, 1, w=1 / times)
    residual = np.abs(slope * lengths + intercept - times) / times
    return tuple(int(n) for n in lengths), float(slope), float(intercept), float(residual.max())


SHARED_LIMIT = 0.1
"""A measurement timed alone while other processes took over this fraction of its calls'
time on its CPUs shared its core: a reading to doubt (``ResultRecord.others_s``)."""
SPREAD_LIMIT = 0.25
"""An interquartile range over this fraction of the median makes a reading to doubt."""
BELOW_FLOOR = 0.5
"""A figure under this fraction of the floor's says the floor does not bound it there."""
PARTS = (("predict", "loss_and_grads"), ("loss_and_grads", "train_step"))
"""(part, whole): a gradient runs the forward, a training step the gradient; a part clearly
slower than its whole (its lower quartile above the whole's upper one) contradicts it."""


def flags(pivot: Pivot) -> dict[Key, list[str]]:
    """Each measurement to doubt, with why: a wide spread, a core shared with other
    processes (``SHARED_LIMIT``), a figure far below the floor's, or a part slower than its
    whole at the same shape (``PARTS``)."""
    found: dict[Key, list[str]] = {}
    for key, r in pivot.results.items():
        if r.median_s is None or r.q1_s is None or r.q3_s is None:
            continue
        why = []
        spread = (r.q3_s - r.q1_s) / r.median_s
        if spread > SPREAD_LIMIT:
            why.append(f"spread: IQR {100 * spread:.0f}% of the median")
        if r.others_s and r.calls_s and (shared := r.others_s / sum(r.calls_s)) > SHARED_LIMIT:
            why.append(f"other processes took {100 * shared:.0f}% of its CPU: a shared core")
        if (ratio := pivot.floor_ratio(key)) is not None and ratio < BELOW_FLOOR:
            why.append(f"{ratio:.2g}× the floor: the floor does not bound this model here")
        for part, whole in PARTS:
            other = pivot.results.get(pivot.key(key.variant, whole, key.shape))
            if key.operation == part and other and other.q3_s is not None and r.q1_s > other.q3_s:
                times = r.median_s / other.median_s if other.median_s else float("nan")
                why.append(f"{times:.2g}× its {LABELS[whole]}, which contains it")
        if why:
            found[key] = why
    return found
