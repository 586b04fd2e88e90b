"""``bench.baselines.simd_floor``: equal to the Numba floor within float32 rounding, streamed."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import frae
from frae.tolerances import SIMD_FLOOR
from tests import bench_cases
from tests.bench_cases import STATE_CONFIGS, broken_floor, check_streaming, needs_cc, sequences
from tests.processes import python

# checked against the scalar floor, which Numba compiles in the process for each config:
# on the worker of the floors' other tests (test_numba_floor.py)
pytestmark = pytest.mark.backend_specific("numba_floor")
numba = pytest.importorskip("numba", reason="the floors need numba: pip install 'frae[bench]'")
from bench.baselines.numba_floor import NumbaFloorBackend  # noqa: E402
from bench.baselines.simd_floor import SOURCE, SimdFloorBackend, compile_simd  # noqa: E402

WIDE_CONFIG = frae.FRAEConfig(
    input_dim=3,
    encoder_units=(16, 8),
    latent_dim=2,
    decoder_units=(8, 16),
    activation="tanh",
    output_activation="sigmoid",
)
"""Wider layers than the default (16 units), other sizes everywhere, tanh and sigmoid."""
CONFIGS = {"default": frae.FRAEConfig(), "wide": WIDE_CONFIG}
BATCHES = (1, 37, 256)
STEPS = 60


def assert_within(quantity: str, actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Equal shapes and values within ``SIMD_FLOOR[quantity]`` of the scalar floor's."""
    tolerance = SIMD_FLOOR[quantity]
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    atol = tolerance.atol * (np.abs(expected).max() if tolerance.scaled else 1.0)
    np.testing.assert_allclose(actual, expected, tolerance.rtol, atol, err_msg=what)


def check_forward(model: frae.Backend, config: frae.FRAEConfig, batch: int) -> None:
    """``predict``, ``encode`` and ``decode`` against the scalar floor's."""
    scalar = NumbaFloorBackend(config, seed=3)
    x = sequences(config, 1, batch, STEPS)
    assert_within("outputs", model.predict(x), scalar.predict(x), "predict")
    codes = scalar.encode(x)
    assert_within("outputs", model.encode(x), codes, "encode")
    assert_within("outputs", model.decode(codes), scalar.decode(codes), "decode")


def check_gradients(model: frae.Backend, config: frae.FRAEConfig, batch: int) -> None:
    """The loss and every gradient against the scalar floor's, with y ≠ x."""
    x, y = sequences(config, 1, batch, STEPS), sequences(config, 2, batch, STEPS)
    loss, grads = model.loss_and_grads(x, y)
    expected_loss, expected = NumbaFloorBackend(config, seed=3).loss_and_grads(x, y)
    assert_within("loss", np.float64(loss), np.float64(expected_loss), "loss")
    assert grads.keys() == expected.keys()
    for name in expected:
        assert grads[name].dtype == np.float32, name
        assert_within("gradients", grads[name], expected[name], name)


