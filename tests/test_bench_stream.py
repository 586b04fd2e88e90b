"""The benchmark's stream: one sequence sent a chunk at a time through ``encode`` at the
sender and ``decode`` at the receiver, the state carried from call to call. The worker's
records of it, the pivot, tables, plot, targets, grid, diff and report that follow them; a
run without it reports none. No framework compiles here and no timing is asserted."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from bench import analysis, plots, tables
from bench.job import Job, Settings
from bench.records import (
    DEFAULT_MODEL,
    RECEIVER,
    SENDER,
    STREAM,
    Key,
    Listing,
    Point,
    Record,
    ResultRecord,
)
from bench.targets import STREAM_TARGETS, Target
from frae.data import multi_sine
from impls.reference import ReferenceBackend
from tests.bench_cases import measured, run_record, streamed

TINY = Settings(repeats=2, min_time_s=0.0, budget_s=0.0, max_samples=2)
"""Two timed runs of a side: enough for quartiles, fast on the reference."""


class EncodeNotOffered(ReferenceBackend):
    """A backend without ``encode`` and ``decode``: its stream is unsupported."""

    def _encode(self, x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError("this backend predicts alone")


# The worker ---------------------------------------------------------------------------------


def test_the_worker_streams_the_reference_at_each_side_and_chunk_length() -> None:
    from bench.grid import STREAM_CHUNKS
    from bench.worker import measure_shape

    job = Job(variant="reference", backend="reference", settings=TINY)
    rows = list(measure_shape(job, Point("default", 1, 20, (STREAM,))))
    expected = [(side, chunk) for side in (SENDER, RECEIVER) for chunk in STREAM_CHUNKS]
    assert [(r.side, r.chunk) for r in rows] == expected
    for r in rows:
        assert (r.operation, r.batch, r.steps, r.samples, r.steps_per_sample) == (
            STREAM,
            1,
            20,
            2,
            1,
        )
        assert r.q1_s is not None and r.median_s is not None and r.q3_s is not None
        assert 0 < r.q1_s <= r.median_s <= r.q3_s and r.first_call_s, r
        assert r.us_per_step == pytest.approx(r.median_s / 20 * 1e6)  # µs per frame


def test_a_backend_that_cannot_stream_gets_every_row_with_why() -> None:
    from bench.worker import measure_shape

    job = Job(variant="no", backend="tests.test_bench_stream:EncodeNotOffered", settings=TINY)
    rows = list(measure_shape(job, Point("default", 1, 20, (STREAM,))))
    assert len(rows) == 4 and {r.unsupported for r in rows} == {"this backend predicts alone"}
    assert all(r.median_s is None and r.side and r.chunk for r in rows)


def test_the_streamed_runs_carry_the_state_from_call_to_call() -> None:
    """Each side's run ends at the state one whole call ends at; a chunk length that does not
    divide T leaves a shorter last chunk."""
    from bench.worker import pieces, streams

    model = frae.create("reference", frae.FRAEConfig(feedback="state", state_dim=3), seed=1)
    x = multi_sine(batch=1, steps=23, features=2, seed=0)
    codes, sent = model.encode(x, return_state=True)
    _, received = model.decode(codes, return_state=True)
    for stream in streams(model, x, codes, chunks=(1, 10)):
        last = stream.run()
        np.testing.assert_allclose(last, sent if stream.side == SENDER else received, rtol=1e-12)
    cut = pieces(x, 10)
    assert [piece.shape[1] for piece in cut] == [10, 10, 3]
    assert all(piece.flags.c_contiguous for piece in cut)
    np.testing.assert_array_equal(np.concatenate(cut, axis=1), x)


# The records and the pivot -------------------------------------------------------------------


STREAMS: list[Record] = [
    *(
        streamed("floor", "floor", side, chunk, us)
        for side in (SENDER, RECEIVER)
        for chunk, us in ((1, 1.2), (10, 0.3))
    ),
    # 20 µs a call and 1 µs a frame: 21 µs a frame one at a time, 3 in chunks of ten
    *(
        streamed("fast", "compiled", side, chunk, us)
        for side in (SENDER, RECEIVER)
        for chunk, us in ((1, 21.0), (10, 3.0))
    ),
    measured("fast", "compiled", "predict", 1, 1000, 5.0),
]


def test_the_pivot_keys_each_side_and_chunk_length_apart() -> None:
    pivot = analysis.Pivot.of(STREAMS)
    keys = [k for k in pivot.results if k.variant == "fast" and k.operation == STREAM]
    assert {(k.side, k.chunk) for k in keys} == {
        (s, c) for s in (SENDER, RECEIVER) for c in (1, 10)
    }
    sender_one = Key("fast", STREAM, DEFAULT_MODEL, 1, 1000, SENDER, 1)
    assert pivot.figure(sender_one) == pytest.approx(21.0)
    assert pivot.floor_ratio(sender_one) == pytest.approx(17.5)  # the floor's side and chunk
    assert pivot.floor_ratio(
        Key("fast", STREAM, DEFAULT_MODEL, 1, 1000, SENDER, 10)
    ) == pytest.approx(10.0)
    # the stream is no point of the per-step split over T
    assert analysis.timed_steps(pivot) == [1000]
    assert [c.operation for c in analysis.call_costs(pivot)] == []


def test_a_call_splits_into_its_cost_per_call_and_per_frame() -> None:
    costs = {(c.variant, c.side): c for c in analysis.stream_costs(analysis.Pivot.of(STREAMS))}
    fast = costs["fast", SENDER]
    assert (fast.per_call_us, fast.per_frame_us) == (pytest.approx(20.0), pytest.approx(1.0))
    assert fast.chunks == (1, 10)
    floor = costs["floor", RECEIVER]
    assert floor.per_call_us == pytest.approx(1.0) and floor.per_frame_us == pytest.approx(0.2)


def test_the_stream_table_has_each_side_at_each_chunk_length_beside_the_floor() -> None:
    pivot = analysis.Pivot.of(STREAMS)
    assert tables.stream_header(pivot) == [
        "variant",
        "role",
        "sender, chunk 1",
        "sender, chunk 10",
        "receiver, chunk 1",
        "receiver, chunk 10",
    ]
    rows = {row[0]: row for row in tables.stream_rows(pivot)}
    assert rows.keys() == {"floor", "fast"}
    assert rows["fast"] == ["fast", "compiled", "21 (17.5×)", "3 (10×)", "21 (17.5×)", "3 (10×)"]
    cost_rows = {(row[0], row[1]): row for row in tables.stream_cost_rows(pivot)}
    assert cost_rows["fast", SENDER] == ["fast", SENDER, "1, 10", "20", "1 (5×)"]


def test_what_did_not_stream_is_listed_with_why() -> None:
    """A variant listed without the stream, and one whose stream was refused at every side
    and chunk length (said once)."""
    refused = [
        ResultRecord("old", STREAM, 1, 1000, "compiled", side=s, chunk=c, unsupported="no state")
        for s in (SENDER, RECEIVER)
        for c in (1, 10)
    ]
    run = run_record({"check": Listing("c_forward", "check", "C", no_stream="predict alone")})
    pivot = analysis.Pivot.of([run, *STREAMS, *refused])
    assert tables.unstreamed(pivot) == ["- `check`: predict alone", "- `old`: no state"]
    assert tables.stream_rows(pivot)[-1][2:] == ["unsupported"] * 4


def test_the_stream_plot_draws_frames_per_call_on_each_side() -> None:
    panels = plots.stream_panels(analysis.Pivot.of(STREAMS))
    assert list(panels) == [SENDER, RECEIVER]
    assert sorted(panels[SENDER]["fast"]) == [(1, pytest.approx(21.0)), (10, pytest.approx(3.0))]


# The targets --------------------------------------------------------------------------------


def stream_target(name: str) -> Target:
    """The stream's target called ``name``."""
    (found,) = [target for target in STREAM_TARGETS if target.name == name]
    return found


