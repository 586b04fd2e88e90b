"""The report's last section: the plots drawn of the run (``bench.reporting.plots``)."""

from __future__ import annotations

from bench.reporting.render import Section
from bench.reporting.sections import Report


def sections(report: Report) -> list[Section]:
    images = "\n".join(f"![{path.stem}]({path.name})" for path in report.images)
    return [Section("Plots", text=images)]
