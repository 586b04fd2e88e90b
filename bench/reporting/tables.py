"""The report's tables: each one's rows of formatted cells, its header and its caption, from
one ``Pivot`` (``bench.reporting.analysis``). A figure with its ratio to the floor reads
``figure (ratio×)``; a flagged one (``bench.reporting.analysis.flags``) ends in ``FLAG``.
"""

from __future__ import annotations

from collections.abc import Container

from bench.comparing.pairs import Spread
from bench.records import OPERATIONS, SIDES, STREAM, Key, VariantRecord
from bench.reporting.analysis import (
    BELOW_FLOOR,
    FIT_TOLERANCE,
    LABELS,
    MIN_FIT_STEPS,
    SPREAD_LIMIT,
    TARGET_SHAPE,
    Pivot,
    call_costs,
    flags,
    floor_per_frame,
    floor_per_step,
    label,
    stream_costs,
    summary_shape,
    timed_steps,
)
from bench.roofline import peak_of, roofline_ratio, roofline_us

Rows = list[list[str]]
FLAG = "!"
"""Marks a flagged figure in the tables."""
UNRESOLVED = "below resolution"
"""A part of a split fitted below zero: smaller than the noise of its times."""


def fmt(value: float | None, digits: int = 3) -> str:
    """``digits`` significant figures, or the whole number where it has more; "—": none."""
    if value is None:
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"


def with_ratio(value: float | None, ratio: float | None) -> str:
    """'figure (ratio×)', or the figure alone."""
    return fmt(value) + (f" ({fmt(ratio)}×)" if ratio is not None else "")


def ratio_cell(value: float | None) -> str:
    """'ratio×', or "—"."""
    return fmt(value) + ("×" if value else "")


def key_cells(key: Key) -> list[str]:
    """A measurement's first cells: its variant, operation (``label``), B and T."""
    return [key.variant, label(key.operation, key.side, key.chunk), str(key.batch), str(key.steps)]


def figures(pivot: Pivot, keys: list[Key], doubted: Container[Key]) -> list[str]:
    """Each measurement's µs per step with its ratio to the floor, flagged where doubted."""
    return [
        with_ratio(pivot.figure(key), pivot.floor_ratio(key)) + (FLAG if key in doubted else "")
        for key in keys
    ]


SUMMARY_HEADER = ["variant", "role", *(LABELS[op] for op in OPERATIONS)]
SUMMARY_HEADER += ["compile s (predict / train)", "import s", "peak MB"]
SUMMARY_CAPTION = (
    "µs per time step, median (× the floor's same operation); compile: the first call "
    "of the operation in the variant's process"
)


def summary_rows(pivot: Pivot) -> Rows:
    """One row per variant at ``summary_shape``."""
    compiles, shape, rows, doubted = pivot.first_calls(), summary_shape(pivot), [], flags(pivot)
    for name, role in pivot.roles.items():
        fact = pivot.facts.get(name, VariantRecord(name))
        if fact.skipped or fact.error:
            rows.append([name, str(role), "skipped" if fact.skipped else "failed", *[""] * 5])
            continue
        keys = [pivot.key(name, operation, shape) for operation in OPERATIONS]
        cells = figures(pivot, keys, doubted)
        first = " / ".join(
            fmt(compiles[name, op].seconds if (name, op) in compiles else None, 2)
            for op in ("predict", "train_step")
        )
        peaks = [r.peak_rss_mb for k, r in pivot.results.items() if k.variant == name]
        peak = fmt(max(filter(None, peaks), default=None), 4)
        rows.append([name, str(role), *cells, first, fmt(fact.import_s, 2), peak])
    return rows


CALL_COST_HEADER = ["variant", "operation", "T fitted", "µs per call", "µs per step (× floor)"]
CALL_COST_CAPTION = (
    "Each call's median time at B=1 fitted as per call + per step × T over the T measured "
    f"(least squares on relative errors; at least {MIN_FIT_STEPS} T, and no split where the "
    f"line misses a measurement by over {100 * FIT_TOLERANCE:.0f}%): the fixed cost of a call "
    "apart from the loop's cost per time step."
)