ROUTES = [
    streamed("floor", "floor", SENDER, 1, 0.5),
    streamed("floor", "floor", SENDER, 10, 1.0),
    streamed("oracle", "reference", SENDER, 1, 1.0),  # no framework route
    streamed("oracle", "reference", SENDER, 10, 1.0),
    streamed("a", "compiled", SENDER, 1, 12.0),
    streamed("a", "compiled", SENDER, 10, 2.5),
    streamed("b", "compiled", SENDER, 1, 150.0),
    streamed("b", "compiled", SENDER, 10, 50.0),
    streamed("route", "baseline", SENDER, 1, 40.0),
    streamed("route", "baseline", SENDER, 10, 4.0),
]
EAGER = [*ROUTES, streamed("eager", "baseline", SENDER, 1, 8.0)]
# Each case: (id, target, records, verdict, met, what the measured column shows).
STREAM_VERDICTS = [
    ("best-not-floor-nor-oracle", "sender_frame_best", ROUTES, "missed by 1.20×", False, "a 12 µs"),
    ("best-of-all", "sender_frame_best", EAGER, "met, 1.25× to spare", True, "(best: eager)"),
    ("every-missed-by-worst", "sender_frame_every", ROUTES, "missed by 1.50×", False, "(worst: b)"),
    ("chunks-over-floor", "sender_chunk_best", ROUTES, "met, 1.20× to spare", True, "a 2.5×"),
    ("receiver-apart", "receiver_frame_best", ROUTES, "not measured", None, "not measured"),
]


