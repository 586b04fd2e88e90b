"""The floors compute the model (Numba floor and C forward against the reference), stream in
chunks, compile once for every state and keep the process clean; each check rejects a mistake."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from frae.backend import Array, BaseBackend, Streamed
from parity_tests.tolerances import assert_close
from tests.bench_cases import (
    NO_HIDDEN_CONFIG,
    OTHER_CONFIG,
    STATE_CONFIG,
    STATE_CONFIGS,
    check_forward,
    check_gradients,
    check_streaming,
    sequences,
)
from tests.processes import python

numba = pytest.importorskip("numba", reason="the floor needs numba: pip install 'frae[bench]'")

from bench.baselines import numba_floor as floor  # noqa: E402
from bench.baselines.c_forward import CForwardBackend, compile_forward, compiler  # noqa: E402
from bench.baselines.layout import flatten, plan, unflatten  # noqa: E402
from bench.baselines.matrix_floor import MatrixFloorBackend, compile_matrix  # noqa: E402
from bench.baselines.simd_floor import SimdFloorBackend, compile_simd  # noqa: E402

# Numba compiles each config's loops in the process that runs them, for each dtype (a
# closure per config: nothing to cache on disk); the floors' tests share one worker
pytestmark = pytest.mark.backend_specific("numba_floor")

ROOT = Path(__file__).resolve().parent.parent
needs_cc = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc or gcc)")


def dropped[B: BaseBackend](base: type[B], name: str) -> type[B]:
    """Broken: ``base`` with the weight ``name`` lost on the way in (a forgotten offset)."""

    class Dropped(base):  # type: ignore[valid-type,misc]
        def _write_weights(self, weights: dict[str, Any]) -> None:
            super()._write_weights({**weights, name: 0 * weights[name]})

    return Dropped


class ShiftedGradientFloor(floor.NumbaFloor64Backend):
    """Broken: gradients read one slot off in the flat vector."""

    def _flat_loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grads = super()._flat_loss_and_grads(x, y)
        return loss, np.roll(grads, 1)


class TruncatedFloor(floor.NumbaFloor64Backend):
    """Broken: back-propagation through the last three steps only (truncated BPTT)."""

    def _flat_loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        loss, _ = super()._flat_loss_and_grads(x, y)
        tail = slice(x.shape[1] - 3, None)
        _, grads = super()._flat_loss_and_grads(x[:, tail], y[:, tail])
        return loss, grads


BIAS = "decoder/output/bias"
FLOAT64_CONFIGS = {"default": frae.FRAEConfig(), "other": OTHER_CONFIG, **STATE_CONFIGS}


@pytest.mark.slow
@pytest.mark.parametrize("config", FLOAT64_CONFIGS.values(), ids=FLOAT64_CONFIGS)
def test_numba_floor_float64_equals_the_reference(config: frae.FRAEConfig) -> None:
    model = floor.NumbaFloor64Backend(config, seed=3)
    check_forward(model, config)
    check_gradients(model, config)


@pytest.mark.slow
@pytest.mark.parametrize("config", [frae.FRAEConfig(), STATE_CONFIG], ids=["default", "state"])
def test_numba_floor_float32_is_within_float32_tolerances(config: frae.FRAEConfig) -> None:
    """As the benchmark runs it; also a 30-step Adam trajectory through ``fit``."""
    model = floor.NumbaFloorBackend(config, seed=3)
    assert model.predict(sequences(config, 1)).dtype == np.float32
    check_forward(model, config)
    check_gradients(model, config)
    x = sequences(config, seed=1)
    trajectory = model.fit(x, epochs=30, learning_rate=1e-2)["loss"]
    expected = frae.create("reference", config, seed=3).fit(x, epochs=30, learning_rate=1e-2)
    assert_close("adam", np.array(trajectory, np.float32), np.array(expected["loss"]))


BROKEN_FLOORS = {
    "dropped-bias": (dropped(floor.NumbaFloor64Backend, BIAS), check_forward, frae.FRAEConfig()),
    "shifted-gradient": (ShiftedGradientFloor, check_gradients, frae.FRAEConfig()),
    "truncated-bptt": (TruncatedFloor, check_gradients, frae.FRAEConfig()),
    "state-dropped-recurrent-bias": (
        dropped(floor.NumbaFloor64Backend, "decoder/gru/recurrent_bias"),
        check_forward,
        STATE_CONFIG,
    ),
    "state-shifted-gradient": (ShiftedGradientFloor, check_gradients, STATE_CONFIG),
    "state-truncated-bptt": (TruncatedFloor, check_gradients, STATE_CONFIG),
}


@pytest.mark.parametrize(("broken", "check", "config"), BROKEN_FLOORS.values(), ids=BROKEN_FLOORS)
def test_the_floor_checks_reject_a_broken_floor(
    broken: type[floor.NumbaFloor64Backend], check: Callable[..., None], config: frae.FRAEConfig
) -> None:
    with pytest.raises(AssertionError):
        check(broken(config, seed=3), config)


def test_the_floor_layout_reads_the_concatenation_directly_without_hidden_units() -> None:
    """With no hidden layers the latent and output layers read their inputs' blocks."""
    layout = plan(NO_HIDDEN_CONFIG)
    latent, output = layout.layers
    assert latent[:2] == (0, 4)  # [x_t, x̂_{t-1}]
    assert output[:2] == (layout.code_row, 3)  # [z_t, x̂_{t-1}]
    weights = frae.initial_weights(NO_HIDDEN_CONFIG, seed=5)
    assert all(
        np.array_equal(a, weights[k])
        for k, a in unflatten(flatten(weights, layout, np.float32), layout).items()
    )


