"""The benchmark's view of ``keras_rnn``: its defaults baseline computes what the compiled
backend does, and its gradient loop on TensorFlow, read by ``bench.kernels``, copies nothing
T long."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from bench.kernels import time_long_copies
from parity_tests.tolerances import assert_close

pytestmark = pytest.mark.backend_specific("keras_rnn")
keras = pytest.importorskip("keras")
keras_model = pytest.importorskip("impls.keras_rnn.model")


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
                outputs, _ = autoencoder([x, tf.zeros((2, config.feedback_dim))])
                loss = tf.reduce_mean(tf.square(outputs - y))
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
    """The error summed in the cell's state: no T-long gradient copied per backward step; the
    same check finds the copies when differentiating through the stacked outputs."""
    assert time_long_copies(_tensorflow_gradient_hlo(through_the_outputs=False), 37) == []
    assert time_long_copies(_tensorflow_gradient_hlo(through_the_outputs=True), 37)
