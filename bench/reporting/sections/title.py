"""The report's first lines: its title, the run and its grid."""

from __future__ import annotations

from bench.records import DEFAULT_MODEL, Point
from bench.reporting.render import Section
from bench.reporting.sections import Report
from bench.reporting.tables import fmt


def sections(report: Report) -> list[Section]:
    run = report.run
    grid = "; ".join(_point(point) for point in run.grid)
    wall = fmt(report.pivot.wall_s, 3)
    text = f"# FRAE benchmark\n\nRun {run.started}, `{run.command}`, {wall} s in all; grid (B, T: "
    return [Section(text=f"{text}operations): {grid}.")]


def _point(point: Point) -> str:
    """A point of the grid: "(MODEL, B=…, T=…: operations)", the default model unnamed."""
    on = "" if point.model == DEFAULT_MODEL else point.model + ", "
    return f"({on}B={point.batch}, T={point.steps}: {', '.join(point.operations)})"