class TailLanesDroppedFloor(SimdFloorBackend):
    """Broken: the lanes past the last full vector of 16 are left as they were (a missing
    remainder loop), here zero."""

    def _predict(self, x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        outputs, last = super()._predict(x, state)
        outputs[x.shape[0] // 16 * 16 :] = 0.0
        return outputs, last


class TruncatedSimdFloor(SimdFloorBackend):
    """Broken: back-propagation through the last three steps only (truncated BPTT)."""

    def _flat_loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        loss, _ = super()._flat_loss_and_grads(x, y)
        _, grads = super()._flat_loss_and_grads(x[:, -3:], y[:, -3:])
        return loss, grads


@pytest.mark.slow
@needs_cc
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS)
def test_the_simd_floor_equals_the_scalar_floor(config: frae.FRAEConfig, batch: int) -> None:
    model = SimdFloorBackend(config, seed=3)
    check_forward(model, config, batch)
    check_gradients(model, config, batch)


@pytest.mark.slow  # the scalar floor compiled for these configs in float32
@needs_cc
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize(
    "config", [WIDE_CONFIG, STATE_CONFIGS["state_deep"]], ids=["wide", "state_deep"]
)
def test_the_simd_floor_trains_as_the_scalar_floor(config: frae.FRAEConfig, optimizer: str) -> None:
    """``fit`` in mini-batches of 37 of 74 sequences: the remainder lanes in training too."""
    x = sequences(config, 1, 74, STEPS)
    options = {"epochs": 10, "batch_size": 37, "optimizer": optimizer, "learning_rate": 1e-2}
    losses = SimdFloorBackend(config, seed=3).fit(x, **options)["loss"]
    expected = NumbaFloorBackend(config, seed=3).fit(x, **options)["loss"]
    assert_within("training", np.array(losses), np.array(expected), f"{optimizer} losses")


BROKEN = {
    "dropped-tail-lanes-B=37": (TailLanesDroppedFloor, check_forward, 37),
    "dropped-tail-lanes-B=1": (TailLanesDroppedFloor, check_forward, 1),
    "truncated-bptt": (TruncatedSimdFloor, check_gradients, 37),
}


@needs_cc
@pytest.mark.parametrize(("broken", "check", "batch"), BROKEN.values(), ids=BROKEN)
def test_the_checks_reject_a_broken_simd_floor(
    broken: type[SimdFloorBackend], check: Callable[..., None], batch: int
) -> None:
    config = frae.FRAEConfig()
    with pytest.raises(AssertionError):
        check(broken(config, seed=3), config, batch)


def check_against_the_reference(model: frae.Backend, config: frae.FRAEConfig, batch: int) -> None:
    """``predict``, ``encode``, ``decode``, the loss and every gradient against the float64
    reference's, within the suite's float32 tolerances."""
    bench_cases.check_forward(model, config, batch, STEPS)
    bench_cases.check_gradients(model, config, batch, STEPS)


broken = partial(broken_floor, SimdFloorBackend, SOURCE, compile_simd)
"""The SIMD floor with each ``(old, new)`` of its edits made in ``simd_floor.c``."""


GRU_MISTAKES = {
    "the-old-state-not-kept-by-the-update-gate": (
        [("state[b] = (1.0f - update) * candidate + update * previous[b];", "state[b] = 0.0f;")],
        37,
    ),
    "the-candidates-recurrent-bias-outside-the-reset-gate": (
        [
            (
                "float c_n = theta[GRU_RECURRENT_BIAS + 2 * STATE + j];",
                "float c_n = 0.0f;\n            a_n += theta[GRU_RECURRENT_BIAS + 2 * STATE + j];",
            )
        ],
        37,
    ),
    "no-gradient-through-the-update-gates-direct-path": (
        [("d_previous[b] += d_state[b] * update;", "")],
        37,
    ),
    "no-carry-from-the-next-step": (
        [("delta[(long)STATE_ROW * batch + k] += carry[k];", "(void)carry;")],
        37,
    ),
    "recurrent-kernel-gradient-of-the-candidate-without-the-reset-gate": (
        [("d_u_n[b] += fed[b] * d_c_n[b];", "d_u_n[b] += fed[b] * d_n[b];")],
        37,
    ),
    "B=1-the-update-gate-recorded-as-the-reset-gate": (
        [("h[GATE_ROW + j] = reset;", "h[GATE_ROW + j] = update;")],
        1,
    ),
    "B=1-no-gradient-into-the-code": ([("delta[CODE_ROW + i] += d_z;", "(void)d_z;")], 1),
}


@needs_cc
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("config", STATE_CONFIGS.values(), ids=STATE_CONFIGS)
def test_the_simd_floor_with_a_gru_equals_the_reference(
    config: frae.FRAEConfig, batch: int
) -> None:
    check_against_the_reference(SimdFloorBackend(config, seed=3), config, batch)


@needs_cc
@pytest.mark.parametrize(("edits", "batch"), GRU_MISTAKES.values(), ids=GRU_MISTAKES)
def test_the_gru_checks_reject_a_broken_simd_floor(
    edits: list[tuple[str, str]], batch: int, tmp_path: Path
) -> None:
    """Each mistake where its code runs: the loops over lanes (B = 37) or over the GRU's
    columns (B = 1)."""
    config = STATE_CONFIGS["state_deep"]
    with pytest.raises(AssertionError):
        check_against_the_reference(broken(tmp_path, *edits)(config, seed=3), config, batch)


def test_without_a_compiler_the_floor_is_refused_and_the_benchmark_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bench.catalogue import VARIANTS, unavailable

    (variant,) = [v for v in VARIANTS if v.role == "simd_floor"]
    monkeypatch.setenv("PATH", "")
    compile_simd.cache_clear()  # a library built earlier in this process would still load
    try:
        with pytest.raises(RuntimeError, match="no C compiler"):
            SimdFloorBackend(frae.FRAEConfig(), seed=3)
    finally:
        compile_simd.cache_clear()
    assert unavailable(variant) == "no C compiler (cc or gcc) on PATH"


STREAMING_CONFIGS = {"output": frae.FRAEConfig(), "state": STATE_CONFIGS["state_deep"]}
STREAM_MISTAKES = {
    "state-dropped": [("initial ? initial[b * FEEDBACK + f] : 0.0f;", "0.0f;")],
    "state-from-before-the-last-step": [
        ("h[(FED_BACK_ROW + f) * batch + b];", "h[(FEEDBACK_A + f) * batch + b];")
    ],
}


@needs_cc
@pytest.mark.parametrize("batch", [1, 37])
@pytest.mark.parametrize("config", STREAMING_CONFIGS.values(), ids=STREAMING_CONFIGS)
def test_the_simd_floor_streams_in_chunks_as_one_call(config: frae.FRAEConfig, batch: int) -> None:
    check_streaming(SimdFloorBackend(config, seed=3), config, batch=batch)


@needs_cc
@pytest.mark.parametrize("edits", STREAM_MISTAKES.values(), ids=STREAM_MISTAKES)
@pytest.mark.parametrize("config", STREAMING_CONFIGS.values(), ids=STREAMING_CONFIGS)
def test_the_streaming_check_rejects_a_broken_simd_floor(
    config: frae.FRAEConfig, edits: list[tuple[str, str]], tmp_path: Path
) -> None:
    model = broken(tmp_path, *edits)(config, seed=3)
    with pytest.raises(AssertionError):
        check_streaming(model, config, batch=37)


KEEPS_SUBNORMALS = """
import importlib, sys, numpy as np, frae
module, name = sys.argv[1].split(":")
backend = getattr(importlib.import_module(module), name)(frae.FRAEConfig(), seed=0)
backend.predict(np.ones((1, 2, 2), np.float32))
print(np.float32(1e-38) * np.float32(1e-3) > 0)
"""


@needs_cc
@pytest.mark.parametrize(
    "backend",
    [
        "bench.baselines.matrix_floor:MatrixFloorBackend",
        "bench.baselines.simd_floor:SimdFloorBackend",
    ],
    ids=["matrix", "simd"],
)
def test_loading_a_fast_math_floor_keeps_subnormals_in_the_process(backend: str) -> None:
    """In a fresh process, after the library is loaded, 1e-38 · 1e-3 stays 1e-41 in float32 (a
    library linked with -ffast-math would flush every subnormal in the process to zero)."""
    result = python("-c", KEEPS_SUBNORMALS, backend, timeout=120)
    assert result.stdout.strip() == "True", result.stdout