def call_cost_rows(pivot: Pivot) -> Rows:
    """One row per (variant, operation) measured at enough T: its split, or why there is none
    (the line does not fit, or the fixed cost is below what these T resolve)."""
    costs = call_costs(pivot)
    floor = floor_per_step(costs, pivot)
    rows = []
    for c in costs:
        steps = ", ".join(map(str, c.steps))
        if not c.fits:
            poor = f"poor fit ({100 * c.residual:.0f}% off)"
            rows.append([c.variant, LABELS[c.operation], steps, poor, "—"])
            continue
        base = floor.get(c.operation)
        per_step = with_ratio(c.per_step_us, c.per_step_us / base if base else None)
        per_call = fmt(c.per_call_us) if c.per_call_us >= 0 else UNRESOLVED
        rows.append([c.variant, LABELS[c.operation], steps, per_call, per_step])
    return rows


def unsplit_reason(pivot: Pivot, batch: int = TARGET_SHAPE.batch) -> str | None:
    """Why no call is split at ``batch``: fewer than ``MIN_FIT_STEPS`` T measured there."""
    steps = timed_steps(pivot, batch)
    if len(steps) >= MIN_FIT_STEPS:
        return None
    measured = ", ".join(map(str, steps)) or "none"
    return (
        f"Not split into per call and per step: not enough points (a line needs at least "
        f"{MIN_FIT_STEPS} T at B={batch}; this run measured T = {measured})."
    )


ROOFLINE_HEADER = "×roof"


def model_table(pivot: Pivot, brief: bool = False) -> tuple[list[str], Rows]:
    """For a model other than the run's first: per variant, predict and a training step at
    every (B, T), each beside its ratio to the roofline where the run has peaks, under a row
    of the roofline's own; ``brief``: those ratios at the largest B alone."""
    shapes = pivot.shapes()
    columns = [(op, shape) for shape in shapes for op in ("predict", "train_step")]
    largest = max((shape.batch for shape in shapes), default=0)
    roofed = [
        peak_of(pivot.run) is not None and (not brief or shape.batch == largest)
        for _, shape in columns
    ]
    rows, doubted = [], flags(pivot)
    if any(roofed):
        limits = [fmt(roofline_us(pivot, pivot.key("", op, shape))) for op, shape in columns]
        rows.append(["roofline", *_beside(limits, ["—"] * len(columns), roofed)])
    for name in dict.fromkeys(k.variant for k in pivot.results):
        keys = [pivot.key(name, op, shape) for op, shape in columns]
        ratios = [ratio_cell(roofline_ratio(pivot, key)) for key in keys]
        rows.append([name, *_beside(figures(pivot, keys, doubted), ratios, roofed)])
    one_t = len({shape.steps for shape in shapes}) == 1  # then the caption says T
    named = [
        f"{LABELS[op]} B={shape.batch}" + ("" if one_t else f" T={shape.steps}")
        for op, shape in columns
    ]
    return ["variant", *_beside(named, [ROOFLINE_HEADER] * len(columns), roofed)], rows


def _beside(cells: list[str], ratios: list[str], shown: list[bool]) -> list[str]:
    """Each of ``cells`` followed by its ratio where ``shown``."""
    found = []
    for cell, ratio, show in zip(cells, ratios, shown, strict=True):
        found += [cell, ratio] if show else [cell]
    return found


def model_caption(pivot: Pivot) -> str:
    """What a model's table holds: its T, the roofline's peaks and the model's config."""
    fields = ", ".join(f"{k}={v}" for k, v in pivot.config.items())
    steps = sorted({shape.steps for shape in pivot.shapes()})
    at = f"at T={steps[0]}, " if len(steps) == 1 else ""
    peak = peak_of(pivot.run)
    roofline = (
        f" {ROOFLINE_HEADER}: over the roofline, max(FLOPs / {peak.gflops:.1f} GFLOP/s, "
        f"bytes / {peak.gbps:.1f} GB/s) per step ({peak.kernel});"
        if peak
        else ""
    )
    return f"µs per time step {at}median (× the floor's same operation);{roofline} {fields}"


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


def spread_cell(spread: Spread | None, digits: int = 3) -> str:
    """'low–high', or "—"."""
    return "—" if spread is None else f"{fmt(spread.low, digits)}–{fmt(spread.high, digits)}"


def in_turn_cell(spread: Spread | None) -> str:
    """'ratio× (low–high)', or "—"."""
    return "—" if spread is None else f"{fmt(spread.value)}× ({spread_cell(spread)})"


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


