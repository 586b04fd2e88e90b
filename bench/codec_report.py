"""What coding costs (the contract's "Coding: the model as a codec"): each quantized model's
sequence sent and received as packets of bytes (``bench.codec_runs``), µs per frame beside the
same model's stream, the entropy coder's part alone, and its share held to ``CODER_SHARE`` on
the fastest framework route."""

from __future__ import annotations

from bench.analysis import Pivot, models_of
from bench.records import BYPASSED, CODEC, CODING, SIDES, STREAM, Key, Record
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
    "coder alone",
    "coder bypassed",
    "coder's share",
]
CAPTION = (
    "One sequence at B = 1 sent as packets of bytes, a chunk of frames a packet, with "
    "frae.codec's Encoder (the sender: encode, symbols, the entropy coder, the packet and "
    "its CRC) and received with its Decoder (the reverse, then decode), each run a fresh "
    "stream from the zero state; beside it the same model's stream (encode or decode alone, "
    "the state carried); the codec with its coder bypassed (each call answered with what the "
    "coder made); and the entropy coder alone on the same symbols and words (constriction's "
    "range coder, its models built once a stream), in a loop of its own, its caches warm. "
    "µs per frame, median. The coder's share is what it costs within the codec: 1 − "
    "bypassed / codec. The codec's model holds weights N(0, 1), whose codes spread over "
    "several symbols a frame as a trained model's do; its prior is fitted on another "
    "sequence's symbols."
)


def _share(pivot: Pivot, key: Key) -> float | None:
    """The coder's share of the codec at ``key``: 1 − bypassed / codec."""
    codec, bypassed = pivot.figure(key), pivot.figure(key.doing(BYPASSED))
    return None if not codec or bypassed is None else 1 - bypassed / codec


def codec_rows(records: list[Record]) -> Rows:
    """Each codec measurement of each quantized model, beside its stream, the codec with its
    coder bypassed and the coder alone."""
    rows = []
    models = [model for model in models_of(records) if is_quantized(records, model)]
    for model in models:
        pivot = Pivot.of(records, model)
        for key in [key for key in pivot.results if key.operation == CODEC]:
            figures = [pivot.figure(key.doing(op)) for op in (STREAM, *CODING)]
            named = key.variant if len(models) == 1 else f"{key.variant} ({model})"
            cells = [*map(fmt, figures), _percent(_share(pivot, key))]
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
            share = _share(pivot, fastest)
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
    brief = Brief(
        caption="what coding costs: µs per frame, the stream, the codec, the coder's share"
    )
    text = target + "\n".join(verdicts(records))
    return [Section("What coding costs", CAPTION, HEADER, rows, text, brief)]
