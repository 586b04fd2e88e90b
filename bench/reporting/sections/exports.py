"""Exported artifacts in their runtimes: what each export took and weighs, what its runtime
costs at the targets' shapes and a frame at a time, and the export targets."""

from __future__ import annotations

from bench.records import STREAM, ResultRecord
from bench.reporting.analysis import Pivot
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import fmt
from bench.reporting.targets import InMicroseconds, Target, each_side, each_side_targets, limit
from bench.reporting.verdicts import Outcome, targets
from bench.roles import Role

TARGETS = (
    *each_side_targets(
        "frame_exported",
        "the fastest exported artifact streams a frame in ≤ {limit:g} µs, one frame a call",
        5.0,
        Role.EXPORTED,
        InMicroseconds(),
    ),
    *each_side_targets(
        "frame_exported_over_floor",
        "the fastest exported artifact's frame ≤ {limit:g}× the floor's, one frame a call",
        2.0,
        Role.EXPORTED,
    ),
    Target(
        "predict_exported",
        "the fastest exported artifact's predict ≤ {limit:g}× the floor per step ({at})",
        1.5,
        role=Role.EXPORTED,
        every=False,
    ),
)
"""Judged where the run ran an artifact (``Role.EXPORTED``); not measured otherwise."""

ORIGIN = (
    "Where the export targets come from: a codec ships as an artifact run by a deployment "
    "runtime (LiteRT, ONNX Runtime, a serialized StableHLO program), without the "
    "framework's Python layers, so the fastest artifact is asked what a compiled call "
    f"should cost there: a frame in at most {each_side(TARGETS, 'frame_exported', ' µs')}"
    ", one frame a call, and within "
    f"{limit(TARGETS, 'sender_frame_exported_over_floor')} the floor's frame, and "
    f"predict at B = 1, T = 1000 within {limit(TARGETS, 'predict_exported')} the "
    "fastest floor per step. Each artifact runs in its own process behind "
    "`frae.load_exported`, with the contract's checks of its inputs and state, as the "
    "backends' calls have theirs. The limits are this benchmark's own."
)

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


def sections(report: Report) -> list[Section]:
    """The section, where the run ran an artifact."""
    if not (rows := export_rows(report.pivot)):
        return []
    brief = Brief(caption="exported artifacts in their runtimes:")
    return [Section("Exported artifacts in their runtimes", CAPTION, HEADER, rows, brief=brief)]


def outcomes(report: Report) -> list[Outcome]:
    """The export targets, judged on the run's first model (not measured without an
    artifact)."""
    return targets(report.pivot, TARGETS)
