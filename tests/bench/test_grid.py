"""``bench.grid``: the models by label, the grids, and the part of a grid each variant runs."""

from __future__ import annotations

import json
from pathlib import Path

import frae
from bench.catalogue import VARIANTS
from bench.grid import (
    SHAPES,
    STREAM_POINT,
    default_grid,
    model_label,
    points_for,
    quick_grid,
    read_config,
    wide_models,
)
from bench.measuring.job import QUICK_SETTINGS, Settings
from bench.records import STREAM
from tests.bench_cases import OTHER_CONFIG, STATE_CONFIG, STATE_CONFIGS, STATE_LABEL, WIDE


def test_a_variant_runs_its_part_of_the_grid() -> None:
    """A slow variant stops at the caps, a hand-written backward runs at its shapes only, a
    compiled backend runs everything and a loop floor the default model alone."""
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
    by_name = {variant.name: variant for variant in VARIANTS}
    for name, streams in (("reference", False), ("textbook_fix", False), ("tf_while", True)):
        points = points_for(by_name[name], quick_grid(), QUICK_SETTINGS)
        operations = {op for *_, ops in points for op in ops}
        assert (STREAM in operations) == streams, name
        assert {"predict", "train_step"} <= operations, name


def test_every_variant_that_can_stream_streams_in_both_grids() -> None:
    for grid in (default_grid(), quick_grid()):
        assert STREAM_POINT in grid
        for variant in VARIANTS:
            streams = any(STREAM in p.operations for p in points_for(variant, grid, Settings()))
            assert streams == (variant.no_stream is None), variant.name
    left_out = {v.name for v in VARIANTS if v.no_stream}
    assert {"c_forward", "jax_scan_bptt", "keras_defaults[jax]"} <= left_out
    assert not {"numba_floor", "jax_scan", "torch_scan", "reference"} & left_out


def test_models_are_labelled_by_their_widths_and_a_state_model_by_its_gru() -> None:
    """``gruH`` between the latent width and the decoder's; activations where not swish."""
    assert model_label(frae.FRAEConfig()) == "default"
    assert model_label(WIDE) == "2-64-16-64-2"
    assert list(wide_models()) == ["2-64-16-64-2", "2-256-16-256-2"]
    tanh = frae.FRAEConfig(activation="tanh", output_activation="sigmoid")
    assert model_label(tanh) == "2-4-3-1-3-2 tanh/sigmoid"
    assert model_label(OTHER_CONFIG) == "3-5-2-4-6-3 tanh/sigmoid"
    assert model_label(STATE_CONFIG) == STATE_LABEL
    assert model_label(STATE_CONFIGS["state_no_hidden"]) == "2-1-gru9-2 tanh/swish"


def test_config_reads_json_or_a_file(tmp_path: Path) -> None:
    fields = {"encoder_units": [64], "latent_dim": 16, "decoder_units": [64]}
    assert read_config(json.dumps(fields)) == WIDE
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(fields))
    assert read_config(str(path)) == WIDE
