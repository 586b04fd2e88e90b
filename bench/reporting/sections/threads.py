"""The threads each variant measured on and the framework settings its backend ran with,
as one table, and the line each table's caption ends with."""

from __future__ import annotations

from typing import Any

from bench.records import VariantRecord
from bench.reporting.analysis import Pivot
from bench.reporting.render import Section
from bench.reporting.sections import Report

HEADER = ["variant", "threads", "framework settings"]
CAPTION = (
    "Each variant's frameworks' thread pools as read back in its process after they were "
    "sized (`bench.measuring.threads`), and the settings of its route (`frae.routes`)."
)


def sections(report: Report) -> list[Section]:
    facts = [f for f in report.pivot.facts.values() if f.threads or f.routes]
    if not facts:
        return []
    shared = _shared([f.threads or {} for f in facts])
    rows = [[f.variant, _threads(f, shared), "; ".join(f.routes or []) or "—"] for f in facts]
    common = ", ".join(f"{key} {value}" for key, value in shared.items())
    caption = CAPTION + (f" Every variant: {common}." if common else "")
    return [Section("Threads and settings", caption, HEADER, rows)]


def _shared(threads: list[dict[str, Any]]) -> dict[str, Any]:
    """The settings every variant has, alike in each."""
    first, *others = threads
    return {k: v for k, v in first.items() if all(k in o and o[k] == v for o in others)}


def _threads(facts: VariantRecord, shared: dict[str, Any]) -> str:
    own = {k: v for k, v in (facts.threads or {}).items() if k not in shared}
    return ", ".join(f"{key} {value}" for key, value in own.items()) or "as every variant"


def threads_said(pivot: Pivot) -> str:
    """The threads the measurements ran on, as a caption says them."""
    counts = {r.variant: r.threads for r in pivot.results.values() if r.median_s is not None}
    if not counts:
        return "Threads: none timed"
    if len(set(counts.values())) == 1:
        threads = next(iter(counts.values()))
        plural = "s" if threads != 1 else ""
        return f"Every variant on {threads} thread{plural}, pinned to as many cores"
    by_variant = ", ".join(f"{name} {threads}" for name, threads in counts.items())
    return f"Threads differ by variant: {by_variant}"
