"""Every target of the run's first model judged, after where each comes from: the time
per step's (``summary``), the stream's, the exports' and the roofline's."""

from __future__ import annotations

from bench.reporting.render import Brief, Layout, Section
from bench.reporting.sections import Report, exports, stream, summary, wide_layers
from bench.reporting.verdicts import TARGET_HEADER, target_rows


def sections(report: Report) -> list[Section]:
    """Every target judged, after where they come from; the terminal lists those measured."""
    pivot = report.pivot
    roofline = wide_layers.roofline_targets(pivot)
    judged = summary.outcomes(report) + stream.outcomes(report) + exports.outcomes(report)
    judged += roofline
    unmeasured = sum(not t.judged for t in judged)
    more = f"({unmeasured} more not measured in this run: report.md lists them)"
    brief = Brief(
        caption="targets (where they come from: report.md):",
        layout=Layout.OUTLINE,
        rows=target_rows(t for t in judged if t.judged),
        footnote=more if unmeasured else "",
    )
    origins = [summary.origin_of(pivot), stream.STREAM_TARGETS_ORIGIN, exports.ORIGIN]
    origins += [wide_layers.ROOFLINE_TARGETS_ORIGIN] if roofline else []
    text = "\n\n".join(origins)
    return [Section("Targets", text, TARGET_HEADER, target_rows(judged), brief=brief)]
