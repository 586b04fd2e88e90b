"""TensorFlow-specific promises of ``tf_while``: one trace per shape, a state that is an
input of the compiled program (no retrace, one XLA compilation per chunk length), a quiet
terminal, a gradient loop that saves no weights per step, and GRU weights that Keras' own
``GRUCell`` steps as the reference does (the checks its benchmark variants share are
``tests.tf_while_checks``)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import frae
from frae import gru_layout
from parity_tests.tolerances import assert_close
from tests import tf_while_checks as checks

pytestmark = pytest.mark.backend_specific("tf_while")
pytest.importorskip("tensorflow")
backend = pytest.importorskip("impls.tf_while.backend")


@pytest.mark.parametrize(
    "config",
    [
        frae.FRAEConfig(encoder_units=(7,)),  # configs no other test traces
        frae.FRAEConfig(encoder_units=(7,), feedback="state", state_dim=6),
    ],
    ids=["output", "state"],
)
@pytest.mark.slow
def test_one_trace_per_shape_shared_by_instances(config: frae.FRAEConfig) -> None:
    checks.one_trace_per_shape("tf_while", backend.compiled_functions, config)


@pytest.mark.parametrize("model_kind", ["output", "state"])
def test_a_new_state_value_does_not_retrace(model_kind: str) -> None:
    config = dataclasses.replace(checks.MODELS[model_kind], encoder_units=(6,))
    checks.a_new_state_value_does_not_retrace("tf_while", backend.compiled_functions, config)


@pytest.mark.parametrize("model_kind", ["output", "state"])
def test_chunks_chained_through_the_state_equal_one_call(model_kind: str) -> None:
    checks.chunks_chained_through_the_state_equal_one_call("tf_while", checks.MODELS[model_kind])


XLA_RUN = """
import numpy as np, frae

model = frae.create("tf_while", frae.FRAEConfig(feedback="state", state_dim=3))
x = np.ones((3, 4, 2), np.float32)
for value in (0.5, -0.25, 2.0):
    model.predict(x, state=np.full((3, 3), value, np.float32))
model.predict(x)  # from zeros
model.predict(x[:, :3], state=np.ones((3, 3), np.float32))
"""


@pytest.mark.slow
def test_one_xla_compilation_per_chunk_length_whatever_the_state(tmp_path: Path) -> None:
    """XLA dumps each program it compiles: predict from four states (zeros among them) at
    4 steps and from one at 3 compiles two programs, one per chunk length."""
    flags = f"--xla_dump_to={tmp_path} --xla_dump_hlo_module_re=.*predict.*"
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}"}
    subprocess.run([sys.executable, "-c", XLA_RUN], env=env, timeout=600, check=True)
    programs = sorted(path.name for path in tmp_path.glob("*.before_optimizations.txt"))
    assert len(programs) == 2, programs


QUIET_RUN = """
import numpy as np, frae

for steps in range(3, 10):  # many shapes and instances: TensorFlow's retracing advice
    model = frae.create("tf_while")
    x = np.full((2, steps, 2), 0.5, np.float32)
    model.predict(x)
    model.fit(x, epochs=1)
