"""``bench.baselines.keras_defaults``: Keras' defaults compute what ``keras_rnn`` compiled does."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from parity_tests.tolerances import assert_close

pytestmark = pytest.mark.backend_specific("keras_rnn")
pytest.importorskip("keras")


def test_keras_defaults_baseline_equals_the_compiled_backend() -> None:
    x = frae.data.multi_sine(batch=3, steps=15, seed=4)
    baseline = frae.create("bench.baselines.keras_defaults:KerasDefaultsBackend", seed=5)
    compiled = frae.create("keras_rnn", seed=5)
    assert_close("outputs", baseline.predict(x), compiled.predict(x))
    losses = baseline.fit(x, epochs=3, optimizer="sgd", learning_rate=0.5)["loss"]
    expected = compiled.fit(x, epochs=3, optimizer="sgd", learning_rate=0.5)["loss"]
    assert_close("sgd", np.float32(losses), np.float32(expected))
