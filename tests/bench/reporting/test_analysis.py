"""``bench.reporting.analysis``: the pivot's floors, call and stream costs, and the readings to
doubt."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.comparing.pairs import Spread
from bench.records import DEFAULT_MODEL, RECEIVER, SENDER, STREAM, Key, Record, ResultRecord
from bench.reporting import analysis, tables
from bench.reporting.sections import call_cost, measurements, stream, summary
from tests.bench_cases import STREAMS, kept_calls, markdown, measured, on_models, terminal


def test_call_costs_split_a_call_into_per_call_and_per_step() -> None:
    """Times made as a line, a fixed cost plus a cost per step times T, come back as those
    two numbers; a second batch size and a variant measured at one T only are not fitted."""

    def record(variant: str, batch: int, steps: int, seconds: float) -> ResultRecord:
        return ResultRecord(variant, "predict", batch, steps, median_s=seconds)

    records = [record("line", 1, t, 300e-6 + 0.2e-6 * t) for t in (100, 1000, 10000)]
    records += [record("line", 256, t, 1.0) for t in (100, 1000)]
    records += [record("one_length", 1, 1000, 1e-3)]
    (cost,) = call_cost.call_costs(analysis.Pivot.of(records))
    assert (cost.variant, cost.batch, cost.steps) == ("line", 1, (100, 1000, 10000))
    assert cost.per_call_us == pytest.approx(300.0)
    assert cost.per_step_us == pytest.approx(0.2)


FLOOR_RECORDS = [
    measured("scalar", "floor", "predict", 1, 1000, 1.0),
    measured("scalar", "floor", "predict", 256, 1000, 10.0),
    measured("vector", "simd_floor", "predict", 1, 1000, 2.0),
    measured("vector", "simd_floor", "predict", 256, 1000, 4.0),
    measured("a", "compiled", "predict", 1, 1000, 3.0),
    measured("a", "compiled", "predict", 256, 1000, 8.0),
]
# Each case: records, the measurement whose ratio is read, the ratio expected.
FLOOR_CHOICES = {
    "B=1-over-the-scalar-floor-the-faster-there": (FLOOR_RECORDS, ("a", 1), 3.0),
    "B=1-over-the-simd-floor-where-it-is-the-faster": (
        [
            *(r for r in FLOOR_RECORDS if (r.role, r.batch) != ("simd_floor", 1)),
            measured("vector", "simd_floor", "predict", 1, 1000, 0.5),
        ],
        ("a", 1),
        6.0,
    ),
    "B=256-over-the-matrix-floor-where-it-is-the-fastest": (
        [*FLOOR_RECORDS, measured("gemm", "matrix_floor", "predict", 256, 1000, 1.0)],
        ("a", 256),
        8.0,
    ),
    "B=256-over-the-simd-floor": (FLOOR_RECORDS, ("a", 256), 2.0),
    "the-scalar-floor-itself-at-B=256": (FLOOR_RECORDS, ("scalar", 256), 2.5),
    "B=256-without-a-simd-floor-over-the-scalar-one": (
        [r for r in FLOOR_RECORDS if r.role != "simd_floor"],
        ("a", 256),
        0.8,
    ),
    "B=256-the-simd-floor-not-at-this-shape": (
        [r for r in FLOOR_RECORDS if (r.role, r.batch) != ("simd_floor", 256)],
        ("a", 256),
        0.8,
    ),
}


@pytest.mark.parametrize(
    ("records", "measurement", "ratio"), FLOOR_CHOICES.values(), ids=FLOOR_CHOICES
)
def test_the_fastest_floor_at_each_shape_divides(
    records: list[Record], measurement: tuple[str, int], ratio: float
) -> None:
    """×floor is over the fastest floor measured at the same operation and shape, whichever
    its role; the table of every measurement shows the same."""
    pivot = analysis.Pivot.of(records)
    name, batch = measurement
    key = Key(name, "predict", DEFAULT_MODEL, batch, 1000)
    assert pivot.floor_ratio(key) == pytest.approx(ratio)
    (row,) = [r for r in measurements.detail_rows(pivot) if (r[0], r[2]) == (name, str(batch))]
    assert row[measurements.DETAIL_HEADER.index("×floor")] == f"{ratio:.3g}"


def test_a_part_slower_than_its_whole_is_flagged() -> None:
    """keras_rnn's gradient timed slower than its training step, which runs that gradient:
    flagged in the tables and listed, in the report and the terminal."""
    records = [
        on_models(),
        measured("keras_rnn", "compiled", "predict", 1, 1000, 1.0),
        measured("keras_rnn", "compiled", "loss_and_grads", 1, 1000, 17.1),
        measured("keras_rnn", "compiled", "train_step", 1, 1000, 5.82),
        measured("steady", "compiled", "predict", 1, 1000, 1.0),
        measured("steady", "compiled", "loss_and_grads", 1, 1000, 3.0),
        measured("steady", "compiled", "train_step", 1, 1000, 4.0),
    ]
    flagged = analysis.flags(analysis.Pivot.of(records))
    key = Key("keras_rnn", "loss_and_grads", DEFAULT_MODEL, 1, 1000)
    assert list(flagged) == [key]
    assert "train step, which contains it" in flagged[key][0]
    rows = {row[0]: row for row in summary.summary_rows(analysis.Pivot.of(records))}
    assert rows["keras_rnn"][3].endswith(tables.FLAG) and not rows["steady"][3].endswith("!")
    assert "keras_rnn loss_and_grads B=1 T=1000" in terminal(records)
    assert "## Readings to doubt" in markdown(records)


def test_a_wide_spread_is_flagged_and_a_tight_one_is_not() -> None:
    records = [
        measured("noisy", "compiled", "predict", 1, 1000, 1.0, spread=0.6),
        measured("quiet", "compiled", "predict", 1, 1000, 1.0, spread=0.05),
    ]
    flagged = analysis.flags(analysis.Pivot.of(records))
    assert list(flagged) == [Key("noisy", "predict", DEFAULT_MODEL, 1, 1000)]
    assert "IQR 60%" in flagged[Key("noisy", "predict", DEFAULT_MODEL, 1, 1000)][0]


def test_a_figure_far_below_the_floor_is_flagged() -> None:
    """At width 64 a framework's matrix product ran 8× under the loop floor: the floor does
    not bound it there, and the reading says so rather than 'met, 25× to spare' alone."""
    records = [
        measured("floor", "floor", "predict", 1, 1000, 10.0),
        measured("blas", "compiled", "predict", 1, 1000, 1.2),
        measured("close", "compiled", "predict", 1, 1000, 9.0),
    ]
    flagged = analysis.flags(analysis.Pivot.of(records))
    assert list(flagged) == [Key("blas", "predict", DEFAULT_MODEL, 1, 1000)]
    assert "does not bound" in flagged[Key("blas", "predict", DEFAULT_MODEL, 1, 1000)][0]


def test_the_pivot_keys_each_side_and_chunk_length_apart() -> None:
    pivot = analysis.Pivot.of(STREAMS)
    keys = [k for k in pivot.results if k.variant == "fast" and k.operation == STREAM]
    assert {(k.side, k.chunk) for k in keys} == {
        (s, c) for s in (SENDER, RECEIVER) for c in (1, 10)
    }
    sender_one = Key("fast", STREAM, DEFAULT_MODEL, 1, 1000, SENDER, 1)
    assert pivot.figure(sender_one) == pytest.approx(21.0)
    assert pivot.floor_ratio(sender_one) == pytest.approx(17.5)  # the floor's side and chunk
    sender_ten = Key("fast", STREAM, DEFAULT_MODEL, 1, 1000, SENDER, 10)
    assert pivot.floor_ratio(sender_ten) == pytest.approx(10.0)
    # the stream is no point of the per-step split over T
    assert call_cost.timed_steps(pivot) == [1000]
    assert [c.operation for c in call_cost.call_costs(pivot)] == []


def test_a_call_splits_into_its_cost_per_call_and_per_frame() -> None:
    costs = {(c.variant, c.side): c for c in stream.stream_costs(analysis.Pivot.of(STREAMS))}
    fast = costs["fast", SENDER]
    assert (fast.per_call_us, fast.per_frame_us) == (pytest.approx(20.0), pytest.approx(1.0))
    assert fast.chunks == (1, 10)
    floor = costs["floor", RECEIVER]
    assert floor.per_call_us == pytest.approx(1.0) and floor.per_frame_us == pytest.approx(0.2)


def test_a_measurement_that_shared_its_core_is_flagged() -> None:
    shared = replace(measured("numba_floor", "floor", "predict", 1, 1000, 1.0), calls_s=[1e-3] * 4)
    records = [replace(shared, others_s=1e-3), replace(shared, variant="x", others_s=0.0)]
    found = analysis.flags(analysis.Pivot.of(records))
    assert [key.variant for key in found] == ["numba_floor"], found
    assert "25% of its CPU" in found[next(iter(found))][0]


def test_a_figure_without_calls_has_its_median_alone_for_a_spread() -> None:
    """``Pivot.spread_or_median``: the calls' spread where kept, the median where not, and
    nothing for a measurement that was not timed."""
    kept = kept_calls([1e-3, 2e-3, 3e-3], "kept", "predict", 1, 1000)
    median_only = measured("median", "compiled", "predict", 1, 1000, 4.0, spread=0.5)
    failed = replace(measured("failed", "compiled", "predict", 1, 1000, 1.0), median_s=None)
    pivot = analysis.Pivot.of([kept, median_only, failed])
    key = Key("kept", "predict", DEFAULT_MODEL, 1, 1000)
    assert pivot.spread_or_median(key) == pivot.spread(key) == Spread(2.0, 1.5, 2.5)
    assert pivot.spread_or_median(key.of("median")) == Spread(4.0, 4.0, 4.0)
    assert pivot.spread_or_median(key.of("failed")) is None
