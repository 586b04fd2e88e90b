"""The roofline: FLOPs and bytes counted from the layer table agree with hand counts, its
ratios, targets and report follow, and the peaks are measured in a pinned process. No timing."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

import frae
from bench import render, report, roofline
from bench.analysis import Pivot
from bench.grid import wide_models
from bench.records import Key, Point, Record, ResultRecord, RunRecord
from bench.roofline import Counts, Peak, counts
from bench.runner import measure_roofline
from bench.targets import ROOFLINE_MODEL, ROOFLINE_TARGETS, Target
from bench.threads import environment
from bench.verdicts import judge, roofline_targets
from frae.config import GRU, Layer
from tests.bench_cases import OTHER_CONFIG, measured, run_record
from tests.processes import last_json, python

STATE = frae.FRAEConfig(
    input_dim=2, encoder_units=(3,), latent_dim=4, decoder_units=(5,), feedback="state", state_dim=6
)
"""A state-feedback model of sizes all different from each other and from ``OTHER_CONFIG``'s."""
WIDE = wide_models()[ROOFLINE_MODEL]

# By hand, one FLOP for each bias and each activation per output unit, the backward twice
# the forward, the loss 3 per element, Adam 14 per weight; 4 bytes for x_t in and x̂_t out a
# step, for the weights in (and their gradients out) once a call, and for Adam's 7 arrays of
# the weights' size once an optimizer step.
#
# OTHER_CONFIG (F=3, encoder 6→5→2, decoder 5→4→6→3) at B=7, T=11: Σ in·out = 30 + 10 + 20
# + 24 + 18 = 102, Σ units = 20, weights 35 + 12 + 24 + 30 + 21 = 122; forward 2·7·102 +
# 2·7·20 = 1708.
#
# STATE (F=2, encoder 8→3→4, GRU L=4 H=6, decoder 6→5→2) at B=5, T=10: dense Σ in·out = 24 +
# 12 + 30 + 10 = 76, Σ units = 14; the GRU 2·5·(4 + 6)·18 = 1800 and 5·6·(14 + 3) = 510;
# forward 2·5·76 + 2·5·14 + 1800 + 510 = 3210; weights 27 + 16 + 35 + 12 + (72 + 108 + 36)
# = 306.


def by_hand(forward: float, weights: float, batch: int, steps: int, features: int) -> dict:
    """Each operation's counts from the forward's FLOPs and the weights, as the hand counts."""
    elements, per_step = batch * features, weights / steps
    return {
        "predict": Counts(forward, 4 * 2 * elements + 4 * per_step),
        "loss_and_grads": Counts(3 * forward + 3 * elements, 4 * elements + 4 * 2 * per_step),
        "train_step": Counts(
            3 * forward + 3 * elements + 14 * per_step, 4 * elements + 4 * (2 + 7) * per_step
        ),
    }


HAND_COUNTS = {
    "output": (OTHER_CONFIG, 7, 11, by_hand(1708, 122, 7, 11, 3)),
    "state": (STATE, 5, 10, by_hand(3210, 306, 5, 10, 2)),
}
WIDE_PREDICT_FLOPS = 2 * 256 * (4 * 256 + 256 * 16 + 18 * 256 + 256 * 2) + 2 * 256 * 530
"""The width-256 model's predict at B=256: 5.2 MFLOP of products, 0.27 of biases and
activations."""


def check_counts(name: str) -> None:
    """Every operation's counts of the hand-counted model ``name`` are the hand's."""
    config, batch, steps, expected = HAND_COUNTS[name]
    for operation, hand in expected.items():
        found = counts(config, operation, batch, steps)
        assert found is not None, operation
        assert found.flops == pytest.approx(hand.flops, rel=1e-12), (operation, found, hand)
        assert found.bytes == pytest.approx(hand.bytes, rel=1e-12), (operation, found, hand)


@pytest.mark.parametrize("name", HAND_COUNTS)
def test_the_counts_are_the_hands(name: str) -> None:
    check_counts(name)


def test_the_wide_models_predict_is_five_megaflops_a_step() -> None:
    found = counts(WIDE, "predict", 256, 1000)
    assert found is not None and found.flops == WIDE_PREDICT_FLOPS
    assert counts(WIDE, "stream", 1, 1000) is None  # the stream has no counts


