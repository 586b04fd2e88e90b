"""The variants and the grid: each variant runs its part of the grid; a state-feedback
model has a label of its own, and a run of one leaves out, saying why, the variants that
cannot run it."""

from __future__ import annotations

import frae
from tests.bench_cases import OTHER_CONFIG, STATE_CONFIG, STATE_CONFIGS, STATE_LABEL


def test_a_variant_runs_its_part_of_the_grid() -> None:
    """A slow variant stops at the caps, a hand-written backward runs at its shapes only, a
    compiled backend runs everything and a loop floor the default model alone."""
    from bench.catalogue import VARIANTS
    from bench.grid import SHAPES, default_grid, points_for
    from bench.job import Settings

    grid, settings = default_grid(), Settings()
    by_name = {variant.name: variant for variant in VARIANTS}
    compiled = points_for(by_name["tf_while"], grid, settings)
    assert [point for point in compiled if point[0] == "default"] == grid[: len(SHAPES)]
    assert {ops for model, b, t, ops in grid if (model, b, t) == ("default", 256, 10_000)} == {
        ("train_step",)
    }
    wide = [point for point in compiled if point[0] != "default"]
    assert len({model for model, *_ in wide}) == 2 and len(wide) == 4
    assert {ops for *_, ops in wide} == {("predict", "train_step")}
    by_hand = points_for(by_name["jax_scan_bptt"], grid, settings)
    assert {(b, t) for _, b, t, _ in by_hand} == {(1, 1000), (256, 1000)}
    assert {ops for *_, ops in by_hand} == {("loss_and_grads", "train_step")}
    slow = points_for(by_name["reference"], grid, settings)
    assert max(t for _, _, t, _ in slow) == 1000 and max(b for _, b, _, _ in slow) == 32
    loops = points_for(by_name["numba_floor"], grid, settings)
    assert {model for model, *_ in loops} == {"default"}


def test_the_quick_run_streams_every_variant_but_the_slow_ones() -> None:
    """Under the quick settings a slow variant (the reference, the textbook fix) runs its
    operations but the stream; the others stream as in the full grid."""
    from bench.catalogue import VARIANTS
    from bench.grid import points_for, quick_grid
    from bench.job import QUICK_SETTINGS
    from bench.records import STREAM

    by_name = {variant.name: variant for variant in VARIANTS}
    for name, streams in (("reference", False), ("textbook_fix", False), ("tf_while", True)):
        points = points_for(by_name[name], quick_grid(), QUICK_SETTINGS)
        operations = {op for *_, ops in points for op in ops}
        assert (STREAM in operations) == streams, name
        assert {"predict", "train_step"} <= operations, name


LEFT_OUT = {
    "c_forward": "no GRU",
    "matrix_floor": "no GRU",
    "tf_while_bptt": "written by hand for output feedback",
    "jax_scan_bptt": "written by hand for output feedback",
    "torch_scan_bptt": "written by hand for output feedback",
    "torch_eager": "written for output feedback",
}
"""Variants a state-feedback run leaves out, and a part of the reason it states."""


def test_a_state_feedback_model_has_a_label_of_its_own() -> None:
    """``gruH`` between the latent width and the decoder's; output-feedback labels as they were."""
    from bench.grid import model_label, wide_models

    assert model_label(STATE_CONFIG) == STATE_LABEL
    assert model_label(STATE_CONFIGS["state_no_hidden"]) == "2-1-gru9-2 tanh/swish"
    assert model_label(frae.FRAEConfig()) == "default"
    assert list(wide_models()) == ["2-64-16-64-2", "2-256-16-256-2"]
    assert model_label(OTHER_CONFIG) == "3-5-2-4-6-3 tanh/sigmoid"


def test_a_state_feedback_run_leaves_out_what_cannot_run_it_and_says_why() -> None:
    """Every variant that cannot run the model is left out with its reason; every other one
    keeps its points; an output-feedback run leaves none out."""
    from bench.catalogue import VARIANTS
    from bench.grid import points_for, quick_grid, state_points, wide_models
    from bench.job import Settings

    models = {STATE_LABEL: STATE_CONFIG, "default": frae.FRAEConfig(), **wide_models()}
    left_out = {}
    for variant in VARIANTS:
        points = points_for(variant, quick_grid(STATE_LABEL), Settings())
        kept, reason = state_points(variant, points, models)
        if reason is not None:
            assert not kept and reason.startswith("cannot run the state-feedback model: ")
            left_out[variant.name] = reason
        else:
            assert kept == points, variant.name
        output = points_for(variant, quick_grid(), Settings())
        assert state_points(variant, output, models) == (output, None), variant.name
    for name, part in LEFT_OUT.items():
        assert part in left_out.pop(name), name
    assert not left_out, left_out
    for name in ("numba_floor", "simd_floor", "jax_scan", "torch_scan", "reference"):
        variant = next(v for v in VARIANTS if v.name == name)
        assert state_points(variant, [(STATE_LABEL, 1, 10, ("predict",))], models)[1] is None
