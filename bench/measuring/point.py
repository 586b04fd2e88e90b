"""What a worker measures on: a point's model and input (``OnPoint``), fresh for each point, and
its measurements (``Unit``), each its operation's (``bench.measuring.operations``) to make
ready for the timing (``bench.measuring.timing``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np

from bench.measuring.job import Job
from bench.measuring.operations import operation
from bench.measuring.timing import Made
from bench.records import Point, ResultRecord

T = TypeVar("T")
Row = Callable[..., ResultRecord]
"""The records of a unit, the operation they name given first."""


class Unit(NamedTuple):
    """One measurement: ``operation`` on the model and input of ``point`` (a fresh model for
    each point), at ``side`` and ``chunk`` for the stream and the codec."""

    point: Point
    operation: str
    side: str | None = None
    chunk: int | None = None

    def to_json(self) -> list[Any]:
        model, batch, steps, operations = self.point
        return [[model, batch, steps, list(operations)], self.operation, self.side, self.chunk]

    def doing(self, operation: str) -> Unit:
        """The same point, side and chunk length, measuring ``operation``."""
        return self._replace(operation=operation)

    @property
    def measures(self) -> tuple[Any, ...]:
        """What it measures, whatever else its point measures: model, B, T, operation,
        side, chunk."""
        return (*self.point[:3], self.operation, self.side, self.chunk)

    @classmethod
    def from_json(cls, data: list[Any]) -> Unit:
        (model, batch, steps, operations), operation, side, chunk = data
        return cls(Point(model, batch, steps, tuple(operations)), operation, side, chunk)


def units(points: Iterable[Point]) -> list[Unit]:
    """Each point's measurements in order: each operation's (``Operation.units``)."""
    return [
        unit
        for point in points
        for name in point.operations
        for unit in operation(name).units(point, name)
    ]


@dataclass
class OnPoint:
    """A point's model and input (or why the model could not be made), and what an operation
    makes of them once a point (``once``): the stream's codes, the codec's runs."""

    model: Any
    x: np.ndarray
    failure: str | None
    create_s: float
    made: dict[str, Any] = field(default_factory=dict)

    def once(self, name: str, make: Callable[[OnPoint], T]) -> T:
        """What ``make`` makes of this point, made at its first call for ``name``."""
        if name not in self.made:
            self.made[name] = make(self)
        return cast(T, self.made[name])


class Bench:
    """The worker's state: the job, and the model and input of the point it measures (fresh
    for each point). A floor measuring beside others (``Job.keeps_models``) keeps each
    point's model for the next variant that measures there."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.point: Point | None = None
        self.at = OnPoint(None, np.zeros((0, 0, 0)), None, 0.0)
        self.kept: dict[Point, OnPoint] = {}

    def on(self, point: Point) -> OnPoint:
        """A fresh model and input for ``point``, unless it is the one measured (or kept)."""
        if point != self.point:
            self.point = point
            found = self.kept.get(point)
            self.at = found if found is not None else self._fresh(point)
            if self.job.keeps_models:
                self.kept[point] = self.at
        return self.at

    def _fresh(self, point: Point) -> OnPoint:
        """The point's input and a model holding the weights its operations ask for
        (``Operation.weights``; none asked: ``frae.create``'s own)."""
        import frae
        from frae.data import multi_sine

        config = self.job.config(point.model)
        x = multi_sine(batch=point.batch, steps=point.steps, features=config.input_dim, seed=0)
        asked = (operation(name).weights(config) for name in point.operations)
        weights = next((found for found in asked if found is not None), None)
        start = time.perf_counter()
        try:
            model = frae.create(
                self.job.backend, config, seed=0, weights=weights, devices=self.job.devices
            )
            failure = None
        except Exception as error:  # reported on every operation's row
            model, failure = None, f"{type(error).__name__}: {error}"
        return OnPoint(model, x, failure, time.perf_counter() - start)

    def row(self, unit: Unit) -> Row:
        """The records of ``unit`` (``Row``: the operation they name still to give)."""
        point = unit.point
        return partial(
            ResultRecord,
            self.job.variant,
            batch=point.batch,
            steps=point.steps,
            model=point.model,
            side=unit.side,
            chunk=unit.chunk,
            create_s=self.at.create_s,
            artifact_kib=getattr(self.at.model, "artifact_kib", None),
        )

    def prepare(self, unit: Unit) -> Made:
        """``unit`` ready to be timed (``Operation.prepare``), or its records; where the
        point's model could not be made, each of its records says why."""
        at, measured = self.on(unit.point), operation(unit.operation)
        row = self.row(unit)
        if at.failure is not None:
            return [row(name, error=at.failure) for name in measured.names(unit.operation)]
        return measured.prepare(at, unit, self.job, row)
