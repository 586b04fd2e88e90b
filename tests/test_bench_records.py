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


def test_a_file_is_read_through_its_format() -> None:
    """A run line without ``format`` is format 1 and is raised to today's; a format this
    version does not know is refused rather than misread."""

    from bench.records import FORMAT, parse

    run = {"kind": "run", "started": "then", "command": "c", "machine": {}, "settings": {}}
    run |= {"grid": [[1, 10, ["predict"]]], "variants": {}}
    result = {"kind": "result", "variant": "v", "operation": "predict", "batch": 1, "steps": 10}
    old_run, old_result = parse([json.dumps(run), json.dumps(result | {"median_s": 1.0})])
    assert isinstance(old_run, RunRecord) and old_run.format == FORMAT
    assert old_run.grid[0].model == "default"  # points of format 1 had no model label
    assert isinstance(old_result, ResultRecord) and old_result.calls_s is None
    with pytest.raises(ValueError, match="format must be 1 to"):
        parse([json.dumps(run | {"format": FORMAT + 1})])
