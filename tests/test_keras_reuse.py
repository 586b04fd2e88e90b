"""keras_rnn's reuse of a dropped backend's models and compiled functions
(``impls/keras_rnn/backend.py``): a new backend of the config computes what a fresh build
computes, and models a caller was given are never reused."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import frae
from parity_tests.checks import assert_same_weights

pytestmark = pytest.mark.backend_specific("keras_rnn")

keras = pytest.importorskip("keras")
keras_model = pytest.importorskip("impls.keras_rnn.model")
keras_backend = pytest.importorskip("impls.keras_rnn.backend")

CONFIG = frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2, decoder_units=(4,))
"""A config no other test of this worker builds."""


def _exercise(model: frae.Backend, x: np.ndarray) -> dict[str, object]:
    """What ``model`` predicts, and its losses and weights after SGD then Adam."""
    predicted = model.predict(x)
    sgd = model.fit(x, epochs=2, optimizer="sgd", learning_rate=0.3)["loss"]
    adam = model.fit(x, epochs=3, optimizer="adam", learning_rate=0.02)["loss"]
    return {"predict": predicted, "loss": np.float32(sgd + adam), **model.get_weights()}


@pytest.mark.slow
def test_a_dropped_backends_models_serve_the_next_of_its_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A config's second backend, made once the first is gone, traces nothing and ends where a new
    one ends: its weights written, its optimizers' moments and steps zeroed."""
    calls = {"count": 0}
    original = keras_model.FRAECell.step

    def counting(self, inputs, feedback):  # type: ignore[no-untyped-def]
        calls["count"] += 1
        return original(self, inputs, feedback)

    monkeypatch.setattr(keras_model.FRAECell, "step", counting)
    x = frae.data.multi_sine(batch=2, steps=6, features=CONFIG.input_dim, seed=2)
    keras_backend.forget_built()
    _exercise(frae.create("keras_rnn", CONFIG, seed=1), x)  # dropped at once
    gc.collect()
    traced = calls["count"]
    reused = _exercise(frae.create("keras_rnn", CONFIG, seed=2), x)
    if keras.backend.backend() != "torch":  # where Keras runs eagerly, every call steps
        assert calls["count"] == traced, "the second backend of the config traced again"
    keras_backend.forget_built()
    assert_same_weights(reused, _exercise(frae.create("keras_rnn", CONFIG, seed=2), x))


def test_models_given_to_a_caller_are_never_reused() -> None:
    """``keras_model`` outlives its backend in the caller's hands: a later backend of the
    config builds its own, and the caller's keeps its weights."""
    keras_backend.forget_built()
    first = frae.create("keras_rnn", CONFIG, seed=1)
    held, weights = first.keras_model, first.get_weights()
    del first
    gc.collect()
    frae.create("keras_rnn", CONFIG, seed=3)
    for variable in held.weights:
        name = keras_model.canonical_name(variable)
        np.testing.assert_array_equal(keras_model.to_numpy(variable.value), weights[name])
