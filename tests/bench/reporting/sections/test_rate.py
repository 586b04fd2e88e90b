"""``bench.reporting.sections.rate``: what the rate term costs, the quantized model trained for
its rate (``bench.grid.with_rated``, ``--rate-weight``) beside the same model without it, at
its training operations at the targets' shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

import frae
from bench.catalogue import VARIANTS
from bench.grid import (
    choose_grid,
    model_label,
    model_points,
    points_for,
    quick_grid,
    wide_models,
    with_quantized,
    with_rated,
)
from bench.measuring.job import Settings
from bench.records import Listing, Point, Record
from bench.reporting.sections import SECTIONS, Report
from bench.reporting.sections.rate import pairs, rate_rows
from bench.roles import Role
from tests.bench_cases import kept_calls, markdown, measured, run_record

QUANTIZED = "default Δ=2^-6"
RATED = "default Δ=2^-6 λ=0.01"
TRAINING = ("loss_and_grads", "train_step")
BY_NAME = {variant.name: variant for variant in VARIANTS}
BY_HAND = [variant.name for variant in VARIANTS if variant.role == Role.BY_HAND]


def quick_with_rated() -> tuple[list[Point], dict[str, frae.FRAEConfig]]:
    """The quick grid with the default model quantized (Δ = 2^-6) and trained with λ = 0.01."""
    models = {"default": frae.FRAEConfig(), **wide_models()}
    return with_rated(*with_quantized(quick_grid(), models, 2**-6), 0.01)


def test_the_rated_model_trains_beside_the_quantized_one_at_the_targets_shape() -> None:
    """Its training operations alone (the rate changes neither predict nor the stream), at
    B = 1, T = 1000, its config the quantized model's with the rate weight."""
    grid, models = quick_with_rated()
    assert models[RATED] == frae.FRAEConfig(code_step=2**-6, rate_weight=0.01)
    assert replace(models[RATED], rate_weight=None) == models[QUANTIZED]
    assert [point for point in grid if point.model == RATED] == [Point(RATED, 1, 1000, TRAINING)]


def test_a_model_quantized_by_its_config_trains_for_its_rate_beside_itself() -> None:
    """``--config`` with a ``code_step`` and ``--rate-weight``: the run's own model is the one
    without."""
    grid, models = choose_grid(True, frae.FRAEConfig(code_step=2**-4))
    grid, models = with_rated(grid, models, 0.5)
    rated = [point for point in grid if models[point.model].rate_weight is not None]
    assert rated == [Point("default Δ=2^-4 λ=0.5", 1, 1000, TRAINING)]


Made = Callable[[], tuple[list[Point], dict[str, frae.FRAEConfig]]]
GRIDS_WITHOUT: dict[str, Made] = {
    "float-alone": lambda: (quick_grid(), {"default": frae.FRAEConfig(), **wide_models()}),
    "quantized-predicting": lambda: with_quantized(
        [Point("default", 1, 1000, ("predict",))], {"default": frae.FRAEConfig()}, 2**-6
    ),
}


@pytest.mark.parametrize("made", GRIDS_WITHOUT.values(), ids=GRIDS_WITHOUT)
def test_a_grid_where_no_quantized_model_trains_is_refused_naming_the_option(made: Made) -> None:
    with pytest.raises(ValueError, match="--rate-weight needs a quantized model"):
        with_rated(*made(), 0.01)


def test_a_rated_model_is_labelled_by_its_rate_weight_after_its_code_step() -> None:
    assert model_label(frae.FRAEConfig(code_step=2**-6, rate_weight=0.01)) == RATED
    assert model_label(frae.FRAEConfig(code_step=2**-6, rate_weight=0)) == "default Δ=2^-6 λ=0"
    wide = frae.FRAEConfig(encoder_units=(64,), latent_dim=16, decoder_units=(64,))
    rated = replace(wide, code_step=1.0, rate_weight=2.5)
    assert model_label(rated) == "2-64-16-64-2 Δ=2^0 λ=2.5"
    assert list(choose_grid(True, rated)[1]) == ["2-64-16-64-2 Δ=2^0 λ=2.5"]


def test_a_backend_trains_the_rated_model_and_a_floor_is_left_out_of_it() -> None:
    grid, models = quick_with_rated()
    rated = [point for point in grid if point.model == RATED]
    jax_scan = BY_NAME["jax_scan"]
    assert [p for p in points_for(jax_scan, grid, Settings()) if p.model == RATED] == rated
    assert model_points(jax_scan, rated, models) == (rated, None)
    kept, reason = model_points(BY_NAME["numba_floor"], rated, models)
    assert not kept and reason is not None and "quantized" in reason


@pytest.mark.parametrize("name", BY_HAND)
def test_a_backward_by_hand_is_left_out_of_the_rated_model_saying_why(name: str) -> None:
    """It keeps the quantized model, whose backward it writes, and leaves the rated one."""
    grid, models = quick_with_rated()
    twin = BY_NAME[name]
    kept, reason = model_points(twin, points_for(twin, grid, Settings()), models)
    assert reason is None and {point.model for point in kept} == {"default", QUANTIZED}
    alone = [point for point in grid if point.model == RATED]
    kept, reason = model_points(twin, alone, models)
    assert not kept and reason is not None and "rate term" in reason


