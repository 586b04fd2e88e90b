"""Results files of format 1, written before listings recorded a variant's twin and devices,
read back through their format's upgrade with those fields derived from the names the files
used then; a file that has the fields is read as written."""

from __future__ import annotations

import json

import pytest

from bench.analysis import Pivot
from bench.records import Listing, RunRecord, from_json, parse, to_json
from bench.tables import autodiff_rows, devices_rows
from tests.bench_cases import measured

OLD_LISTINGS = {
    "jax_scan": {"backend": "jax_scan", "role": "compiled", "about": "scan", "env": {}},
    "jax_scan_bptt": {"backend": "jax_scan_bptt", "role": "by_hand", "about": "by hand"},
    "jax_scan on 2 devices": {"backend": "jax_scan", "role": "devices", "about": "split"},
    "reference_bptt": {"backend": "reference", "role": "baseline", "about": "not a twin"},
}
"""A run's variants as files listed them before ``twin_of``, ``devices`` and ``of``."""


def old_run(variants: dict[str, dict[str, object]]) -> RunRecord:
    line = {"kind": "run", "started": "then", "command": "python -m bench", "machine": {}}
    line |= {"grid": [[1, 1000, ["train_step"]]], "settings": {}, "variants": variants}
    (run,) = parse([json.dumps(line)])  # format 1: the line has no "format"
    assert isinstance(run, RunRecord)
    return run


def test_an_old_file_gets_the_twin_and_the_devices_from_its_names() -> None:
    listings = old_run(OLD_LISTINGS).variants
    assert listings["jax_scan_bptt"].twin_of == "jax_scan"
    assert (listings["jax_scan on 2 devices"].of, listings["jax_scan on 2 devices"].devices) == (
        "jax_scan",
        2,
    )
    # only a role that had the meaning gets it
    assert listings["reference_bptt"].twin_of is None
    assert (listings["jax_scan"].twin_of, listings["jax_scan"].of) == (None, None)


def test_an_old_file_reports_its_twins_and_devices() -> None:
    records = [
        old_run(OLD_LISTINGS),
        measured("jax_scan", "compiled", "loss_and_grads", 1, 1000, 3.0),
        measured("jax_scan", "compiled", "train_step", 1, 1000, 4.0),
        measured("jax_scan_bptt", "by_hand", "loss_and_grads", 1, 1000, 2.0),
        measured("jax_scan_bptt", "by_hand", "train_step", 1, 1000, 5.0),
        measured("jax_scan", "compiled", "train_step", 256, 1000, 10.0),
        measured("jax_scan on 2 devices", "devices", "train_step", 256, 1000, 20.0),
    ]
    pivot = Pivot.of(records)
    assert [row[0] for row in autodiff_rows(pivot)] == ["jax_scan"]
    assert devices_rows(pivot) == [["jax_scan", "2", "256", "1000", "10", "20", "2×"]]


@pytest.mark.parametrize("field", ["twin_of", "devices", "of"])
def test_a_file_with_the_fields_is_read_as_written(field: str) -> None:
    """Where a listing has any of the fields (``null`` included), nothing is derived."""
    variants = {name: {**listing, field: None} for name, listing in OLD_LISTINGS.items()}
    listings = old_run(variants).variants
    assert all((v.twin_of, v.devices, v.of) == (None, None, None) for v in listings.values())


def test_a_listing_with_its_fields_survives_a_json_line() -> None:
    run = RunRecord(
        "now",
        "python -m bench",
        {},
        [],
        {},
        {
            "renamed twin": Listing("jax_scan_bptt", "by_hand", "by hand", twin_of="jax_scan"),
            "split": Listing("jax_scan", "devices", "split", devices=4, of="jax_scan"),
        },
    )
    assert from_json(to_json(run)) == run
