"""The report's price of autodiff: each backend beside its hand-written backward, paired by
the twin the run's listing records (``Listing.twin_of``), never by the variant's name."""

from __future__ import annotations

from dataclasses import replace

from bench.analysis import Pivot
from bench.records import Listing, ResultRecord, RunRecord
from bench.tables import autodiff_rows
from tests.bench_cases import measured


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