@pytest.mark.parametrize(
    ("case", "name", "records", "verdict", "met", "shown"),
    STREAM_VERDICTS,
    ids=[case[0] for case in STREAM_VERDICTS],
)
def test_a_stream_targets_verdict_follows_the_figures(
    case: str, name: str, records: list[Record], verdict: str, met: bool | None, shown: str
) -> None:
    from bench.verdicts import judge

    outcome = judge(stream_target(name), analysis.Pivot.of(records))
    assert (outcome.verdict, outcome.met) == (verdict, met), outcome
    assert shown in outcome.measured and "oracle" not in outcome.measured, outcome


def test_where_the_stream_targets_come_from_is_written_from_their_limits() -> None:
    from dataclasses import replace

    from bench.targets import STREAM_TARGETS_ORIGIN, stream_origin

    assert "is asked 10 µs at each side and 2× at each side the floor's frame" in (
        STREAM_TARGETS_ORIGIN
    )
    assert "**every compiled backend** 100 µs at each side" in STREAM_TARGETS_ORIGIN
    assert "In chunks of 10 frames" in STREAM_TARGETS_ORIGIN and "at most 3× at" in (
        STREAM_TARGETS_ORIGIN
    )
    changed = tuple(
        replace(t, limit=12.0) if t.name == "receiver_frame_best" else t for t in STREAM_TARGETS
    )
    assert "10 µs at the sender and 12 µs at the receiver" in stream_origin(changed)


# The grid and the catalogue ------------------------------------------------------------------


def test_every_variant_that_can_stream_streams_in_both_grids() -> None:
    from bench.catalogue import VARIANTS
    from bench.grid import STREAM_POINT, default_grid, points_for, quick_grid

    for grid in (default_grid(), quick_grid()):
        assert STREAM_POINT in grid
        for variant in VARIANTS:
            streams = any(STREAM in p.operations for p in points_for(variant, grid, Settings()))
            assert streams == (variant.no_stream is None), variant.name
    left_out = {v.name for v in VARIANTS if v.no_stream}
    assert {"c_forward", "jax_scan_bptt", "keras_defaults[jax]"} <= left_out
    assert not {"numba_floor", "jax_scan", "torch_scan", "reference"} & left_out


def test_a_variant_without_the_stream_must_say_why() -> None:
    from bench.catalogue import Variant
    from bench.roles import Role

    with pytest.raises(ValueError, match="no_stream"):
        Variant("quiet", "reference", Role.BASELINE, "no reason", operations=("predict",))
    with pytest.raises(ValueError, match="no_stream"):
        Variant("both", "reference", Role.BASELINE, "streams", no_stream="it does not")


# A run without the stream, and the diff and the report of one with it ---------------------


def test_a_run_without_the_stream_reports_no_stream() -> None:
    """A run that measured no stream reports none, and judges the stream's targets not
    measured."""
    from bench import render, report

    listing = Listing("reference", "baseline", "ref")
    grid = [Point("default", 1, 1000, ("predict",))]
    run = run_record({"reference": listing}, grid)
    records = [run, measured("reference", "baseline", "predict", 1, 1000, 40.0)]
    pivot = analysis.Pivot.of(records)
    assert tables.stream_rows(pivot) == [] and report.stream_sections(pivot) == []
    from bench.verdicts import stream_targets

    assert all(not outcome.judged for outcome in stream_targets(pivot))
    text = render.markdown(report.sections(records))
    assert "## Streaming" not in text and "Where the stream's targets come from" in text


def test_a_diff_pairs_streams_by_side_and_chunk_length() -> None:
    from bench import diff

    keys = {r.key for r in STREAMS if isinstance(r, ResultRecord)}
    assert len(keys) == len(STREAMS)
    run = run_record()
    old, new = (
        diff.Run(run, {r.key: r for r in STREAMS if isinstance(r, ResultRecord)}),
        diff.Run(run, {}),
    )
    text = diff.render(old, new, diff.compare(old, new), markdown=True)
    assert "| stream sender, chunk 10 " in text


def test_the_report_streams_in_a_section_of_its_own_and_judges_the_streams_targets() -> None:
    """The Streaming section and its split; the summary keeps its columns; the stream's
    targets are in the Targets section, where they come from with them."""
    from bench import render, report

    run = run_record()
    drawn = report.sections([run, *STREAMS])
    text, brief = render.markdown(drawn), render.terminal(drawn)
    assert "## Streaming" in text and "| fast      | compiled | 21 (17.5×)" in text
    assert text.index("## Targets") < text.index("## Streaming") < text.index("## Variants")
    assert "Where the stream's targets come from" in text
    assert "the best framework route streams a frame in ≤ 10 µs" in text
    (summary,) = [section for section in drawn if section.title.startswith("Summary")]
    assert all(len(row) == len(summary.header) for row in summary.rows)
    assert "stream, B=1: µs per frame" in brief and "sender 10" in brief
    assert max(len(line) for line in brief.splitlines()) <= render.WIDTH