def test_the_floor_layout_places_the_gru_between_the_encoder_and_the_decoder() -> None:
    """[x_t, s_{t-1}] in, z_t, the GRU's four blocks and s_t, then the decoder reading s_t;
    s_{t-1} is the one block fed back, and the flat weights hold the GRU's four tensors."""
    config = STATE_CONFIGS["state_deep"]  # F = 3, encoder (12, 6), L = 2, decoder (10, 5), H = 11
    layout = plan(config)
    gru = layout.gru
    assert gru is not None and gru.state == 11
    assert layout.layers[0][:2] == (0, 3 + 11)  # [x_t, s_{t-1}]
    assert layout.code_row == 3 + 11 + 12 + 6
    assert (gru.previous_row, gru.gate_row) == (3, layout.code_row + 2)
    assert gru.state_row == gru.gate_row + 4 * 11
    assert layout.layers[layout.encoder_layers][:2] == (gru.state_row, 11)  # reads s_t
    assert layout.feedback_rows == (3,) and layout.feedback_width == 11
    assert (layout.output_row, layout.rows) == (layout.rows - 3, gru.state_row + 11 + 10 + 5 + 3)
    weights = frae.initial_weights(config, seed=5)
    assert (
        gru.recurrent_kernel == gru.kernel + 2 * 33 and gru.bias == gru.recurrent_kernel + 11 * 33
    )
    round_trip = unflatten(flatten(weights, layout, np.float64), layout)
    assert all(np.array_equal(a, weights[k]) for k, a in round_trip.items())
    assert round_trip.keys() == weights.keys()


@needs_cc
@pytest.mark.parametrize(
    "config",
    [frae.FRAEConfig(), OTHER_CONFIG, NO_HIDDEN_CONFIG],
    ids=["default", "other", "no-hidden"],
)
def test_c_forward_equals_the_reference(config: frae.FRAEConfig) -> None:
    model = CForwardBackend(config, seed=3)
    x = sequences(config, seed=1)
    assert_close("outputs", model.predict(x), frae.create("reference", config, seed=3).predict(x))


@needs_cc
def test_the_floors_without_a_gru_refuse_a_state_feedback_model() -> None:
    for backend in (CForwardBackend, MatrixFloorBackend):
        with pytest.raises(NotImplementedError, match="no GRU"):
            backend(STATE_CONFIG, seed=3)


LEAVES_NOTHING = """
import os, tempfile
import frae
from bench.baselines.c_forward import compile_forward
from bench.baselines.simd_floor import compile_simd
compile_forward(frae.FRAEConfig())
compile_simd(frae.FRAEConfig())
print(len(os.listdir(tempfile.gettempdir())))
"""


@needs_cc
def test_the_c_floors_leave_no_build_folder(tmp_path: Path) -> None:
    """Each C floor builds in a temporary folder of its own, removed when its process exits
    (a benchmark builds one per config and process)."""
    environment = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = python("-c", LEAVES_NOTHING, env=environment, timeout=300)
    assert result.stdout.split()[-1] == "2", "both folders while the process ran"
    assert list(tmp_path.iterdir()) == []


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


@needs_cc
def test_the_c_check_rejects_a_broken_forward() -> None:
    config = frae.FRAEConfig()
    x = sequences(config, seed=1)
    expected = frae.create("reference", config, seed=3).predict(x)
    with pytest.raises(AssertionError):
        assert_close("outputs", dropped(CForwardBackend, BIAS)(config, seed=3).predict(x), expected)


class StateDroppedFloor(floor.NumbaFloorBackend):
    """Broken: every call starts from zeros, whatever state it is given."""

    def _stream(self, sequences: Array, state: Array, codes_given: bool, keep: str) -> Streamed:
        return super()._stream(sequences, np.zeros_like(state), codes_given, keep)


class StateGivenBackFloor(floor.NumbaFloorBackend):
    """Broken: the state returned is the one given (the loop's last feedback never read)."""

    def _stream(self, sequences: Array, state: Array, codes_given: bool, keep: str) -> Streamed:
        return super()._stream(sequences, state, codes_given, keep)[0], state


class WorkspaceHandedOutFloor(floor.NumbaFloorBackend):
    """Broken: the outputs handed out as the workspace's transpose, copied only where it is not
    contiguous: z of one step with L = 1 is the workspace itself, which the next call of that
    shape overwrites."""

    def _stream(self, sequences: Array, state: Array, codes_given: bool, keep: str) -> Streamed:
        final = np.empty_like(state)
        space = self._unroll(sequences, codes_given, record=False, streamed=(state, final))
        return np.ascontiguousarray(getattr(space, keep).transpose(2, 0, 1)), final


