"""What coding costs (the contract's "Coding: the model as a codec"): each quantized model's
sequence sent and received as packets of bytes (``bench.codec_runs``), µs per frame beside the
same model's stream, the entropy coder's part alone, and its share held to ``CODER_SHARE`` on
the fastest framework route."""

from __future__ import annotations

from bench.analysis import Pivot, models_of
from bench.records import CODEC, CODER, SIDES, STREAM, Key, Record
from bench.render import Brief, Section
from bench.roles import ROUTES
from bench.rounding import is_quantized
from bench.tables import Rows, fmt

CODER_SHARE = 0.10
"""The most of a frame's cost through packets the entropy coder may take, one frame a packet,
on the fastest framework route (at each side)."""
HEADER = [
    "variant",
    "side",
    "frames a packet",
    "stream µs/frame",
    "codec µs/frame",
    "coder µs/frame",
    "coder's share",
]
CAPTION = (
    "One sequence at B = 1 sent as packets of bytes, a chunk of frames a packet, with "
    "frae.codec's Encoder (the sender: encode, symbols, the entropy coder, the packet and "
    "its CRC) and received with its Decoder (the reverse, then decode), each run a fresh "
    "stream from the zero state; beside it the same model's stream (encode or decode alone, "
    "the state carried) and the entropy coder alone on the same symbols and words "
    "(constriction's range coder, its models built once a stream). µs per frame, median. "
    "The codec's model holds weights N(0, 1), whose codes spread over several symbols a "
    "frame as a trained model's do; its prior is fitted on another sequence's symbols."
)


def codec_rows(records: list[Record]) -> Rows:
    """Each codec measurement of each quantized model, beside its stream and its coder."""
    rows = []
    models = [model for model in models_of(records) if is_quantized(records, model)]
    for model in models:
        pivot = Pivot.of(records, model)
        for key, result in pivot.results.items():
            if key.operation != CODEC:
                continue
            codec, coder = result.us_per_step, pivot.figure(key._replace(operation=CODER))
            share = coder / codec if codec and coder else None
            stream = pivot.figure(key._replace(operation=STREAM))
            named = key.variant if len(models) == 1 else f"{key.variant} ({model})"
            cells = [fmt(stream), fmt(codec), fmt(coder), _percent(share)]
            rows.append([named, str(key.side), str(key.chunk), *cells])
    return rows


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.1f} %"


def verdicts(records: list[Record]) -> list[str]:
    """The coder's share on the fastest framework route, one frame a packet, at each side of
    each quantized model: met or missed, with the figures."""
    lines = []
    for model in [model for model in models_of(records) if is_quantized(records, model)]:
        pivot = Pivot.of(records, model)
        routes = [name for name, role in pivot.roles.items() if role in ROUTES]
        for side in SIDES:
            codec = {
                key: figure
                for name in routes
                for key in [Key(name, CODEC, model, 1, _frames(pivot), side, 1)]
                if (figure := pivot.figure(key)) is not None
            }
            if not codec:
                continue
            fastest = min(codec, key=codec.__getitem__)
            coder = pivot.figure(fastest._replace(operation=CODER))
            share = None if coder is None else coder / codec[fastest]
            met = "**met**" if share is not None and share <= CODER_SHARE else "**missed**"
            lines.append(
                f"- {model}, {side}: the coder {_percent(share)} of {fmt(codec[fastest])} µs "
                f"a frame on the fastest framework route ({fastest.variant}), "
                f"limit {100 * CODER_SHARE:g} %: {met}"
            )
    return lines


def _frames(pivot: Pivot) -> int:
    """The T of the pivot's codec measurements (the stream's)."""
    return next((key.steps for key in pivot.results if key.operation == CODEC), 0)


def codec_sections(records: list[Record]) -> list[Section]:
    """What coding costs, where the run measured the codec."""
    if not (rows := codec_rows(records)):
        return []
    target = (
        f"Target: the entropy coder at most {100 * CODER_SHARE:g} % of a frame's cost through "
        "packets, one frame a packet, on the fastest framework route:\n\n"
    )
    brief = Brief(caption="what coding costs: µs per frame, the stream, the codec, the coder")
    text = target + "\n".join(verdicts(records))
    return [Section("What coding costs", CAPTION, HEADER, rows, text, brief)]
