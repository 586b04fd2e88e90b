"""``bench.reporting.sections.coding``: what coding costs, each codec figure beside the
stream's, and its targets judged: a route's codec frame over its stream frame and a packet's
bits beyond its symbols' information (the runs themselves:
tests/bench/measuring/operations/test_codec.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import frae
from bench.grid import quick_grid, wide_models, with_codec, with_quantized
from bench.records import (
    BYPASSED,
    CODEC,
    CODER,
    SENDER,
    SIDES,
    STREAM,
    Listing,
    Point,
    ResultRecord,
    from_json,
    to_json,
)
from bench.reporting.sections.coding import (
    OVERHEAD,
    STREAM_LIMITS,
    codec_rows,
    overhead_verdicts,
    stream_verdicts,
)
from bench.roles import Role
from bench.variant import Variant
from tests.bench_cases import markdown, run_record, streamed

pytest.importorskip("constriction")

QUANTIZED = "default Δ=2^-6"
CONFIG = frae.FRAEConfig(code_step=2**-6)


def test_the_codec_runs_where_a_quantized_model_streams_on_a_point_of_its_own() -> None:
    models = {"default": frae.FRAEConfig(), **wide_models()}
    assert with_codec(quick_grid(), models) == quick_grid(), "no quantized model, no codec"
    grid, models = with_quantized(quick_grid(), models, 2**-6)
    coded = [point for point in with_codec(grid, models) if CODEC in point.operations]
    assert coded == [Point(QUANTIZED, 1, 1000, (CODEC,))]


def test_a_variant_offering_the_codec_streams() -> None:
    with pytest.raises(ValueError, match="without 'stream'"):
        Variant("odd", "reference", Role.BASELINE, "x", operations=(CODEC,), no_stream="no")


def test_a_packets_size_survives_its_record_and_an_older_line_has_none() -> None:
    record = replace(streamed("fast", Role.COMPILED, SENDER, 1, 50.0), operation=CODEC)
    weighed = replace(record, packet_bits=44.5, information_bits=36.25)
    assert from_json(to_json(weighed)) == weighed
    older = from_json(to_json(record))
    assert isinstance(older, ResultRecord) and older.packet_bits is None


LISTINGS = {
    "jax_scan": Listing("jax_scan", Role.COMPILED, "scan"),
    "tf_while": Listing("tf_while", Role.COMPILED, "while"),
}


def _timed(variant: str, operation: str, side: str, us: float, chunk: int = 1) -> ResultRecord:
    record = streamed(variant, LISTINGS[variant].role, side, chunk, us)
    return replace(record, operation=operation, model=QUANTIZED)


def _records(codec_us: float, *, spread: float = 0.0, **sizes: float) -> list:
    """jax_scan's stream at 30 µs a frame and its codec at ``codec_us``, its calls
    ``spread`` (a fraction) apart; tf_while's codec at twice its stream. The sender's codec
    records carry ``sizes``."""
    point = Point(QUANTIZED, 1, 1000, (STREAM, CODEC))
    records: list = [run_record(LISTINGS, [point], {QUANTIZED: CONFIG})]
    calls = np.array([1 - spread, 1 - spread / 2, 1, 1 + spread / 2, 1 + spread]) * codec_us
    for side in SIDES:
        codec = _timed("jax_scan", CODEC, side, codec_us)
        codec = replace(codec, calls_s=list(calls * 1e-3), steps_per_sample=1)
        records += [
            _timed("jax_scan", STREAM, side, 30.0),
            replace(codec, **sizes) if side == SENDER else codec,
            _timed("jax_scan", BYPASSED, side, codec_us - 5),
            _timed("jax_scan", CODER, side, 2.0),
            _timed("tf_while", STREAM, side, 100.0),
            _timed("tf_while", CODEC, side, 200.0),
        ]
    return records


@pytest.mark.parametrize(
    ("codec_us", "spread", "said"),
    [
        (39.0, 0.0, "met, 1.15× to spare"),
        (60.0, 0.0, "missed by 1.33×"),
        (45.0, 0.1, "within the spread: 1.43–1.58 against 1.5"),
    ],
)
def test_the_codec_frame_is_judged_over_the_routes_stream_frame(
    codec_us: float, spread: float, said: str
) -> None:
    """jax_scan's codec over its stream at each side, one frame a packet: 39 / 30 µs meets
    1.5×, 60 / 30 misses it, and 45 / 30 with its quartiles 5 % either side of the median
    is within the spread; tf_while, at twice its stream, has no limit of its own."""
    assert STREAM_LIMITS == {"jax_scan": 1.5}
    lines = stream_verdicts(_records(codec_us, spread=spread))
    assert [line.split(",")[2].split(":")[0].strip() for line in lines] == list(SIDES)
    assert all("jax_scan" in line and f"**{said}**" in line for line in lines), lines
    row = next(
        row for row in codec_rows(_records(codec_us)) if row[:3] == ["jax_scan", SENDER, "1"]
    )
    assert row[3:5] == ["30", f"{codec_us:g}"] and row[-1] == f"{codec_us / 30:.3g}×"
    tf_row = next(row for row in codec_rows(_records(codec_us)) if row[0] == "tf_while")
    assert tf_row[-1] == "2×" and tf_row[-2] == "—"


@pytest.mark.parametrize(
    ("packet_bits", "said"), [(45.0, "met, 1.60× to spare"), (57.0, "missed by 1.38×")]
)
def test_a_packets_overhead_is_judged_at_the_models_step(packet_bits: float, said: str) -> None:
    """A packet of 45 bits whose frame holds 35 of information spends 10 beyond it, which
    meets 16 bits; one of 57 spends 22, which misses it; quoted at Δ beside the information."""
    records = _records(40.0, packet_bits=packet_bits, information_bits=35.0)
    (line,) = overhead_verdicts(records)
    over = packet_bits - 35.0
    assert line.startswith(f"- Δ = {CONFIG.code_step:g} ({QUANTIZED}): {over:.2f} bits")
    assert "35.00 bits of information" in line and f"**{said}**" in line, line
    text = markdown(records)
    assert "## What coding costs" in text and "What rounding costs" not in text
    assert OVERHEAD.text() in text and line in text and stream_verdicts(records)[0] in text


def test_the_largest_overhead_of_the_variants_is_judged() -> None:
    """Two variants' packets: the larger overhead, 20 bits, misses the limit, named."""
    tf_while_sender = _timed("tf_while", CODEC, SENDER, 200.0).key
    sizes = {"packet_bits": 55.0, "information_bits": 35.0}
    records = [
        replace(r, **sizes) if getattr(r, "key", None) == tf_while_sender else r
        for r in _records(40.0, packet_bits=40.0, information_bits=35.0)
    ]
    (line,) = overhead_verdicts(records)
    assert "20.00 bits" in line and "of 2 variants' packets: tf_while" in line, line
    assert "**missed" in line
    alike = [replace(r, **sizes) if getattr(r, "operation", None) == CODEC else r for r in records]
    (line,) = overhead_verdicts(alike)
    assert "alike on 2 variants' packets" in line


def test_without_sizes_the_overhead_is_not_measured() -> None:
    text = markdown(_records(40.0))
    assert overhead_verdicts(_records(40.0)) == []
    assert text.count("- not measured in this run") == 1
