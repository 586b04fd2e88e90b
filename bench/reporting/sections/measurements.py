"""Every measurement of the run's first model: its figures, spread, ratios, first call,
samples, busy cores, memory and notes."""

from __future__ import annotations

from bench.reporting.analysis import (
    Pivot,
    flags,
)
from bench.reporting.render import Section
from bench.reporting.sections import Report
from bench.reporting.tables import (
    Rows,
    fmt,
    in_turn_cell,
    key_cells,
    spread_cell,
)

DETAIL_HEADER = ["variant", "operation", "B", "T", "µs/step (median)", "spread µs/step"]


DETAIL_HEADER += ["sequence-steps/s", "×floor", "×floor in turn", "first call s", "samples"]


DETAIL_HEADER += ["cores busy", "peak MB", "note"]


DETAIL_CAPTION = (
    "spread: from the lower to the upper quartile of the calls of every round, widened to "
    "each round's median (`bench.comparing.pairs`); ×floor: the median over the fastest "
    "floor's median, same operation; ×floor in turn: the median of each call over the "
    "fastest floor's call taken in turn with it (a training step's over the floor's "
    "forward + BPTT), with its spread"
)


def detail_rows(pivot: Pivot) -> Rows:
    """Every measurement, with its note and why it is flagged, if it is."""
    rows, doubted = [], flags(pivot)
    for key, r in pivot.results.items():
        first = fmt(r.first_call_s, 3)
        if r.median_s is None:
            why = r.unsupported or r.error or ""
            rows.append([*key_cells(key), "—", "—", "—", "—", "—", first, "", "", "", why])
            continue
        spread = spread_cell(pivot.spread(key))
        timing = [fmt(r.us_per_step), spread, f"{r.sequence_steps_per_s:.3g}"]
        ratios = [fmt(pivot.floor_ratio(key)), in_turn_cell(pivot.paired(key))]
        notes = "; ".join(filter(None, [r.note, *doubted.get(key, [])]))
        memory = [str(r.samples), fmt(r.cores_busy, 2), fmt(r.peak_rss_mb, 4), notes]
        rows.append([*key_cells(key), *timing, *ratios, first, *memory])
    return rows


def sections(report: Report) -> list[Section]:
    rows = detail_rows(report.pivot)
    return [Section("Every measurement", DETAIL_CAPTION, DETAIL_HEADER, rows)]
