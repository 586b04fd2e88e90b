"""The records of a run survive their JSON lines."""

from __future__ import annotations

import json

import pytest

from bench.records import (
    DoneRecord,
    EndRecord,
    Listing,
    ResultRecord,
    RunRecord,
    VariantRecord,
    from_json,
    to_json,
)
from tests.bench_cases import measured


def test_records_survive_a_json_line_with_their_derived_figures() -> None:
    """Each kind of record comes back equal from its line; a measurement's line also carries
    µs per step and throughput, for readers of the file without ``bench.records``."""
    listing = Listing("reference", "baseline", "the reference", {"KERAS_BACKEND": "jax"})
    records = [
        RunRecord(
            "now",
            "python -m bench",
            {"cpu_count": 2},
            [("default", 1, 20, ("predict",))],
            {},
            {"reference": listing},
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
