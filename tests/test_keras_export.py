"""keras_rnn's export refusals, pinned: each refused route is tried against the installed
Keras and framework, so an upgrade that lifts one fails here and shows it can be made.

TensorFlow's refusal runs in this process (its Keras runs on TensorFlow); JAX's and torch's
in a process whose Keras runs on them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import frae
from tests.processes import python

pytestmark = pytest.mark.backend_specific("keras_rnn")
keras = pytest.importorskip("keras")
pytest.importorskip("impls.keras_rnn.backend")

PROBES = {
    "jax": """
import sys, numpy as np, frae
import tensorflow as tf
model = frae.create("keras_rnn")
x, state = np.zeros((1, 3, 2), np.float32), np.zeros((1, 2), np.float32)
model.keras_model([x, state])
model.keras_model.export(sys.argv[1], format="tf_saved_model", verbose=False)
loaded = tf.saved_model.load(sys.argv[1])
try:
    loaded.serve([x, state])
except Exception as error:
    print("refused:", "deserialize" in str(error))
try:
    model.keras_model.export(sys.argv[1] + ".onnx", format="onnx", verbose=False)
except ImportError as error:
    print("refused:", "jax2onnx" in str(error))
""",
    "torch": """
import sys, numpy as np, frae, onnxruntime
model = frae.create("keras_rnn")
x, state = np.zeros((1, 5, 2), np.float32), np.zeros((1, 2), np.float32)
model.keras_model([x, state])
model.keras_model.export(sys.argv[1] + ".onnx", format="onnx", verbose=False)
session = onnxruntime.InferenceSession(sys.argv[1] + ".onnx")
names = [given.name for given in session.get_inputs()]
try:
    session.run(None, dict(zip(names, (x, state))))
except Exception as error:
    print("refused:", "split" in str(error))
""",
}
"""Keras backend -> a script trying each refused route, printing ``refused: True`` for each
that still fails as ``impls/keras_rnn/export.py`` says."""


@pytest.mark.slow
@pytest.mark.parametrize("keras_backend", list(PROBES))
def test_the_refused_routes_still_fail(keras_backend: str, tmp_path: Path) -> None:
    pytest.importorskip(keras_backend)
    pytest.importorskip("onnxruntime")
    environment = {**os.environ, "KERAS_BACKEND": keras_backend}
    artifact = str(tmp_path / "artifact")
    done = python("-c", PROBES[keras_backend], artifact, env=environment, check=False)
    refusals = [line for line in done.stdout.splitlines() if line.startswith("refused:")]
    expected = {"jax": 2, "torch": 1}[keras_backend]
    assert refusals == ["refused: True"] * expected, (done.stdout[-2000:], done.stderr[-3000:])


@pytest.mark.slow
def test_litert_from_keras_on_tensorflow_still_needs_flex_ops(tmp_path: Path) -> None:
    if keras.backend.backend() != "tensorflow":
        pytest.skip("Keras runs on another backend in this process")
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    model = frae.create("keras_rnn")
    x, state = np.zeros((1, 3, 2), np.float32), np.zeros((1, 2), np.float32)
    model.keras_model([x, state])
    path = tmp_path / "model.tflite"
    model.keras_model.export(str(path), format="litert", verbose=False)
    runner = interpreter.Interpreter(model_path=str(path)).get_signature_runner()
    with pytest.raises(RuntimeError, match="FlexTensorListReserve"):
        runner(x=x, state=state)


def test_each_refused_format_says_why(tmp_path: Path) -> None:
    model = frae.create("keras_rnn")
    for format, why in model.export_refusals.items():
        with pytest.raises(ValueError, match="cannot export format"):
            frae.export(model, tmp_path / format, format=format)
        assert why
    assert list(tmp_path.iterdir()) == []
