"""The report's devices axis: a data-parallel variant beside the variant it is on one
device, paired by the run's listing (``Listing.of``, ``Listing.devices``), never by name."""

from __future__ import annotations

from bench.analysis import Pivot
from bench.records import Listing
from bench.tables import devices_rows
from tests.bench_cases import measured, run_record

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
