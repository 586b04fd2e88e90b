"""The readings to doubt (``bench.reporting.analysis.flags``): every one with why."""

from __future__ import annotations

from bench.reporting.analysis import (
    BELOW_FLOOR,
    SPREAD_LIMIT,
    Pivot,
    flags,
)
from bench.reporting.render import Brief, Layout, Section
from bench.reporting.sections import Report
from bench.reporting.tables import (
    FLAG,
    Rows,
    key_cells,
)

FLAG_HEADER = ["variant", "operation", "B", "T", "why"]


FLAG_CAPTION = (
    f"Measurements marked {FLAG} in the tables: an interquartile range over "
    f"{100 * SPREAD_LIMIT:.0f}% of the median (a noisy machine, or too few samples); under "
    f"{BELOW_FLOOR:g}× the floor (its loops, one multiply-add at a time, are no limit for "
    "a model of wide layers, which a framework runs on a tuned matrix product); or a "
    "part clearly slower than its whole at the same shape (its lower quartile above the "
    "whole's upper one: a gradient runs the forward, a training step the gradient). Rerun "
    "them before drawing conclusions."
)


def flag_rows(pivot: Pivot) -> Rows:
    """One row per flagged measurement: where, and why."""
    return [[*key_cells(key), "; ".join(why)] for key, why in flags(pivot).items()]


TERMINAL_FLAGS = 8
"""Readings to doubt the terminal names; the report lists every one."""


def sections(report: Report) -> list[Section]:
    """The readings to doubt, if any: every one with why; the terminal names the first."""
    pivot = report.pivot
    if not (rows := flag_rows(pivot)):
        return []
    where = [[f"{name} {operation} B={b} T={t}"] for name, operation, b, t, _ in rows]
    caption = f"{len(rows)} readings to doubt ({FLAG} in the tables; why: report.md):"
    brief = Brief(caption=caption, layout=Layout.LIST, rows=where, limit=TERMINAL_FLAGS)
    return [Section("Readings to doubt", FLAG_CAPTION, FLAG_HEADER, rows, brief=brief)]
