"""The exported artifacts' targets: what the fastest artifact, run by its runtime alone,
costs a frame at each side of a stream and a step of predict against the floor."""

from __future__ import annotations

from bench.analysis import TARGET_SHAPE
from bench.roles import Role
from bench.targets import InMicroseconds, Target, each_side_targets

FRAME_US = 5.0
FRAME_OVER_FLOOR = 2.0
PREDICT_OVER_FLOOR = 1.5
EXPORT_TARGETS = (
    *each_side_targets(
        "frame_exported",
        "the fastest exported artifact streams a frame in ≤ {limit:g} µs, one frame a call",
        FRAME_US,
        Role.EXPORTED,
        InMicroseconds(),
    ),
    *each_side_targets(
        "frame_exported_over_floor",
        "the fastest exported artifact's frame ≤ {limit:g}× the floor's, one frame a call",
        FRAME_OVER_FLOOR,
        Role.EXPORTED,
    ),
    Target(
        "predict_exported",
        "the fastest exported artifact's predict ≤ {limit:g}× the floor per step ({at})",
        PREDICT_OVER_FLOOR,
        role=Role.EXPORTED,
        every=False,
        shape=TARGET_SHAPE,
    ),
)
"""Judged where the run ran an artifact (``Role.EXPORTED``); not measured otherwise."""
EXPORT_TARGETS_ORIGIN = (
    "Where the export targets come from: a codec ships as an artifact run by a deployment "
    "runtime (LiteRT, ONNX Runtime, a serialized StableHLO program), without the "
    "framework's Python layers, so the fastest artifact is asked what a compiled call "
    f"should cost there: a frame in at most {FRAME_US:g} µs at each side, one frame a call, "
    f"and within {FRAME_OVER_FLOOR:g}× the floor's frame, "
    f"and predict at B = 1, T = 1000 within {PREDICT_OVER_FLOOR:g}× the fastest floor per "
    "step. Each artifact runs in its own process behind `frae.load_exported`, with the "
    "contract's checks of its inputs and state, as the backends' calls have theirs. The "
    "limits are this benchmark's own."
)
