from __future__ import annotations

import pytest

import frae
from bench.baselines.layout import plan
from bench.catalogue import VARIANTS
from bench.grid import model_points, points_for, quick_grid, wide_models, with_quantized
from bench.measuring.job import Settings
from bench.records import STREAM, Listing, Point
from tests.bench_cases import markdown, measured, run_record

QUANTIZED = "default Δ=2^-6"
BY_NAME = {variant.name: variant for variant in VARIANTS}


def quick_with_quantized() -> tuple[list[Point], dict[str, frae.FRAEConfig]]:
    return with_quantized(quick_grid(), {"default": frae.FRAEConfig(), **wide_models()}, 2**-6)


def test_the_quantized_model_is_measured_at_the_targets_shape_and_on_the_stream() -> None:
    grid, models = quick_with_quantized()
    assert models[QUANTIZED] == frae.FRAEConfig(code_step=2**-6)
    added = [point for point in grid if point.model == QUANTIZED]
    assert {(point.batch, point.steps) for point in added} == {(1, 1000)}
    assert any(STREAM in point.operations for point in added)
    assert any("train_step" in point.operations for point in added)
    with pytest.raises(ValueError, match="B=1, T=1000"):
        with_quantized([Point("default", 1, 100, ("predict",))], models, 2**-6)


def test_a_backend_runs_the_quantized_model_whole_and_a_floor_is_left_out_of_it() -> None:
    """The quantized model is no width-axis model: a backend runs every operation it offers on
    it; the floors, whose loops have no rounding, keep the float model's points alone, and a
    run of the quantized model alone leaves them out saying why."""
    grid, models = quick_with_quantized()
    jax_scan = points_for(BY_NAME["jax_scan"], grid, Settings())
    assert [p for p in jax_scan if p.model == QUANTIZED] == [
        p for p in grid if p.model == QUANTIZED
    ]
    floor = BY_NAME["numba_floor"]
    kept, reason = model_points(floor, points_for(floor, grid, Settings()), models)
    assert kept and reason is None and all(point.model != QUANTIZED for point in kept)
    alone = [point for point in grid if point.model == QUANTIZED]
    kept, reason = model_points(floor, alone, models)
    assert not kept and reason is not None and "no rounding" in reason
    assert model_points(BY_NAME["jax_scan"], alone, models) == (alone, None)


def test_the_floors_refuse_a_quantized_model() -> None:
    with pytest.raises(NotImplementedError, match="code_step"):
        plan(frae.FRAEConfig(code_step=0.25))


def test_the_report_sets_each_quantized_time_beside_its_float_time() -> None:
    listings = {
        "fast": Listing("jax_scan", "compiled", "scan"),
        "floor": Listing(
            "numba_floor", "floor", "loops", no_code_step="its loops have no rounding"
        ),
    }
    models = {"default": frae.FRAEConfig(), QUANTIZED: frae.FRAEConfig(code_step=2**-6)}
    records = [
        run_record(listings, [Point(label, 1, 1000, ("predict",)) for label in models], models),
        measured("floor", "floor", "predict", 1, 1000, 1.0),
        measured("fast", "compiled", "predict", 1, 1000, 2.0),
        measured("fast", "compiled", "predict", 1, 1000, 3.0, model=QUANTIZED),
    ]
    text = markdown(records)
    assert "## What rounding costs" in text and f"Model {QUANTIZED}" not in text
    section = text[text.index("## What rounding costs") :]
    row = next(line for line in section.splitlines() if line.startswith("| fast "))
    assert [cell.strip() for cell in row.split("|")[3:6]] == ["2", "3", "1.5×"]
    assert "`floor`: its loops have no rounding" in text
    assert "What rounding costs" not in markdown(records[:3])
