"""The report's section on exported artifacts: what each export took and weighs, and what
its runtime costs at the targets' shapes and a frame at a time."""

from __future__ import annotations

from bench.records import STREAM, ResultRecord
from bench.reporting.analysis import Pivot
from bench.reporting.render import Brief, Section
from bench.reporting.tables import fmt

HEADER = [
    "variant",
    "export + load s",
    "KiB",
    "predict B=1 µs/step",
    "predict B=256 µs/step",
    "sender µs/frame",
    "receiver µs/frame",
]
CAPTION = (
    "Each artifact exported by `frae export` in a child process and run by its runtime alone "
    "in the variant's process: the export and load time (its first model's `create_s`), the "
    "artifact's size, predict per step at T=1000, and a frame per call of the stream."
)


def export_rows(pivot: Pivot) -> list[list[str]]:
    """A row per variant that ran an artifact, in the order of the run."""
    by_variant: dict[str, list[ResultRecord]] = {}
    for record in pivot.results.values():
        if record.artifact_kib is not None:
            by_variant.setdefault(record.variant, []).append(record)
    return [_row(variant, records) for variant, records in by_variant.items()]


def _row(variant: str, records: list[ResultRecord]) -> list[str]:
    def timed(operation: str, batch: int, side: str | None = None) -> str:
        found = [
            r.us_per_step
            for r in records
            if r.operation == operation
            and r.batch == batch
            and r.side == side
            and (side is None or r.chunk == 1)
        ]
        return fmt(found[0]) if found and found[0] is not None else "–"

    export_s = max(r.create_s for r in records if r.create_s is not None)
    kib = records[0].artifact_kib
    return [
        variant,
        fmt(export_s),
        f"{kib:.0f}" if kib is not None else "–",
        timed("predict", 1),
        timed("predict", 256),
        timed(STREAM, 1, "sender"),
        timed(STREAM, 1, "receiver"),
    ]


def export_sections(pivot: Pivot) -> list[Section]:
    """The section, where the run ran an artifact."""
    if not (rows := export_rows(pivot)):
        return []
    brief = Brief(caption="exported artifacts in their runtimes:")
    return [Section("Exported artifacts in their runtimes", CAPTION, HEADER, rows, brief=brief)]
