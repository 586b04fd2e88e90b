"""TensorFlow-specific promises of ``tf_while``: one trace per shape, a state that is an input of
the compiled program, a quiet terminal, no weights saved per step (see ``tf_while_checks``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

import frae
from tests import tf_while_checks as checks
from tests.processes import python

pytestmark = pytest.mark.backend_specific("tf_while")
pytest.importorskip("tensorflow")
backend = pytest.importorskip("impls.tf_while.backend")


RATE = {"code_step": 2**-3, "rate_weight": 0.05}
"""The contract's "Rate": its bits summed in the training loop, its prior read as weights."""


@pytest.mark.parametrize(
    "config",
    [
        frae.FRAEConfig(encoder_units=(7,)),  # configs no other test traces
        frae.FRAEConfig(encoder_units=(7,), feedback="state", state_dim=6),
        frae.FRAEConfig(encoder_units=(7,), **RATE),
        frae.FRAEConfig(encoder_units=(7,), feedback="state", state_dim=6, **RATE),
    ],
    ids=["output", "state", "rate_output", "rate_state"],
)
@pytest.mark.slow
def test_one_trace_per_shape_shared_by_instances(config: frae.FRAEConfig) -> None:
    checks.one_trace_per_shape("tf_while", backend.compiled_functions, config)


@pytest.mark.parametrize("model_kind", ["output", "state"])
def test_a_new_state_value_does_not_retrace(model_kind: str) -> None:
    config = dataclasses.replace(checks.MODELS[model_kind], encoder_units=(6,))
    checks.a_new_state_value_does_not_retrace("tf_while", backend.compiled_functions, config)


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
    python("-c", XLA_RUN, env=env)
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
    result = python("-c", QUIET_RUN)
    assert result.stdout == "ran\n"
    assert result.stderr == ""


STATE_FEEDBACK = frae.FRAEConfig(feedback="state", state_dim=5)


@pytest.mark.parametrize("config", [frae.FRAEConfig(), STATE_FEEDBACK], ids=["output", "state"])
def test_no_copy_of_a_kernel_is_saved_per_time_step(config: frae.FRAEConfig) -> None:
    """The weights are read outside the loop: the gradient saves no (T, in, out) stack of a
    kernel."""
    hlo = checks.gradient_loops(config=config)
    kernels = [shape for shape in config.parameter_shapes().values() if len(shape) == 2]
    saved = [shape for shape in kernels if f"f32[37,{shape[0]},{shape[1]}]" in hlo]
    assert saved == []
