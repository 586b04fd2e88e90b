"""``bench.baselines.torch_eager``: PyTorch's eager loop computes the reference's maths."""

from __future__ import annotations

import pytest

import frae
from tests.bench_cases import OTHER_CONFIG, check_forward, check_gradients, check_streaming

EAGER = "bench.baselines.torch_eager:TorchEagerBackend"


def test_the_eager_loop_equals_the_reference() -> None:
    """torch_eager replaces torch_scan's loop (its inference and its gradients; the rest is
    torch_scan's, which the kit checks): the same maths, and it streams."""
    pytest.importorskip("torch", reason="torch's extra is not installed")
    model = frae.create(EAGER, OTHER_CONFIG, seed=3)
    check_forward(model, OTHER_CONFIG)
    check_streaming(model, OTHER_CONFIG)
    check_gradients(model, OTHER_CONFIG)
