"""The stream: a sequence sent a chunk at a time at each side, its µs per frame, each
call split into per call and per frame, what did not stream, and the stream's targets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bench.records import (
    SIDES,
    STREAM,
    Key,
)
from bench.reporting.analysis import (
    Pivot,
    fit_line,
    flags,
    label,
)
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import (
    UNRESOLVED,
    Rows,
    figures,
    fmt,
    with_ratio,
)
from bench.reporting.targets import (
    InMicroseconds,
    Target,
    each_side,
    each_side_targets,
)
from bench.reporting.verdicts import Outcome, targets
from bench.roles import Role

STREAM_TARGETS = (
    *each_side_targets(
        "frame_best",
        "the best framework route streams a frame in ≤ {limit:g} µs, one frame a call",
        10.0,
        over=InMicroseconds(),
    ),
    *each_side_targets(
        "frame_every",
        "every compiled backend streams a frame in ≤ {limit:g} µs, one frame a call",
        100.0,
        Role.COMPILED,
        InMicroseconds(),
        every=True,
    ),
    *each_side_targets(
        "frame_over_floor",
        "the best framework route's frame ≤ {limit:g}× the floor's, one frame a call",
        2.0,
    ),
    *each_side_targets(
        "chunk_best",
        "the best framework route's µs per frame ≤ {limit:g}× the floor's, in chunks of "
        "{chunk} frames",
        3.0,
        chunk=10,
    ),
)
"""The stream's targets, judged on the run's first model whichever its feedback: each
frame's cost at the sender and at the receiver, one frame a call and in chunks."""


def stream_origin(t: tuple[Target, ...]) -> str:
    """Where the stream's targets ``t`` come from, with their limits."""
    chunk = next(target.chunk for target in t if target.name.endswith("_chunk_best"))
    return (
        "Where the stream's targets come from: a feedback codec runs online, the sender "
        "encoding each frame as it arrives and the receiver decoding each code as it comes, "
        "so a frame a call at B = 1 is the model's own use, and there a call's fixed cost "
        "(dispatch, checking the arguments and the state, launching the compiled loop, "
        "converting the outputs and the state) is nearly all a frame costs: a floor's step "
        "is a fraction of a µs. The **best framework route** (any variant on a framework: "
        f"not a floor, the check nor the reference) is asked {each_side(t, 'frame_best', ' µs')}"
        f" and {each_side(t, 'frame_over_floor', '×')} the floor's frame (the floor's frame "
        "passes through the same `encode` and `decode` checks), one frame a call, and "
        "**every compiled backend** "
        f"{each_side(t, 'frame_every', ' µs')}: the cheapest way each framework offers to "
        "call a small compiled function with a state from Python, not the first way a new "
        f"user finds. In chunks of {chunk} frames, where a call's cost is spread over its "
        "frames, the best route's µs per frame over the fastest floor's is asked to be at "
        f"most {each_side(t, 'chunk_best', '×')}, the floors streaming through the same "
        "`encode` and `decode` calls and their checks. The limits are this benchmark's own, "
        "not a framework's promise."
    )


STREAM_TARGETS_ORIGIN = stream_origin(STREAM_TARGETS)


MIN_FIT_CHUNKS = 2
"""The chunk lengths a stream's split needs: through two, the line is exact."""


@dataclass(frozen=True)
class StreamCost:
    """One side of a variant's stream: a call of c frames split as ``per_call + per_frame·c``,
    fitted through its call time t(c) = c · (µs per frame at c) at each chunk length."""

    variant: str
    side: str
    chunks: tuple[int, ...]
    per_call_us: float
    per_frame_us: float


def stream_costs(pivot: Pivot) -> list[StreamCost]:
    """Lines (``fit_line``) through each (variant, side)'s call time against the chunk length,
    where at least ``MIN_FIT_CHUNKS`` were timed."""
    calls: dict[tuple[str, str], dict[int, float]] = {}
    for key, r in pivot.results.items():
        if key.operation == STREAM and key.side and key.chunk and r.us_per_step is not None:
            calls.setdefault((key.variant, key.side), {})[key.chunk] = key.chunk * r.us_per_step
    costs = []
    for (name, side), by_chunk in calls.items():
        if len(by_chunk) >= MIN_FIT_CHUNKS:
            chunks, slope, intercept, _ = fit_line(by_chunk)
            costs.append(StreamCost(name, side, chunks, intercept, slope))
    return costs


def floor_per_frame(costs: Iterable[StreamCost], pivot: Pivot) -> dict[str, float]:
    """side -> the floors' least cost per frame of the stream, among those fitted above zero
    (below it, the times do not resolve it)."""
    floors, floor = pivot.floors(), dict[str, float]()
    for c in costs:
        if c.variant in floors and c.per_frame_us > 0:
            floor[c.side] = min(c.per_frame_us, floor.get(c.side, c.per_frame_us))
    return floor


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


def sections(report: Report) -> list[Section]:
    """The stream, where the run streamed: µs per frame, each call split into per call and
    per frame, and what did not stream."""
    pivot = report.pivot
    if not (rows := stream_rows(pivot)):
        return []
    header = stream_header(pivot)
    missing = "\n".join(unstreamed(pivot))
    text = f"Not streamed:\n\n{missing}" if missing else ""
    shown = ["variant", *(f"{side} {chunk}" for side, chunk in stream_columns(pivot))]
    caption = "stream, B=1: µs per frame (× the floor's) at each side, by frames per call"
    brief = Brief(caption=caption, columns=(0, *range(2, len(header))), header=shown, wrapping=(0,))
    found = [Section("Streaming", STREAM_CAPTION, header, rows, text, brief)]
    if cost_rows := stream_cost_rows(pivot):
        cost_brief = Brief(caption="stream: µs per call and per frame", columns=(0, 1, 3, 4))
        cost_header = STREAM_COST_HEADER
        found.append(Section("", STREAM_COST_CAPTION, cost_header, cost_rows, brief=cost_brief))
    return found


def outcomes(report: Report) -> list[Outcome]:
    """The stream's targets, judged on the run's first model."""
    return targets(report.pivot, STREAM_TARGETS)
