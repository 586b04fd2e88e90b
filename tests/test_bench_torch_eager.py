"""PyTorch's eager loop (``bench.baselines.torch_eager``), measured beside torch_scan, computes
the reference's maths, streamed too."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from frae.data import multi_sine
from parity_tests.tolerances import assert_close
from tests.bench_cases import OTHER_CONFIG, check_forward, check_gradients

EAGER = "bench.baselines.torch_eager:TorchEagerBackend"


def check_streaming(model: frae.Backend, config: frae.FRAEConfig) -> None:
    """Two chunks of seven steps chained through their states, from a state that is not
    zero, give the reference's one call over fourteen steps (``predict``, ``encode`` and
    ``decode``), and ``encode`` ends in ``decode``'s state."""
    oracle = frae.create("reference", config, weights=model.get_weights())
    x = multi_sine(batch=3, steps=14, features=config.input_dim, seed=4)
    start = np.random.default_rng(5).uniform(-1.0, 1.0, (3, config.feedback_dim))
    expected, last = oracle.predict(x, state=start, return_state=True)
    codes = oracle.encode(x, state=start)
    for name, call, sequences, whole in [
        ("predict", model.predict, x, expected),
        ("encode", model.encode, x, codes),
        ("decode", model.decode, codes, expected),
    ]:
        state, chunks = start, []
        for chunk in np.split(sequences, 2, axis=1):
            output, state = call(chunk, state=state, return_state=True)
            chunks.append(output)
        assert_close("outputs", np.concatenate(chunks, axis=1), whole, name)
        assert_close("outputs", state, last, f"{name}'s last state")


def test_the_eager_loop_equals_the_reference() -> None:
    """torch_eager replaces torch_scan's loop (its inference and its gradients; the rest is
    torch_scan's, which the kit checks): the same maths, and it streams."""
    pytest.importorskip("torch", reason="torch's extra is not installed")
    model = frae.create(EAGER, OTHER_CONFIG, seed=3)
    check_forward(model, OTHER_CONFIG)
    check_streaming(model, OTHER_CONFIG)
    check_gradients(model, OTHER_CONFIG)
