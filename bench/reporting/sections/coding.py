"""What coding costs (the contract's "Coding: the model as a codec"): each quantized model's
sequence sent and received as packets of bytes (``bench.measuring.operations.codec``), µs per
frame beside the same model's stream, the entropy coder alone and bypassed; held to two
targets, one frame a packet at B = 1: a route's codec frame over its stream frame
(``STREAM_LIMITS``) and what a packet spends beyond its symbols' information (``OVERHEAD``)."""

from __future__ import annotations

from bench.comparing.pairs import Spread
from bench.records import BYPASSED, CODEC, CODING, SENDER, SIDES, STREAM, Key, Record
from bench.reporting.analysis import Pivot
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import Rows, fmt
from bench.reporting.targets import Target
from bench.reporting.verdicts import Outcome, verdict

STREAM_LIMITS = {"jax_scan": 1.5}
"""The most a route's codec frame may cost over its own stream frame (encode or decode alone,
the state carried), at each side, one frame a packet at B = 1: what sending bytes adds to the
model on the fastest framework route."""
OVERHEAD = Target(
    "packet_overhead",
    "a packet of one frame at B = 1, past the stream's opening, at most {limit:g} bits over "
    "its symbols' information under the prior, on average (the contract's promise)",
    16.0,
    CODEC,
    side=SENDER,
    chunk=1,
    shape=None,
)
"""Judged on every variant's packets: the largest mean overhead held to the limit."""
HEADER = [
    "variant",
    "side",
    "frames a packet",
    "stream µs/frame",
    "codec µs/frame",
    "coder alone",
    "coder bypassed",
    "coder's share",
    "codec / stream",
]
CAPTION = (
    "One sequence at B = 1 sent as packets of bytes, a chunk of frames a packet, with "
    "frae.codec's Encoder (the sender: encode, symbols, the entropy coder ended at the "
    "shortest length, the packet's byte) and received with its Decoder (the reverse, then "
    "decode), each run a fresh stream from the zero state; beside it the same model's stream "
    "(encode or decode alone, the state carried); the codec with its coder bypassed (each "
    "call of the coder answered with what it made: no range coder started, written, ended, "
    "opened or read); and the entropy coder alone on the same symbols and bytes "
    "(constriction's range coder, its models built once a stream), in a loop of its own, its "
    "caches warm. µs per frame, median. The coder's share is what it costs within the codec: "
    "1 − bypassed / codec. The codec's model holds weights N(0, 1), whose codes spread over "
    "several symbols a frame as a trained model's do; its prior is fitted on another "
    "sequence's symbols."
)


def _share(pivot: Pivot, key: Key) -> float | None:
    """The coder's share of the codec at ``key``: 1 − bypassed / codec."""
    codec, bypassed = pivot.figure(key), pivot.figure(key.doing(BYPASSED))
    return None if not codec or bypassed is None else 1 - bypassed / codec


def _over_stream(pivot: Pivot, key: Key) -> Spread | None:
    """The codec's µs per frame at ``key`` over its stream's, with the spread of the two
    together (each over its calls and rounds, or its median where it kept none): the low
    end the codec's low over the stream's high, the high end the other way round."""
    codec, stream = pivot.spread_or_median(key), pivot.spread_or_median(key.doing(STREAM))
    return None if codec is None or stream is None else codec.over_apart(stream)


def codec_rows(records: list[Record]) -> Rows:
    """Each codec measurement of each quantized model, beside its stream, the codec with its
    coder bypassed and the coder alone."""
    rows = []
    models = _quantized(records)
    for model in models:
        pivot = Pivot.of(records, model)
        for key in [key for key in pivot.results if key.operation == CODEC]:
            figures = [pivot.figure(key.doing(op)) for op in (STREAM, *CODING)]
            named = key.variant if len(models) == 1 else f"{key.variant} ({model})"
            ratio = _over_stream(pivot, key)
            cells = [*map(fmt, figures), _percent(_share(pivot, key))]
            cells.append("—" if ratio is None else f"{ratio.value:.3g}×")
            rows.append([named, str(key.side), str(key.chunk), *cells])
    return rows


def _quantized(records: list[Record]) -> list[str]:
    return Report(records).quantized()


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.1f} %"


def stream_verdicts(records: list[Record]) -> list[str]:
    """Each route of ``STREAM_LIMITS``: its codec frame over its stream frame, one frame a
    packet at B = 1, at each side of each quantized model, met or missed with the figures."""
    return [line for line, _ in _stream_judged(records)]