print("ran")
"""


@pytest.mark.slow
def test_tensorflow_start_up_and_tracing_say_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-c", QUIET_RUN], capture_output=True, text=True, timeout=600, check=True
    )
    assert result.stdout == "ran\n"
    assert result.stderr == ""


STATE_FEEDBACK = frae.FRAEConfig(feedback="state", state_dim=5)


@pytest.mark.parametrize("config", [frae.FRAEConfig(), STATE_FEEDBACK], ids=["output", "state"])
def test_no_copy_of_a_kernel_is_saved_per_time_step(config: frae.FRAEConfig) -> None:
    """The weights are read outside the loop: no (T, in, out) stack of a kernel exists.

    Read inside the body, each read is a new tensor per iteration, which the gradient saves.
    """
    hlo = checks.gradient_loops(config=config)
    kernels = [shape for shape in config.parameter_shapes().values() if len(shape) == 2]
    saved = [shape for shape in kernels if f"f32[37,{shape[0]},{shape[1]}]" in hlo]
    assert saved == []


def _random_gru(seed: int) -> tuple[frae.config.GRU, dict[str, np.ndarray]]:
    """A GRU of L=3 inputs and H=5 units with canonical weights N(0, 0.5): every block and
    bias different, so a swapped gate changes the state."""
    gru = frae.FRAEConfig(latent_dim=3, feedback="state", state_dim=5).gru
    assert gru is not None
    rng = np.random.default_rng(seed)
    weights = {
        name: rng.normal(0.0, 0.5, size=shape).astype(np.float32)
        for name, shape in gru.parameter_shapes().items()
    }
    return gru, weights


def _swap_reset_and_update(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``weights`` with the reset and update column blocks exchanged (a mapping's likely slip)."""
    swapped = {}
    for name, array in weights.items():
        reset, update, candidate = np.split(array, 3, axis=-1)
        swapped[name] = np.concatenate([update, reset, candidate], axis=-1)
    return swapped


def _keras_states(
    gru: frae.config.GRU, canonical: dict[str, np.ndarray], codes: np.ndarray
) -> np.ndarray:
    """The states s_1..s_T of ``tf.keras.layers.GRUCell(reset_after=True)`` holding
    ``canonical`` through ``gru_layout.to_keras``, stepped from s_0 = 0 over ``codes`` (B, T, L)."""
    from impls.tf_while.model import tf

    cell = tf.keras.layers.GRUCell(gru.state_dim, reset_after=True)
    cell.build((None, gru.input_dim))
    cell.set_weights(gru_layout.to_keras(gru, canonical))
    state = np.zeros((codes.shape[0], gru.state_dim), np.float32)
    states = []
    for t in range(codes.shape[1]):
        state, _ = cell(codes[:, t], state)
        states.append(np.asarray(state))
    return np.stack(states, axis=1)


def _reference_states(
    gru: frae.config.GRU, canonical: dict[str, np.ndarray], codes: np.ndarray
) -> np.ndarray:
    """The float64 reference's ``gru_step`` over ``codes`` from s_0 = 0, states (B, T, H)."""
    from impls.reference.model import gru_step

    params = {name: array.astype(np.float64) for name, array in canonical.items()}
    state = np.zeros((codes.shape[0], gru.state_dim))
    states = []
    for t in range(codes.shape[1]):
        state, _ = gru_step(params, gru, codes[:, t].astype(np.float64), state)
        states.append(state)
    return np.stack(states, axis=1)


def test_keras_gru_cell_steps_the_canonical_gru_through_the_mapping() -> None:
    """Canonical GRU weights, loaded by ``gru_layout.to_keras`` into Keras' stock
    ``GRUCell``, step as the reference's ``gru_step`` does (B=4, T=6, L=3, H=5); with the
    reset and update blocks swapped the same comparison misses by far more than the
    tolerance, so the check would catch a mapping that swaps them; and the mapping's
    inverse recovers the weights."""
    gru, canonical = _random_gru(seed=6)
    codes = np.random.default_rng(7).normal(0.0, 1.0, size=(4, 6, 3)).astype(np.float32)
    expected = _reference_states(gru, canonical, codes)
    assert_close("outputs", _keras_states(gru, canonical, codes), expected)

    swapped = _keras_states(gru, _swap_reset_and_update(canonical), codes)
    assert np.abs(swapped - expected).max() > 1e-2  # 10⁴ times the tolerance's atol

    round_trip = gru_layout.from_keras(gru, gru_layout.to_keras(gru, canonical))
    assert round_trip.keys() == canonical.keys()
    for name, array in canonical.items():
        np.testing.assert_array_equal(round_trip[name], array, err_msg=name)
