"""The report's price of autodiff: each backend beside its hand-written backward."""

from __future__ import annotations

from tests.bench_cases import measured


def test_the_price_of_autodiff_pairs_each_backend_with_its_hand_written_backward() -> None:
    """A row per framework and B: autodiff's figure, the ``_bptt`` variant's, and their
    ratio; a backend without a hand-written twin gets no row."""
    from bench.report import Pivot, autodiff_rows

    records = [
        measured("jax_scan", "compiled", "loss_and_grads", 1, 1000, 3.0),
        measured("jax_scan", "compiled", "train_step", 1, 1000, 4.0),
        measured("jax_scan_bptt", "compiled", "loss_and_grads", 1, 1000, 2.0),
        measured("jax_scan_bptt", "compiled", "train_step", 1, 1000, 5.0),
        measured("tf_while", "compiled", "loss_and_grads", 1, 1000, 9.0),
    ]
    assert autodiff_rows(Pivot.of(records)) == [
        ["jax_scan", "1", "3", "2", "1.5×", "4", "5", "0.8×"]
    ]
