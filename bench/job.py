"""A worker's job: the variant it runs, the points it measures and how long each
measurement runs, written to JSON by the runner and read back by the worker."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bench.records import Point
from bench.roles import ROUTES
from frae.config import FRAEConfig


@dataclass(frozen=True)
class Settings:
    """How long each measurement runs (see ``bench.worker``), and which part of the grid a
    slow variant gets."""

    repeats: int = 7
    min_time_s: float = 0.5
    budget_s: float = 6.0
    max_samples: int = 500
    train_steps: int = 5
    long_call_s: float = 20.0
    """A first call longer than this gets one timed call and no warm-up."""
    long_step_s: float = 0.5
    """A training step longer than this (the warm-up's) is timed one per sample, not K."""
    timeout_s: float = 3600.0
    slow_max_steps: int = 1000
    """Longest T a slow variant gets."""
    slow_max_batch: int | None = 32
    """Largest B a slow variant gets (``None``: every B); at B = 256 the six slow variants
    would take more of the full grid's 20-minute budget than it can hold."""
    slow_operations: tuple[str, ...] | None = None
    """The operations a slow variant gets, of those it offers (``None``: all of them)."""
    wide_roles: tuple[str, ...] | None = None
    """The roles of the variants that measure the models after the grid's first, of those
    with a width axis (``Variant.wide``; ``None``: all of them)."""
    stream_repeats: int | None = None
    """The least timed samples of the stream (``None``: ``repeats``); each is already the
    mean of a whole sequence's calls."""
    threads: int = 1
    """The cores and threads every variant runs on (``bench.threads``)."""
    rounds: int = 1
    """How many times the run measures every variant, each time in a fresh process, the
    variants taking turns (``bench.rounds``)."""

    def for_stream(self) -> Settings:
        """These settings with the stream's least number of samples."""
        return replace(self, repeats=self.stream_repeats or self.repeats)


QUICK_SETTINGS = Settings(
    repeats=5,
    min_time_s=0.05,
    budget_s=1.0,
    max_samples=100,
    timeout_s=300,
    slow_max_batch=1,
    # a slow variant interprets every step, so its stream costs what its steps cost: it
    # streams in the full grid, and the quick run's few minutes hold the exported artifacts
    slow_operations=("predict", "loss_and_grads", "train_step"),
    stream_repeats=3,  # so that the quick run's few minutes hold every variant's stream
    # the roofline's model, for its targets: the framework routes, which they judge
    wide_roles=ROUTES,
)


@dataclass(frozen=True)
class Job:
    """What one worker process measures.

    Attributes:
        variant: the variant's label in the results.
        backend: a registered name or ``"module:attribute"`` for ``frae.create``.
        settings: how long each measurement runs.
        points: the models and shapes it measures, and the operations at each.
        models: each point's model by label (a label absent here is the default model).
        frameworks: the frameworks its process runs on, whose thread settings it reports.
        devices: data-parallel on this many devices (``create(..., devices=N)``), or ``None``.
    """

    variant: str
    backend: str
    settings: Settings = Settings()
    points: tuple[Point, ...] = ()
    models: Mapping[str, FRAEConfig] = field(default_factory=dict)
    frameworks: tuple[str, ...] = ()
    devices: int | None = None

    def config(self, label: str) -> FRAEConfig:
        """The model labelled ``label``."""
        return self.models.get(label, FRAEConfig())

    def to_json(self) -> str:
        """The job as one JSON object (the models as ``FRAEConfig.to_dict``)."""
        data: dict[str, Any] = {
            **{name: getattr(self, name) for name in self.__dataclass_fields__},
            "settings": asdict(self.settings),
            "models": {label: config.to_dict() for label, config in self.models.items()},
        }
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Job:
        """The job ``to_json`` wrote."""
        data = json.loads(text)
        return cls(
            **{
                **data,
                "settings": Settings(**data["settings"]),
                "points": tuple(
                    Point(model, batch, steps, tuple(operations))
                    for model, batch, steps, operations in data["points"]
                ),
                "models": {
                    label: FRAEConfig.from_dict(fields) for label, fields in data["models"].items()
                },
                "frameworks": tuple(data["frameworks"]),
            }
        )
