"""``bench.reporting.tables``: autodiff's price and the devices axis by listing; call costs; the
stream."""

from __future__ import annotations

from dataclasses import replace

from bench.records import RECEIVER, SENDER, STREAM, Listing, ResultRecord, RunRecord
from bench.reporting import analysis
from bench.reporting.analysis import Pivot
from bench.reporting.sections import call_cost, stream
from bench.reporting.sections.autodiff import autodiff_rows
from bench.reporting.sections.data_parallel import devices_rows
from bench.reporting.sections.routes import routes_rows
from tests.bench_cases import STREAMS, measured, run_record


def listed(**variants: Listing) -> RunRecord:
    """The run's record listing ``variants``."""
    return RunRecord("now", "python -m bench", {}, [], {}, variants)


def compiled(name: str) -> Listing:
    return Listing(name, "compiled", f"about {name}")


def by_hand(name: str, twin_of: str) -> Listing:
    return Listing(name, "by_hand", f"{twin_of} by hand", twin_of=twin_of)


FIGURES: list[ResultRecord] = [
    measured("jax_scan", "compiled", "loss_and_grads", 1, 1000, 3.0),
    measured("jax_scan", "compiled", "train_step", 1, 1000, 4.0),
    measured("jax_scan_bptt", "by_hand", "loss_and_grads", 1, 1000, 2.0),
    measured("jax_scan_bptt", "by_hand", "train_step", 1, 1000, 5.0),
    measured("tf_while", "compiled", "loss_and_grads", 1, 1000, 9.0),
]


def test_the_price_of_autodiff_pairs_each_backend_with_its_hand_written_backward() -> None:
    """A row per framework and B: autodiff's figure, its twin's, and their ratio; a backend
    without a hand-written twin gets no row."""
    run = listed(
        jax_scan=compiled("jax_scan"),
        jax_scan_bptt=by_hand("jax_scan_bptt", "jax_scan"),
        tf_while=compiled("tf_while"),
    )
    assert autodiff_rows(Pivot.of([run, *FIGURES])) == [
        ["jax_scan", "1", "3", "2", "1.5×", "4", "5", "0.8×"]
    ]


def test_the_twin_is_read_from_the_listing_not_the_name() -> None:
    """A twin under a name without ``_bptt`` is paired; a ``_bptt`` name without a recorded
    twin is not."""
    renamed = [
        replace(r, variant="custom_vjp") if r.variant == "jax_scan_bptt" else r for r in FIGURES
    ]
    run = listed(jax_scan=compiled("jax_scan"), custom_vjp=by_hand("custom_vjp", "jax_scan"))
    (row,) = autodiff_rows(Pivot.of([run, *renamed]))
    assert row[:5] == ["jax_scan", "1", "3", "2", "1.5×"]
    unlisted = listed(jax_scan=compiled("jax_scan"), jax_scan_bptt=compiled("jax_scan_bptt"))
    assert autodiff_rows(Pivot.of([unlisted, *FIGURES])) == []


ONE = Listing("jax_scan", "compiled", "jax.lax.scan")
SPLIT = Listing("jax_scan", "devices", "split over 4", devices=4, of="jax_scan")


def test_a_data_parallel_step_is_shown_beside_the_same_step_on_one_device() -> None:
    """One row per shape the data-parallel variant trained at: one device, N, their ratio;
    its other operations are not rows."""
    records = [
        run_record({"jax_scan": ONE, "the split one": SPLIT}),
        measured("jax_scan", "compiled", "train_step", 256, 1000, 10.0),
        measured("jax_scan", "compiled", "train_step", 1, 1000, 99.0),
        measured("the split one", "devices", "train_step", 256, 1000, 25.0),
        measured("the split one", "devices", "predict", 256, 1000, 1.0),
    ]
    assert devices_rows(Pivot.of(records)) == [["jax_scan", "4", "256", "1000", "10", "25", "2.5×"]]


def test_a_variant_without_its_devices_recorded_has_no_row() -> None:
    """A name saying "on 2 devices" is not read for its meaning: without ``of`` and
    ``devices`` in the listing there is nothing to pair."""
    unrecorded = Listing("jax_scan", "devices", "split")
    records = [
        run_record({"jax_scan": ONE, "jax_scan on 2 devices": unrecorded}),
        measured("jax_scan", "compiled", "train_step", 256, 1000, 10.0),
        measured("jax_scan on 2 devices", "devices", "train_step", 256, 1000, 25.0),
    ]
    assert devices_rows(Pivot.of(records)) == []


