"""TensorFlow-specific promises of ``tf_while``: one trace per shape, a quiet terminal, and a
gradient loop that copies nothing T long and saves no weights per step."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import frae
from parity_tests.tolerances import assert_close

pytestmark = pytest.mark.backend_specific("tf_while")
pytest.importorskip("tensorflow")
backend = pytest.importorskip("impls.tf_while.backend")


def _tracing_counts(jit_compile: bool = True) -> dict[str, int]:
    functions = backend.compiled_functions(jit_compile)
    return {name: function.experimental_get_tracing_count() for name, function in functions.items()}


def _exercise(model: frae.Backend, x: np.ndarray) -> None:
    model.predict(x)
    model.decode(model.encode(x))
    model.loss_and_grads(x)
    model.fit(x, epochs=2, optimizer="sgd", learning_rate=0.1)
    model.fit(x, epochs=2, optimizer="adam", learning_rate=0.2)


def test_one_trace_per_shape_shared_by_instances() -> None:
    config = frae.FRAEConfig(encoder_units=(7,))  # a config no other test traces
    x = frae.data.multi_sine(batch=2, steps=13, seed=1)
    before = _tracing_counts()
    _exercise(frae.create("tf_while", config), x)
    first = _tracing_counts()
    traced = {"start_fit": 2}  # with Adam's slots and without (SGD)
    assert all(first[name] == before[name] + traced.get(name, 1) for name in first), first
    _exercise(frae.create("tf_while", config, seed=1), x)
    _exercise(frae.create("tf_while", config, seed=2), x * 0.5)
    assert _tracing_counts() == first, "same config and shapes traced again"
    _exercise(frae.create("tf_while", config), x[:, :11])
    shape_free = {"start_fit": 0}  # optimizer state has the weights' shapes, not the input's
    after = _tracing_counts()
    assert all(after[name] == first[name] + shape_free.get(name, 1) for name in first), after


def test_textbook_graph_mode_equals_compiled() -> None:
    x = frae.data.multi_sine(batch=3, steps=20, seed=2)
    compiled = frae.create("tf_while", seed=3)
    textbook = frae.create("bench.baselines.textbook_fix:TextbookFixBackend", seed=3)
    assert textbook.name == "textbook_fix"
    assert_close("outputs", textbook.predict(x), compiled.predict(x))
    before = _tracing_counts(jit_compile=False)["predict"]
    textbook.predict(x)
    assert _tracing_counts(jit_compile=False)["predict"] == before


QUIET_RUN = """
import numpy as np, frae

for steps in range(3, 10):  # many shapes and instances: TensorFlow's retracing advice
    model = frae.create("tf_while")
    x = np.full((2, steps, 2), 0.5, np.float32)
    model.predict(x)
    model.fit(x, epochs=1)
print("ran")
"""


def test_tensorflow_start_up_and_tracing_say_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-c", QUIET_RUN], capture_output=True, text=True, timeout=600, check=True
    )
    assert result.stdout == "ran\n"
    assert result.stderr == ""


def _gradient_loops(loss: object = None) -> str:
    """The optimized HLO of tf_while's ``loss_and_grads`` at T=37 (a length no weight has),
    with ``train.mean_squared_error`` replaced by ``loss`` if given."""
    from impls.tf_while import model as tf_model
    from impls.tf_while import train as tf_train
    from impls.tf_while.model import tf

    config, steps = frae.FRAEConfig(), 37
    x = tf.constant(frae.data.multi_sine(batch=2, steps=steps))
    variables = tf_model.create_variables(config)

    def loss_and_grads(x: tf.Tensor) -> object:
        with tf.GradientTape() as tape:
            value = (loss or tf_train.mean_squared_error)(config, variables, x, x)
        return value, tape.gradient(value, variables)

    function = tf.function(loss_and_grads, jit_compile=True, autograph=False)
    return function.experimental_get_compiler_ir(x)(stage="optimized_hlo")


def _loss_through_the_outputs(config, variables, x, y):  # type: ignore[no-untyped-def]
    from impls.tf_while import model as tf_model
    from impls.tf_while.model import tf

    return tf.reduce_mean(tf.square(tf_model.unroll(config, variables, x)[0] - y))


def _t_long_copies_in_loops(hlo: str) -> list[str]:
    from bench.kernels import loop_bodies

    return [
        shape
        for body in loop_bodies(hlo)
        for shape in re.findall(r"= (f32\[37,[^\]]*\])\S* copy\(", body)
    ]


def test_the_gradient_loop_copies_no_time_long_array() -> None:
    """Summing the loss inside the loop keeps each backward step's cost independent of T.

    Differentiated through the stacked outputs instead, XLA copies the T-long gradient
    arrays of the outputs and codes at every backward iteration (a step then costs time
    proportional to T): the same check finds those copies there.
    """
    assert _t_long_copies_in_loops(_gradient_loops()) == []
    assert _t_long_copies_in_loops(_gradient_loops(_loss_through_the_outputs))


def test_no_copy_of_a_kernel_is_saved_per_time_step() -> None:
    """The weights are read outside the loop: no (T, in, out) stack of a kernel exists.

    Read inside the body, each read is a new tensor per iteration, which the gradient saves.
    """
    assert not re.search(r"f32\[37,4,4\]", _gradient_loops())
