"""``bench.records``: records survive their JSON lines; a format not read is refused, named."""

from __future__ import annotations

import json

import pytest

from bench.measuring.job import QUICK_SETTINGS
from bench.records import (
    FORMAT,
    OLDEST,
    RECEIVER,
    STREAM,
    DoneRecord,
    EndRecord,
    Listing,
    Point,
    ResultRecord,
    RunRecord,
    VariantRecord,
    from_json,
    parse,
    to_json,
)
from tests.bench_cases import FORMAT_1, RUN, measured, run_record, streamed


def test_records_survive_a_json_line_with_their_derived_figures() -> None:
    """Each kind of record comes back equal from its line; a measurement's line also carries
    µs per step and throughput, for readers of the file without ``bench.records``."""
    listing = Listing("reference", "baseline", "the reference", {"KERAS_BACKEND": "jax"})
    twin = Listing("reference_bptt", "by_hand", "by hand", twin_of="reference")
    split = Listing("reference", "devices", "split", devices=4, of="reference")
    records = [
        run_record(
            {"reference": listing, "renamed twin": twin, "split": split},
            [Point("default", 1, 20, ("predict",))],
            settings=QUICK_SETTINGS,  # tuples among its settings, lists in JSON
        ),
        VariantRecord("reference", "baseline", import_s=0.5, threads={}),
        VariantRecord("torch_eager", "baseline", skipped="needs torch"),
        measured("reference", "baseline", "predict", 3, 20, us_per_step=50.0),
        ResultRecord("reference", "train_step", 3, 20, error="ValueError: no"),
        streamed("jax_scan", "compiled", RECEIVER, 10, us_per_frame=4.0),
        DoneRecord("reference", 1.5),
        EndRecord(2.5),
    ]
    assert [from_json(to_json(r)) for r in records] == records
    line = json.loads(to_json(records[3]))
    assert line["kind"] == "result"
    assert line["us_per_step"] == pytest.approx(50.0)
    assert line["sequence_steps_per_s"] == pytest.approx(3 * 1e6 / 50.0)
    stream = json.loads(to_json(records[5]))  # a stream's side and chunk length are fields
    assert (stream["operation"], stream["side"], stream["chunk"]) == (STREAM, RECEIVER, 10)
    assert stream["us_per_step"] == pytest.approx(4.0)  # per frame


def test_a_format_this_version_does_not_know_is_refused() -> None:
    """Today's format reads as written; a later format is refused, and format 1 (no timed calls,
    no threads) with its format named."""
    (today,) = parse([json.dumps(RUN | {"format": FORMAT})])
    assert isinstance(today, RunRecord) and today.format == FORMAT
    with pytest.raises(ValueError, match=f"format must be {OLDEST} to {FORMAT}, got {FORMAT + 1}$"):
        parse([json.dumps(RUN | {"format": FORMAT + 1})])
    with pytest.raises(ValueError, match="got 1: format 1 kept no timed calls"):
        parse(FORMAT_1)