class StateDroppedC(CForwardBackend):
    """Broken: the C forward starts from zeros, whatever state it is given."""

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        return super()._predict(x, np.zeros_like(state))


EVERY_CALL = ("predict", "encode", "decode")
C_PREDICT = ("predict",)  # the C forward predicts alone
STREAMING = {
    "numba-output": (floor.NumbaFloorBackend, frae.FRAEConfig(), EVERY_CALL),
    "numba-state": (floor.NumbaFloorBackend, STATE_CONFIG, EVERY_CALL),
    "numba-float64-state": (floor.NumbaFloor64Backend, STATE_CONFIGS["state_deep"], EVERY_CALL),
    "c-forward": pytest.param(CForwardBackend, OTHER_CONFIG, C_PREDICT, marks=needs_cc),
}
BROKEN_STREAMS = {
    "state-dropped": (StateDroppedFloor, frae.FRAEConfig(), EVERY_CALL),
    "state-given-back": (StateGivenBackFloor, frae.FRAEConfig(), EVERY_CALL),
    "workspace-handed-out": (WorkspaceHandedOutFloor, frae.FRAEConfig(), EVERY_CALL),
    "gru-state-dropped": (StateDroppedFloor, STATE_CONFIG, EVERY_CALL),
    "gru-state-given-back": (StateGivenBackFloor, STATE_CONFIG, EVERY_CALL),
    "c-forward-state-dropped": pytest.param(StateDroppedC, OTHER_CONFIG, C_PREDICT, marks=needs_cc),
}


@pytest.mark.parametrize(("backend", "config", "operations"), STREAMING.values(), ids=STREAMING)
def test_the_floors_stream_in_chunks_as_one_call(
    backend: type[frae.Backend], config: frae.FRAEConfig, operations: tuple[str, ...]
) -> None:
    check_streaming(backend(config, seed=3), config, operations)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("broken", "config", "operations"), BROKEN_STREAMS.values(), ids=BROKEN_STREAMS
)
def test_the_streaming_check_rejects_a_broken_floor(
    broken: type[frae.Backend], config: frae.FRAEConfig, operations: tuple[str, ...]
) -> None:
    with pytest.raises(AssertionError):
        check_streaming(broken(config, seed=3), config, operations)  # type: ignore[call-arg]


@pytest.mark.parametrize("config", [frae.FRAEConfig(), STATE_CONFIG], ids=["output", "state"])
def test_the_numba_floor_compiles_once_for_every_state(config: frae.FRAEConfig) -> None:
    """Numba compiles a loop once per argument types: two states, a batch of one and another
    chunk length add none to the forward's one signature, and the states do change x̂."""
    model = floor.NumbaFloorBackend(config, seed=3)
    x = sequences(config, seed=1)
    first = model.predict(x, state=np.full((3, config.feedback_dim), 0.5))
    second = model.predict(x, state=np.full((3, config.feedback_dim), -0.5))
    model.predict(x[:1, :2], state=np.zeros((1, config.feedback_dim)))
    model.decode(model.encode(x))
    assert not np.allclose(first, second)
    assert len(model._kernels.forward.signatures) == 1


C_FLOORS = {  # a config of its own each, so that its one build is the test's
    "c_forward": (
        CForwardBackend,
        compile_forward,
        frae.FRAEConfig(input_dim=4, encoder_units=(3,), latent_dim=2, decoder_units=(5,)),
    ),
    "matrix": (
        MatrixFloorBackend,
        compile_matrix,
        frae.FRAEConfig(input_dim=3, encoder_units=(20,), latent_dim=4, decoder_units=(18,)),
    ),
    "simd-output": (
        SimdFloorBackend,
        compile_simd,
        frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2, decoder_units=(6,)),
    ),
    "simd-state": (
        SimdFloorBackend,
        compile_simd,
        frae.FRAEConfig(input_dim=3, latent_dim=2, feedback="state", state_dim=5),
    ),
}


@needs_cc
@pytest.mark.parametrize(("backend", "build", "config"), C_FLOORS.values(), ids=C_FLOORS)
def test_a_c_floor_compiles_once_for_every_state(
    backend: type[frae.Backend], build: Any, config: frae.FRAEConfig
) -> None:
    """One library per config, built when the backend is made: not again for two states,
    another chunk length, encode or decode (the C forward predicts alone)."""
    misses = build.cache_info().misses
    model = backend(config, seed=3)  # type: ignore[call-arg]
    x, states = sequences(config, 1, 37), np.zeros((37, config.feedback_dim))
    first, second = (model.predict(x, state=states + value) for value in (0.5, -0.5))
    model.predict(x[:, :3], state=states)
    if backend is not CForwardBackend:
        model.decode(model.encode(x[:, :3], state=states))
    assert not np.allclose(first, second)
    assert build.cache_info().misses == misses + 1
