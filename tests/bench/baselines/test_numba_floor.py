"""``bench.baselines.numba_floor``: the reference's maths, streamed in chunks, compiled once."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
import pytest

import frae
from bench.baselines.c_forward import CForwardBackend
from frae.backend import Array, Streamed
from parity_tests.tolerances import assert_close
from tests.bench_cases import (
    BIAS,
    OTHER_CONFIG,
    STATE_CONFIG,
    STATE_CONFIGS,
    check_forward,
    check_gradients,
    check_streaming,
    dropped,
    needs_cc,
    sequences,
)
from tests.processes import fresh_json

# Numba compiles each config's loops in the process that runs them, for each dtype (a
# closure per config: nothing to cache on disk); the floors' tests share one worker
pytestmark = pytest.mark.backend_specific("numba_floor")
numba = pytest.importorskip("numba", reason="the floor needs numba: pip install 'frae[bench]'")
from bench.baselines import numba_floor as floor  # noqa: E402


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


@pytest.mark.slow
def test_the_floor_computes_the_same_bits_at_numbas_default_optimization() -> None:
    """Compiled at level 0 here (the root ``conftest.py``), at Numba's default 3 in the
    benchmark: the GRU model's gradients are the same bits."""
    assert numba.config.OPT == 0
    script = f"import json, {__name__} as floors; print(json.dumps(floors.gradient_bits()))"
    assert gradient_bits() == fresh_json(script, NUMBA_OPT="3")


def gradient_bits() -> str:
    _, grads = floor.NumbaFloorBackend(STATE_CONFIG, seed=3).loss_and_grads(
        sequences(STATE_CONFIG, 1)
    )
    return hashlib.sha256(np.concatenate([np.ravel(g) for g in grads.values()])).hexdigest()


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
