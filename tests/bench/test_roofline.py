"""``bench.roofline``: counts from the layer table equal the hand's; peaks in a pinned process."""

from __future__ import annotations

import os

import pytest

import frae
from bench import roofline
from bench.measuring.threads import environment
from bench.records import Key
from bench.reporting.analysis import Pivot
from bench.reporting.sections.wide_layers import ROOFLINE_MODEL
from bench.roofline import Counts, Peak, counts
from frae.config import GRU, Layer
from tests.bench_cases import OTHER_CONFIG, PEAK, wide_run
from tests.bench_cases import ROOFLINE_WIDE as WIDE
from tests.processes import last_json, python

STATE = frae.FRAEConfig(
    input_dim=2, encoder_units=(3,), latent_dim=4, decoder_units=(5,), feedback="state", state_dim=6
)
"""A state-feedback model of sizes all different from each other and from ``OTHER_CONFIG``'s."""

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


def test_the_roofline_is_the_slower_of_its_two_sides() -> None:
    assert PEAK.time_us(Counts(2e6, 1e3)) == pytest.approx(20.0)  # 2 MFLOP at 100 GFLOP/s
    assert PEAK.time_us(Counts(1e3, 3e7)) == pytest.approx(30.0)  # 30 MB at 1000 GB/s
    assert PEAK.bound(Counts(2e6, 1e3)) == "FLOPs" and PEAK.bound(Counts(1e3, 3e7)) == "bytes"


def test_a_ratio_to_the_roofline_is_the_figure_over_it() -> None:
    pivot = Pivot.of(wide_run(), ROOFLINE_MODEL)
    key = Key("jax", "predict", ROOFLINE_MODEL, 256, 1000)
    assert roofline.roofline_us(pivot, key) == pytest.approx(WIDE_PREDICT_FLOPS / 1e5)
    assert roofline.roofline_ratio(pivot, key) == pytest.approx(2.0)
    without = Pivot.of(wide_run(peak=None), ROOFLINE_MODEL)  # a run from before the roofline
    assert roofline.roofline_ratio(without, key) is None


@pytest.mark.slow  # a fresh interpreter that multiplies matrices for a second
def test_the_peaks_are_measured_in_a_pinned_process_on_the_threads_asked() -> None:
    env = {**os.environ, **environment(1)}
    peak = Peak.from_dict(last_json(python("-m", "bench.roofline", "1", env=env, timeout=60)))
    assert peak is not None and peak.threads == 1
    assert peak.gflops > 0 and peak.gbps > 0
    assert peak.blas and all(pool["num_threads"] == 1 for pool in peak.blas), peak.blas
    assert {"internal_api", "version", "architecture"} <= peak.blas[0].keys()
