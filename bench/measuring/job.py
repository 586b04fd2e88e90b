"""A worker's job: the variant it runs, its models and how long each measurement runs,
written to JSON by the runner and read back by the worker, which is then told each
measurement to make (``bench.measuring.point.Unit``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.records import Settings
from bench.roles import ROUTES
from frae.config import FRAEConfig

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
    """What one worker process runs: ``variant`` (``backend`` for ``frae.create``), the
    models it is asked to measure by label in ``models`` (absent: the default), on
    ``frameworks``, whose thread settings it reports, and ``devices``."""

    variant: str
    backend: str
    settings: Settings = field(default_factory=Settings)
    models: Mapping[str, FRAEConfig] = field(default_factory=dict)
    frameworks: tuple[str, ...] = ()
    devices: int | None = None
    keeps_models: bool = False
    """Keep each point's model for later measurements there (a floor measuring beside every
    variant, ``bench.measuring.turns``), instead of a fresh one each time the point comes again."""

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
                "models": {
                    label: FRAEConfig.from_dict(fields) for label, fields in data["models"].items()
                },
                "frameworks": tuple(data["frameworks"]),
            }
        )