STREAM_CAPTION = (
    "µs per frame, median (× the fastest floor's at the same side and chunk length): one "
    "sequence at B=1 sent a chunk at a time, the sender's `encode(chunk, state=s, "
    "return_state=True)` and the receiver's `decode(codes, state=s, return_state=True)` on "
    "the codes of one whole `encode`, each call given the state the one before returned; a "
    "sample is the whole sequence streamed, its time over its frames."
)


def stream_keys(pivot: Pivot) -> dict[tuple[str, int, int], dict[tuple[str, int], Key]]:
    """(variant, B, T) -> (side, chunk length) -> where its stream was measured."""
    found: dict[tuple[str, int, int], dict[tuple[str, int], Key]] = {}
    for key in pivot.results:
        if key.operation == STREAM and key.side is not None and key.chunk is not None:
            found.setdefault((key.variant, *key.shape), {})[key.side, key.chunk] = key
    return found


def stream_columns(pivot: Pivot) -> list[tuple[str, int]]:
    """(side, chunk length) of each column of the stream's table."""
    chunks = sorted({key.chunk for key in pivot.results if key.chunk is not None})
    return [(side, chunk) for side in SIDES for chunk in chunks]


def stream_header(pivot: Pivot) -> list[str]:
    return ["variant", "role", *(f"{side}, chunk {chunk}" for side, chunk in stream_columns(pivot))]


def stream_rows(pivot: Pivot) -> Rows:
    """One row per variant that streamed: its µs per frame at each side and chunk length, its
    shape after its name where the run streamed more than one."""
    found, doubted, columns = stream_keys(pivot), flags(pivot), stream_columns(pivot)
    several = len({(b, t) for _, b, t in found}) > 1
    rows = []
    for (name, batch, steps), keys in found.items():
        cells = []
        for column in columns:
            r = pivot.results[keys[column]] if column in keys else None
            if r is not None and r.median_s is None:
                cells.append("unsupported" if r.unsupported else "failed")
                continue
            cells += figures(pivot, [keys[column]], doubted) if r else ["—"]
        shown = f"{name} (B={batch}, T={steps})" if several else name
        rows.append([shown, str(pivot.roles.get(name, "")), *cells])
    return rows


STREAM_COST_HEADER = ["variant", "side", "chunks fitted", "µs per call", "µs per frame (× floor)"]
STREAM_COST_CAPTION = (
    "Each side's call of c frames split as per call + per frame × c, through its call time "
    "(c × its µs per frame) at each chunk length: what a call costs whatever its length "
    "(dispatch, the checks of the arguments and the state, launching the loop, the outputs "
    "back to NumPy) apart from what each frame adds."
)


def stream_cost_rows(pivot: Pivot) -> Rows:
    """One row per (variant, side) timed at two chunk lengths or more: its cost per call and
    per frame."""
    costs = stream_costs(pivot)
    floor = floor_per_frame(costs, pivot)
    rows = []
    for c in costs:
        base = floor.get(c.side)
        ratio = c.per_frame_us / base if base and base > 0 else None
        per_frame = with_ratio(c.per_frame_us, ratio) if c.per_frame_us >= 0 else UNRESOLVED
        per_call = fmt(c.per_call_us) if c.per_call_us >= 0 else UNRESOLVED
        rows.append([c.variant, c.side, ", ".join(map(str, c.chunks)), per_call, per_frame])
    return rows


def unstreamed(pivot: Pivot) -> list[str]:
    """A Markdown item for each variant that does not stream or whose stream was not timed,
    with why (once where every side and chunk length says the same)."""
    lines = [f"- `{n}`: {v.no_stream}" for n, v in pivot.listings.items() if v.no_stream]
    reasons: dict[str, dict[str, list[str]]] = {}
    for key, r in pivot.results.items():
        if key.operation == STREAM and r.median_s is None:
            why = r.unsupported or r.error or "not timed"
            named = label(key.operation, key.side, key.chunk)
            reasons.setdefault(key.variant, {}).setdefault(why, []).append(named)
    streamed = [(k, r) for k, r in pivot.results.items() if k.operation == STREAM]
    timed = {k.variant for k, r in streamed if r.median_s is not None}
    for name, by_reason in reasons.items():
        for why, where in by_reason.items():
            at = f" ({'; '.join(where)})" if name in timed or len(by_reason) > 1 else ""
            lines.append(f"- `{name}`{at}: {why}")
    return lines