def _swapped_dense(layer: Layer, batch: int) -> int:
    """A dense layer whose bias and activation are counted on its input's width."""
    return 2 * batch * layer.fan_in * layer.units + 2 * batch * layer.fan_in


def _gru_without_recurrence(gru: GRU, batch: int) -> int:
    """A GRU whose product with the fed-back state is forgotten."""
    return 2 * batch * gru.input_dim * 3 * gru.state_dim + batch * gru.state_dim * 17


MUTANTS: dict[str, tuple[str, str, object]] = {
    "dense-axes-swapped": ("output", "dense_flops", _swapped_dense),
    "backward-forgotten": ("output", "BACKWARD_OVER_FORWARD", 0),
    "gru-recurrence-forgotten": ("state", "gru_flops", _gru_without_recurrence),
    "adam-forgotten": ("state", "ADAM_FLOPS", 0),
    "float64-bytes": ("state", "FLOAT32", 8),
}


@pytest.mark.parametrize("mutant", MUTANTS)
def test_a_broken_count_is_caught(mutant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    name, attribute, broken = MUTANTS[mutant]
    monkeypatch.setattr(roofline, attribute, broken)
    with pytest.raises(AssertionError):
        check_counts(name)


PEAK = Peak(
    gflops=100.0,
    gbps=1000.0,
    threads=1,
    blas=[{"internal_api": "openblas", "version": "0.3.30", "architecture": "Haswell"}],
)
"""Peaks under which the width-256 model's steps are bound by their FLOPs."""


def test_the_roofline_is_the_slower_of_its_two_sides() -> None:
    assert PEAK.time_us(Counts(2e6, 1e3)) == pytest.approx(20.0)  # 2 MFLOP at 100 GFLOP/s
    assert PEAK.time_us(Counts(1e3, 3e7)) == pytest.approx(30.0)  # 30 MB at 1000 GB/s
    assert PEAK.bound(Counts(2e6, 1e3)) == "FLOPs" and PEAK.bound(Counts(1e3, 3e7)) == "bytes"


def peaked_run(peak: Peak | None = PEAK) -> RunRecord:
    """A run of the default model and the width-256 one, with ``peak`` recorded."""
    models = {"default": frae.FRAEConfig(), ROOFLINE_MODEL: WIDE}
    grid = [Point(label, 256, 1000, ("predict", "train_step")) for label in models]
    return run_record(grid=grid, models=models, roofline=peak.to_dict() if peak else None)


def on_wide(variant: str, role: str, operation: str, times_the_roofline: float) -> ResultRecord:
    """A measurement of the width-256 model at B=256, T=1000, at ``times_the_roofline``."""
    work = counts(WIDE, operation, 256, 1000)
    assert work is not None
    record = measured(variant, role, operation, 256, 1000, times_the_roofline * PEAK.time_us(work))
    return replace(record, model=ROOFLINE_MODEL)


def wide_run(peak: Peak | None = PEAK) -> list[Record]:
    """The route ``jax`` 2× the roofline at predict and 4× at a training step, a slower
    route, a floor far from it, and the default model's ``jax`` (never judged here)."""
    return [
        peaked_run(peak),
        on_wide("matrix", "matrix_floor", "predict", 6.0),
        on_wide("jax", "compiled", "predict", 2.0),
        on_wide("jax", "compiled", "train_step", 4.0),
        on_wide("torch", "baseline", "predict", 5.0),
        on_wide("torch", "baseline", "train_step", 8.0),
        measured("jax", "compiled", "predict", 256, 1000, 1.0),
    ]


def test_a_ratio_to_the_roofline_is_the_figure_over_it() -> None:
    pivot = Pivot.of(wide_run(), ROOFLINE_MODEL)
    key = Key("jax", "predict", ROOFLINE_MODEL, 256, 1000)
    assert roofline.roofline_us(pivot, key) == pytest.approx(WIDE_PREDICT_FLOPS / 1e5)
    assert roofline.roofline_ratio(pivot, key) == pytest.approx(2.0)
    without = Pivot.of(wide_run(peak=None), ROOFLINE_MODEL)  # a run from before the roofline
    assert roofline.roofline_ratio(without, key) is None


def named(name: str) -> Target:
    (found,) = [target for target in ROOFLINE_TARGETS if target.name == name]
    return found


@pytest.mark.parametrize(
    ("name", "verdict", "met"),
    [
        ("predict_roofline", "met, 1.50× to spare", True),
        ("train_roofline", "missed by 1.33×", False),
    ],
)
def test_the_best_route_is_judged_on_the_wide_model(name: str, verdict: str, met: bool) -> None:
    """The best framework route is judged, every route's ratio shown, the floors' not."""
    outcome = judge(named(name), Pivot.of(wide_run(), ROOFLINE_MODEL))
    assert outcome.verdict == verdict and outcome.met is met
    assert "jax" in outcome.measured and "torch" in outcome.measured
    assert "matrix" not in outcome.measured


def test_the_roofline_targets_are_not_judged_on_another_model() -> None:
    default = Pivot.of(wide_run())  # the run's first model, the default
    assert not roofline_targets(default)
    assert not judge(named("predict_roofline"), default).judged
    assert not judge(named("predict_roofline"), Pivot.of(wide_run(None), ROOFLINE_MODEL)).judged


def test_the_report_says_the_peaks_and_each_ratio_beside_the_floors() -> None:
    drawn = report.sections(wide_run())
    text, brief = render.markdown(drawn), render.terminal(drawn)
    assert "roofline peaks: 100.0 GFLOP/s" in text and "openblas 0.3.30, Haswell" in text
    assert "1000.0 GB/s" in text
    model = text[text.index(f"## Model {ROOFLINE_MODEL}") :]
    header = next(line for line in model.splitlines() if line.startswith("| variant"))
    assert header.count("×roof") == 2  # beside each figure at B=256, the shape measured
    assert "| 2×" in model and "| 6×" in model
    assert "Where the roofline's targets come from" in model
    assert "×roof " in brief and "missed by 1.33×" in brief


def test_the_terminals_wide_model_table_fits_100_columns_with_the_roofline() -> None:
    records = wide_run()
    for index, name in enumerate(["keras_defaults[tensorflow]", "torch_scan[defaults]"]):
        for batch in (1, 256):
            for operation in ("predict", "train_step"):
                us = 123.456 * (index + 1) * batch
                found = measured(name, "baseline", operation, batch, 1000, us)
                records.append(replace(found, model=ROOFLINE_MODEL))
    brief = render.terminal(report.sections(records))
    assert "×roof " in brief
    assert max(len(line) for line in brief.splitlines()) <= render.WIDTH


def test_a_run_without_peaks_shows_none_and_a_failed_measurement_says_why() -> None:
    text = render.markdown(report.sections(wide_run(peak=None)))  # a run from before it
    assert "roofline" not in text.lower()
    failed = replace(peaked_run(None), roofline={"error": "exited with 1: no BLAS"})
    text = render.markdown(report.sections([failed, *wide_run()[1:]]))
    assert "roofline peaks: not measured (exited with 1: no BLAS)" in text


@pytest.mark.slow  # a fresh interpreter that multiplies matrices for a second
def test_the_peaks_are_measured_in_a_pinned_process_on_the_threads_asked() -> None:
    env = {**os.environ, **environment(1)}
    peak = Peak.from_dict(last_json(python("-m", "bench.roofline", "1", env=env, timeout=60)))
    assert peak is not None and peak.threads == 1
    assert peak.gflops > 0 and peak.gbps > 0
    assert peak.blas and all(pool["num_threads"] == 1 for pool in peak.blas), peak.blas
    assert {"internal_api", "version", "architecture"} <= peak.blas[0].keys()


def test_a_failed_measurement_is_recorded_with_why(tmp_path: Path) -> None:
    """More threads than CPUs: the process refuses, and the run records why."""
    found = measure_roofline((os.cpu_count() or 1) + 64, tmp_path)
    assert found.keys() == {"error"} and "asked for" in found["error"], found
    assert roofline.Peak.from_dict(found) is None
