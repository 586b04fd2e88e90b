"""Every variant the run listed: what it is, how long it took, why it did not run."""

from __future__ import annotations

from bench.records import VariantRecord
from bench.reporting.render import Section
from bench.reporting.sections import Report


def sections(report: Report) -> list[Section]:
    pivot, lines = report.pivot, []
    for name, listing in report.run.variants.items():
        fact, wall = pivot.facts.get(name, VariantRecord(name)), pivot.walls.get(name)
        status = f", {wall:.0f} s" if wall is not None else ""
        status += f" — **skipped**: {fact.skipped}" if fact.skipped else ""
        status += f" — **failed**: {fact.error}" if fact.error else ""
        lines.append(f"- `{name}` ({listing.role}): {listing.about}; `{listing.backend}`{status}")
    return [Section("Variants", text="\n".join(lines))]
