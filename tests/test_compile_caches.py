"""The run's compile caches (the root ``conftest.py``): Inductor's graph cache takes graphs
that hold the scan, hits for a graph compiled before, and keeps apart two whose loop bodies
differ."""

from __future__ import annotations

import dataclasses

import pytest

import frae
from parity_tests.cases import CASES
from parity_tests.tolerances import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("impls.torch_scan.backend")

pytestmark = pytest.mark.backend_specific("torch_scan")


def _predict_afresh(config: frae.FRAEConfig) -> dict[str, int]:
    """``config``'s prediction compiled after Dynamo forgot everything, checked against the
    reference; Inductor's graph-cache counts of that compilation."""
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters["inductor"]
    before = {key: counters[key] for key in ("fxgraph_cache_hit", "fxgraph_cache_miss")}
    x = frae.data.multi_sine(batch=3, steps=6, seed=1)
    model = frae.create("torch_scan", config, seed=2)
    assert_close("outputs", model.predict(x), frae.create("reference", config, seed=2).predict(x))
    return {key: counters[key] - value for key, value in before.items()}


@pytest.mark.slow
def test_a_scan_graph_is_cached_and_its_body_is_in_the_key() -> None:
    """Two configs differing only in the loop's activation compile two graphs (each output the
    reference's); the first, compiled again, hits the cache."""
    first = CASES["default"].config  # the kit's: the run compiles it once, whoever is first
    second = dataclasses.replace(first, activation="tanh")
    _predict_afresh(first)
    _predict_afresh(second)
    again = _predict_afresh(first)
    assert again["fxgraph_cache_hit"] >= 1 and again["fxgraph_cache_miss"] == 0, again