LISTINGS = {
    "fast": Listing("jax_scan", Role.COMPILED, "scan"),
    "hand": Listing("bench.twins.jax_scan:X", Role.BY_HAND, "by hand", no_rate_weight="no rate"),
}
MODELS = {
    "default": frae.FRAEConfig(),
    QUANTIZED: frae.FRAEConfig(code_step=2**-6),
    RATED: frae.FRAEConfig(code_step=2**-6, rate_weight=0.01),
}


def rated_records(*results: Record) -> list[Record]:
    """A run of ``MODELS`` (a training step at B = 1, T = 1000 on each) and ``results``."""
    grid = [Point(label, 1, 1000, ("train_step",)) for label in MODELS]
    return [run_record(LISTINGS, grid, MODELS), *results]


def section_of(text: str) -> str:
    start = text.index("## What the rate term costs")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_the_report_sets_each_rated_time_beside_the_same_model_without_it() -> None:
    records = rated_records(
        measured("fast", Role.COMPILED, "train_step", 1, 1000, 2.0),
        measured("fast", Role.COMPILED, "train_step", 1, 1000, 4.0, model=QUANTIZED),
        measured("fast", Role.COMPILED, "train_step", 1, 1000, 5.0, model=RATED),
        measured("hand", Role.BY_HAND, "train_step", 1, 1000, 3.0, model=QUANTIZED),
    )
    assert pairs(Report(records)) == [(QUANTIZED, RATED)]
    section = section_of(markdown(records))
    assert f"## What the rate term costs ({RATED})" in section
    row = next(line for line in section.splitlines() if line.startswith("| fast "))
    cells = [cell.strip() for cell in row.split("|")[2:7]]
    assert cells == ["train step B=1 T=1000", "4 (4–4)", "5 (5–5)", "1.25× (1.25–1.25)", "apart"]
    assert "`hand`: no rate" in section and "| hand " not in section


def test_a_ratio_measured_apart_carries_the_spread_of_both_figures() -> None:
    """Each its own measurement (no calls of the model without kept in turn): the low end
    the lower with the rate over the upper without, the high end the other way round."""
    without = kept_calls([1.0e-3, 1.1e-3, 1.2e-3], "fast", "train_step", 1, 1000, model=QUANTIZED)
    with_rate = kept_calls([2.0e-3, 2.2e-3, 2.4e-3], "fast", "train_step", 1, 1000, model=RATED)
    (row,) = rate_rows(Report(rated_records(without, with_rate)))
    assert row[2:] == ["1.1 (1.05–1.15)", "2.2 (2.1–2.3)", "2× (1.83–2.19)", "apart"]


def test_a_ratio_measured_in_turn_is_the_median_of_each_samples() -> None:
    """The calls of the model without, kept beside the rated ones, give the figure without
    and the ratio, sample by sample: a drift of the machine falls on both, so the ratio
    holds where the figures move (here each sample slower than the last)."""
    calls = [1.0e-3, 2.0e-3, 4.0e-3]
    beside = {QUANTIZED: [0.8 * seconds for seconds in calls]}
    with_rate = kept_calls(calls, "fast", "train_step", 1, 1000, model=RATED, partners_s=beside)
    apart = kept_calls([9.0e-3] * 3, "fast", "train_step", 1, 1000, model=QUANTIZED)
    (row,) = rate_rows(Report(rated_records(apart, with_rate)))
    assert row[2:] == ["1.6 (1.2–2.4)", "2 (1.5–3)", "1.25× (1.25–1.25)", "in turn"]


def test_a_rated_measurement_that_failed_says_why_and_has_no_ratio() -> None:
    failed = replace(
        measured("fast", Role.COMPILED, "train_step", 1, 1000, 1.0, model=RATED),
        median_s=None,
        error="ValueError: no rate here",
    )
    records = rated_records(
        measured("fast", Role.COMPILED, "train_step", 1, 1000, 4.0, model=QUANTIZED), failed
    )
    (row,) = rate_rows(Report(records))
    assert row[3:] == ["—", "—", "apart"]
    assert "- `fast`, train step: ValueError: no rate here" in section_of(markdown(records))


def test_the_rated_model_is_not_rounding_s_and_no_rated_model_no_section() -> None:
    """ "What rounding costs" sets the quantized model beside the float one alone; a run
    without a rated model (or without its model without the rate) has no rate section."""
    records = rated_records(
        measured("fast", Role.COMPILED, "train_step", 1, 1000, 2.0),
        measured("fast", Role.COMPILED, "train_step", 1, 1000, 4.0, model=QUANTIZED),
        measured("fast", Role.COMPILED, "train_step", 1, 1000, 5.0, model=RATED),
    )
    text = markdown(records)
    rounding = text[text.index("## What rounding costs") : text.index("## What the rate")]
    assert RATED not in rounding and "| fast " in rounding
    assert "What the rate term costs" not in markdown(records[:3])
    alone = {label: MODELS[label] for label in ("default", RATED)}
    lone = [run_record(LISTINGS, [Point(RATED, 1, 1000, ("train_step",))], alone), records[3]]
    assert pairs(Report(lone)) == [] and "What the rate term costs" not in markdown(lone)


def test_the_section_is_registered_after_rounding() -> None:
    assert SECTIONS.index("rate") == SECTIONS.index("rounding") + 1
