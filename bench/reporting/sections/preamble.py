"""What the command that ran the benchmark puts before its results (``frae compare``: the
parity table), as Markdown."""

from __future__ import annotations

from bench.reporting.render import Section
from bench.reporting.sections import Report


def sections(report: Report) -> list[Section]:
    return [Section(text=report.preamble.rstrip())] if report.preamble.strip() else []
