"""Keras-specific promises of ``keras_rnn``: every Keras backend, one trace, ``.keras`` files."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import frae
from parity_tests.cases import CASES
from parity_tests.tolerances import assert_close

pytestmark = pytest.mark.backend_specific("keras_rnn")

keras = pytest.importorskip("keras")
keras_model = pytest.importorskip("impls.keras_rnn.model")

KERAS_BACKENDS = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.nested
@pytest.mark.parametrize("keras_backend", list(KERAS_BACKENDS))
def test_parity_suite_passes_on_keras_backend(keras_backend: str) -> None:
    """The whole suite for keras_rnn, in a process whose Keras runs on ``keras_backend``."""
    if keras.backend.backend() == keras_backend:
        pytest.skip(f"this process runs Keras on {keras_backend}: the main run covers it")
    if importlib.util.find_spec(KERAS_BACKENDS[keras_backend]) is None:
        pytest.skip(f"{keras_backend} is not installed")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "parity_tests"]
    command += ["--backend", "keras_rnn", "-k", "not test_parity_suite_passes_on_keras_backend"]
    environment = {**os.environ, "KERAS_BACKEND": keras_backend}
    result = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stdout[-4000:]
    assert " passed" in result.stdout.splitlines()[-1]


def test_metadata_names_the_keras_backend() -> None:
    model = frae.create("keras_rnn")
    assert model.metadata["keras_backend"] == keras.backend.backend()


def test_variables_map_one_to_one_onto_canonical_names() -> None:
    model = frae.create("keras_rnn", CASES["latent_2"].config, seed=2)
    names = [keras_model.canonical_name(v) for v in model.keras_model.weights]
    assert names == list(CASES["latent_2"].config.parameter_shapes())
    for variable in model.keras_model.weights:
        canonical = keras_model.canonical_name(variable)
        value = keras_model.to_numpy(variable.value)
        np.testing.assert_array_equal(value, model.get_weights()[canonical])


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="on torch keras_rnn runs eagerly: nothing is traced"
)
def test_repeated_calls_do_not_retrace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cell's Python ``call`` runs only while Keras traces; compiled calls skip it."""
    calls = {"count": 0}
    original = keras_model.FRAECell.call

    def counting(self, inputs, states):
        calls["count"] += 1
        return original(self, inputs, states)

    monkeypatch.setattr(keras_model.FRAECell, "call", counting)
    model = frae.create("keras_rnn", seed=1)
    x = frae.data.multi_sine(batch=2, steps=9, seed=1)

    def exercise() -> None:
        model.predict(x)
        model.encode(x)
        model.loss_and_grads(x)
        model.fit(x, epochs=2, optimizer="adam", learning_rate=0.01)
        model.fit(x, epochs=2, optimizer="adam", learning_rate=0.02)

    exercise()
    traced = calls["count"]
    assert traced > 0
    exercise()
    assert calls["count"] == traced, "a repeated call with the same shapes traced again"


def test_keras_file_round_trip(tmp_path: Path) -> None:
    case = CASES["features_3"]
    model = frae.create("keras_rnn", case.config, seed=3)
    model.fit(case.inputs(seed=1), epochs=2, learning_rate=1e-2)
    x = case.inputs(seed=2)
    path = tmp_path / "frae.keras"
    model.keras_model.save(path)
    loaded = keras.saving.load_model(path)
    for saved, restored in zip(model.keras_model.weights, loaded.weights, strict=True):
        assert saved.name == restored.name
        restored_value, saved_value = (keras_model.to_numpy(v.value) for v in (restored, saved))
        np.testing.assert_array_equal(restored_value, saved_value)
    loaded.jit_compile = True  # compiled like the backend: XLA fuses differently, by an ulp
    predicted = np.asarray(loaded.predict_on_batch(x))  # NumPy on every Keras backend
    np.testing.assert_array_equal(predicted, model.predict(x))


def test_canonical_weights_load_into_the_keras_model() -> None:
    case = CASES["default"]
    weights = frae.initial_weights(case.config, seed=8)
    model = frae.create("keras_rnn", case.config, weights=weights)
    x = case.inputs(seed=3)
    expected = frae.create("reference", case.config, weights=weights).predict(x)
    predicted = np.asarray(model.keras_model.predict_on_batch(x))
    assert_close("outputs", predicted, expected)


def test_keras_defaults_baseline_equals_the_compiled_backend() -> None:
    x = frae.data.multi_sine(batch=3, steps=15, seed=4)
    baseline = frae.create("bench.baselines.keras_defaults:KerasDefaultsBackend", seed=5)
    compiled = frae.create("keras_rnn", seed=5)
    assert_close("outputs", baseline.predict(x), compiled.predict(x))
    losses = baseline.fit(x, epochs=3, optimizer="sgd", learning_rate=0.5)["loss"]
    expected = compiled.fit(x, epochs=3, optimizer="sgd", learning_rate=0.5)["loss"]
    assert_close("sgd", np.float32(losses), np.float32(expected))


def _tensorflow_gradient_hlo(through_the_outputs: bool) -> str:
    """The optimized HLO of keras_rnn's gradient on TensorFlow at T = 37 (a length no weight
    has): the backend's, or that of the mean over the autoencoder's stacked outputs."""
    import tensorflow as tf

    from impls.keras_rnn import train as keras_train

    config = frae.FRAEConfig()
    x = tf.constant(frae.data.multi_sine(batch=2, steps=37))
    autoencoder, _, _ = keras_model.build_models(config)
    if through_the_outputs:

        @tf.function(jit_compile=True, autograph=False)
        def gradients(x, y):  # type: ignore[no-untyped-def]
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(autoencoder(x) - y))
            return loss, tape.gradient(loss, autoencoder.trainable_variables)

    else:
        cell = autoencoder.get_layer("frae_rnn").cell
        training = keras_train.squared_error_model(config, cell)
        gradients = keras_train.gradient_function(training, jit_compile=True)
    return gradients.experimental_get_compiler_ir(x, x)(stage="optimized_hlo")


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the HLO of Keras on TensorFlow"
)
def test_the_gradient_loop_copies_no_time_long_array_on_tensorflow() -> None:
    """Summing the squared error in the cell's state keeps a backward step's cost flat in T.

    Differentiated through the stacked outputs ``[x̂, z]`` instead, XLA copies their T-long
    gradient at every backward iteration (a training step at B = 256 cost 110 µs per step
    at T = 1000 and 2918 at T = 10000): the same check finds those copies there.
    """
    from bench.kernels import time_long_copies

    assert time_long_copies(_tensorflow_gradient_hlo(through_the_outputs=False), 37) == []
    assert time_long_copies(_tensorflow_gradient_hlo(through_the_outputs=True), 37)
