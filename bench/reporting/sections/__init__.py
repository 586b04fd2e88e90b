"""The report's subjects, one module each, in the order the report draws them
(``SECTIONS``). Each module's ``sections(report)`` gives its sections (none where the run did
not measure its subject); a module holding targets also gives them judged
(``outcomes(report)``), which the answer counts. Adding a subject to the report is its module,
its test and one line here.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType

from bench.records import Record, RunRecord
from bench.reporting.analysis import Pivot, models_of
from bench.reporting.render import Section
from bench.reporting.verdicts import Outcome

SECTIONS = (
    "title",
    "answer",
    "head",
    "preamble",
    "summary",
    "targets",
    "call_cost",
    "stream",
    "exports",
    "routes",
    "autodiff",
    "data_parallel",
    "wide_layers",
    "rounding",
    "rate",
    "coding",
    "flags",
    "variants",
    "threads",
    "measurements",
    "plots",
)
"""The sections' modules (``bench.reporting.sections.NAME``), in the report's order."""


@dataclass
class Report:
    """What every section reads: the run's records, the plots drawn of them and a preamble
    (Markdown) after the head; ``ValueError`` where the records hold no run record."""

    records: list[Record]
    images: Sequence[Path] = ()
    preamble: str = ""
    runs: list[RunRecord] = field(init=False)

    def __post_init__(self) -> None:
        self.runs = [r for r in self.records if isinstance(r, RunRecord)]
        if not self.runs:
            raise ValueError("records must begin with the run's record (kind 'run'), got none")

    @cached_property
    def pivot(self) -> Pivot:
        """The run's first model's measurements (``Pivot``)."""
        return Pivot.of(self.records)

    @property
    def run(self) -> RunRecord:
        return self.runs[0]

    def is_quantized(self, model: str) -> bool:
        """Whether ``model`` is a quantized model of the run (its config has a code step)."""
        return (self.run.models.get(model) or {}).get("code_step") is not None

    def is_rated(self, model: str) -> bool:
        """Whether ``model`` is trained for its rate (its config has a rate weight)."""
        return (self.run.models.get(model) or {}).get("rate_weight") is not None

    def others(self) -> list[str]:
        """The models measured beside the first, quantized ones apart (``rounding``)."""
        return [m for m in models_of(self.records)[1:] if not self.is_quantized(m)]

    def quantized(self) -> list[str]:
        """The quantized models measured, the first among them where it is one."""
        return [m for m in models_of(self.records) if self.is_quantized(m)]


def modules() -> list[ModuleType]:
    """The sections' modules, in order."""
    return [importlib.import_module(f"{__name__}.{name}") for name in SECTIONS]


def sections(report: Report) -> list[Section]:
    """Every section of the report, in order."""
    return [section for module in modules() for section in module.sections(report)]


def outcomes(report: Report) -> list[Outcome]:
    """Every target of the report judged, in the order of its sections."""
    return [
        outcome
        for module in modules()
        if hasattr(module, "outcomes")
        for outcome in module.outcomes(report)
    ]
