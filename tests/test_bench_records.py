"""The records of a run survive their JSON lines."""

from __future__ import annotations

import json

import pytest

from bench.job import QUICK_SETTINGS
from bench.records import (
    DoneRecord,
    EndRecord,
    Listing,
    Point,
    ResultRecord,
    RunRecord,
    VariantRecord,
    from_json,
    to_json,
)
from tests.bench_cases import measured, run_record


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
        DoneRecord("reference", 1.5),
        EndRecord(2.5),
    ]
    assert [from_json(to_json(r)) for r in records] == records
    line = json.loads(to_json(records[3]))
    assert line["kind"] == "result"
    assert line["us_per_step"] == pytest.approx(50.0)
    assert line["sequence_steps_per_s"] == pytest.approx(3 * 1e6 / 50.0)


def test_a_format_this_version_does_not_know_is_refused() -> None:
    """A file of today's format reads as written; one of a later format is refused rather
    than misread (a format before ``OLDEST``: tests/test_bench_old_results.py)."""
    from bench.records import FORMAT, OLDEST, parse

    run = {"kind": "run", "started": "then", "command": "c", "machine": {}, "settings": {}}
    run |= {"grid": [["default", 1, 10, ["predict"]]], "variants": {}, "format": FORMAT}
    (today,) = parse([json.dumps(run)])
    assert isinstance(today, RunRecord) and today.format == FORMAT
    with pytest.raises(ValueError, match=f"format must be {OLDEST} to {FORMAT}, got {FORMAT + 1}$"):
        parse([json.dumps(run | {"format": FORMAT + 1})])