def test_no_split_through_two_lengths() -> None:
    """Two T give a line whatever the times: a negative cost per step once came from such a
    line. Now no split, and the report says why."""
    records = [
        measured("keras", "compiled", "predict", 1, 100, 50.0),
        measured("keras", "compiled", "predict", 1, 1000, 4.0),
    ]
    pivot = analysis.Pivot.of(records)
    assert call_cost.call_costs(pivot) == [] and call_cost.call_cost_rows(pivot) == []
    assert "not enough points" in (call_cost.unsplit_reason(pivot) or "")
    three = [*records, measured("keras", "compiled", "predict", 1, 10_000, 4.0)]
    assert call_cost.unsplit_reason(analysis.Pivot.of(three)) is None


def test_no_split_where_the_line_misses_a_measurement() -> None:
    """Three T that no line fits within ``FIT_TOLERANCE`` get no figures, only why."""
    records = [
        measured("bent", "compiled", "predict", 1, 100, 10.0),
        measured("bent", "compiled", "predict", 1, 1000, 1.0),
        measured("bent", "compiled", "predict", 1, 10_000, 10.0),
    ]
    (row,) = call_cost.call_cost_rows(analysis.Pivot.of(records))
    assert row[3].startswith("poor fit") and row[4] == "—"
    straight = [
        measured("line", "compiled", "predict", 1, t, 300 / t + 0.2) for t in (100, 1000, 10_000)
    ]
    (row,) = call_cost.call_cost_rows(analysis.Pivot.of(straight))
    assert row[3] == "300" and row[4].startswith("0.2")


def test_a_negative_fixed_cost_is_not_printed() -> None:
    """A line that fits but crosses below zero at T = 0 has no fixed cost to show."""
    records = [
        measured("fast", "compiled", "predict", 1, t, 1 - 20 / t) for t in (100, 1000, 10_000)
    ]
    (row,) = call_cost.call_cost_rows(analysis.Pivot.of(records))
    assert row[3] == "below resolution" and not row[3].startswith("-")


def test_the_stream_table_has_each_side_at_each_chunk_length_beside_the_floor() -> None:
    pivot = analysis.Pivot.of(STREAMS)
    columns = ["sender, chunk 1", "sender, chunk 10", "receiver, chunk 1", "receiver, chunk 10"]
    assert stream.stream_header(pivot) == ["variant", "role", *columns]
    rows = {row[0]: row for row in stream.stream_rows(pivot)}
    assert rows.keys() == {"floor", "fast"}
    assert rows["fast"] == ["fast", "compiled", "21 (17.5×)", "3 (10×)", "21 (17.5×)", "3 (10×)"]
    cost_rows = {(row[0], row[1]): row for row in stream.stream_cost_rows(pivot)}
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
    assert stream.unstreamed(pivot) == ["- `check`: predict alone", "- `old`: no state"]
    assert stream.stream_rows(pivot)[-1][2:] == ["unsupported"] * 4


def test_a_route_and_its_defaults_are_set_side_by_side_from_their_turns() -> None:
    """The defaults' calls over the route's, taken in turn: the median of the ratios."""
    from dataclasses import replace as replaced

    from bench.records import Listing
    from bench.reporting.analysis import Pivot
    from tests.bench_cases import kept_calls, run_record

    route = kept_calls([1.0, 1.0, 1.0], "tf_while", steps=1)
    defaults = kept_calls(
        [2.0, 3.0, 4.0], "tf_while[defaults]", partners_s={"tf_while": [1.0, 1.0, 2.0]}
    )
    run = run_record()
    listed = {"tf_while[defaults]": Listing("tf_while", "baseline", "d", beside="tf_while")}
    run = replaced(run, variants={**run.variants, **listed})
    (row,) = routes_rows(Pivot.of([run, route, defaults]))
    assert row[:3] == ["tf_while", "tf_while[defaults]", "predict"]
    assert row[-1].startswith("2×"), row