def _stream_judged(records: list[Record]) -> list[tuple[str, Outcome]]:
    """``stream_verdicts``' lines, each with its target judged."""
    lines = []
    for model in _quantized(records):
        pivot = Pivot.of(records, model)
        for variant, limit in STREAM_LIMITS.items():
            for side in SIDES:
                key = Key(variant, CODEC, model, 1, _frames(pivot), side, 1)
                if (ratio := _over_stream(pivot, key)) is None:
                    continue
                target = Target(f"{variant}_codec_{side}", "", limit, CODEC, variant=variant)
                said, met = verdict(target, {variant: ratio}, variant)
                codec, stream = pivot.figure(key), pivot.figure(key.doing(STREAM))
                measured = f"{fmt(codec)} / {fmt(stream)} µs a frame, {ratio.shown('×')}"
                line = f"- {model}, {variant}, {side}: {measured}, limit {limit:g}×: **{said}**"
                statement = f"{variant}'s codec frame ≤ {limit:g}× its stream frame ({side})"
                lines.append((line, Outcome(statement, measured, said, met)))
    return lines


def overheads(pivot: Pivot) -> dict[str, tuple[Spread, float]]:
    """Each variant's packets of one frame at B = 1 past the stream's opening: their mean
    bits beyond their symbols' information under the prior, and that information a frame."""
    found = {}
    for key, record in pivot.results.items():
        one_frame = (key.operation, key.side, key.chunk, key.batch) == (CODEC, SENDER, 1, 1)
        bits, information = record.packet_bits, record.information_bits
        if one_frame and bits is not None and information is not None:
            over = bits - information
            found[key.variant] = (Spread(over, over, over), information)
    return found


def overhead_verdicts(records: list[Record]) -> list[str]:
    """``OVERHEAD`` at each quantized model's Δ, on the largest of its variants' mean
    overheads: met or missed, beside the mean information a frame."""
    return [line for line, _ in _overhead_judged(records)]


def _overhead_judged(records: list[Record]) -> list[tuple[str, Outcome]]:
    """``overhead_verdicts``' lines, each with its target judged."""
    lines = []
    for model in _quantized(records):
        pivot = Pivot.of(records, model)
        if not (found := overheads(pivot)):
            continue
        worst = max(found, key=lambda variant: found[variant][0].value)
        said, met = verdict(OVERHEAD, {name: over for name, (over, _) in found.items()}, worst)
        over, information = found[worst]
        step = pivot.config.get("code_step")
        shown = {f"{spread.value:.2f}" for spread, _ in found.values()}
        of = worst if len(found) == 1 else f"alike on {len(found)} variants' packets"
        if len(shown) > 1:
            of = f"the largest of {len(found)} variants' packets: {worst}"
        measured = (
            f"{over.value:.2f} bits a packet over its frame's {information:.2f} bits of "
            f"information ({of})"
        )
        line = f"- Δ = {step:g} ({model}): {measured}, limit {OVERHEAD.limit:g} bits: **{said}**"
        lines.append((line, Outcome(f"{OVERHEAD.text()} (Δ = {step:g})", measured, said, met)))
    return lines


def _frames(pivot: Pivot) -> int:
    """The T of the pivot's codec measurements (the stream's)."""
    return next((key.steps for key in pivot.results if key.operation == CODEC), 0)


def sections(report: Report) -> list[Section]:
    """What coding costs, where the run measured the codec."""
    records = report.records
    if not (rows := codec_rows(records)):
        return []
    routes = ", ".join(f"{name}'s at most {limit:g}×" for name, limit in STREAM_LIMITS.items())
    text = [
        f"Target: a route's codec frame over its stream frame, one frame a packet at B = 1, "
        f"at each side: {routes}.\n",
        *(stream_verdicts(records) or ["- not measured in this run"]),
        f"\nTarget: {OVERHEAD.text()}.\n",
        *(overhead_verdicts(records) or ["- not measured in this run"]),
    ]
    brief = Brief(
        caption="what coding costs: µs per frame, the stream, the codec, the coder's share"
    )
    return [Section("What coding costs", CAPTION, HEADER, rows, "\n".join(text), brief)]


def outcomes(report: Report) -> list[Outcome]:
    """The codec's targets judged: each route's codec frame over its stream frame, and a
    packet's overhead."""
    judged = _stream_judged(report.records) + _overhead_judged(report.records)
    return [outcome for _, outcome in judged]
