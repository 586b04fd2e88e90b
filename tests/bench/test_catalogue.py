"""``bench.catalogue``: a state-feedback run leaves out what cannot run it, and says why."""

from __future__ import annotations

import frae
from tests.bench_cases import STATE_CONFIG, STATE_LABEL

LEFT_OUT = {
    "c_forward": "no GRU",
    "matrix_floor": "no GRU",
    "tf_while_bptt": "written by hand for output feedback",
    "jax_scan_bptt": "written by hand for output feedback",
    "torch_scan_bptt": "written by hand for output feedback",
    "torch_eager": "written for output feedback",
}
"""Variants a state-feedback run leaves out, and a part of the reason it states."""


def test_a_state_feedback_run_leaves_out_what_cannot_run_it_and_says_why() -> None:
    """Every variant that cannot run the model is left out with its reason; every other one
    keeps its points; an output-feedback run leaves none out."""
    from bench.catalogue import VARIANTS
    from bench.grid import model_points, points_for, quick_grid, wide_models
    from bench.measuring.job import Settings
    from bench.records import Point

    models = {STATE_LABEL: STATE_CONFIG, "default": frae.FRAEConfig(), **wide_models()}
    left_out = {}
    for variant in VARIANTS:
        points = points_for(variant, quick_grid(STATE_LABEL), Settings())
        kept, reason = model_points(variant, points, models)
        if reason is not None:
            assert not kept and reason.startswith("cannot run the state-feedback model: ")
            left_out[variant.name] = reason
        else:
            assert kept == points, variant.name
        output = points_for(variant, quick_grid(), Settings())
        assert model_points(variant, output, models) == (output, None), variant.name
    for name, part in LEFT_OUT.items():
        assert part in left_out.pop(name), name
    assert not left_out, left_out
    for name in ("numba_floor", "simd_floor", "jax_scan", "torch_scan", "reference"):
        variant = next(v for v in VARIANTS if v.name == name)
        assert model_points(variant, [Point(STATE_LABEL, 1, 10, ("predict",))], models)[1] is None
