"""``frae.backend.minibatches``: each epoch's order drawn as the epoch starts."""

from __future__ import annotations

import tracemalloc

import numpy as np

from frae.backend import minibatches


def test_fit_draws_each_epochs_order_as_it_goes() -> None:
    """A million epochs cost nothing before the first step (all indices up front: 1.2 GiB)."""
    tracemalloc.start()
    try:
        batches = minibatches(3, 1, 10**6, shuffle=True, seed=0)
        first = [next(batches) for _ in range(6)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak} bytes"
    assert sorted(np.concatenate(first[:3])) == [0, 1, 2] == sorted(np.concatenate(first[3:]))
