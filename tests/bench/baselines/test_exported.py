"""``bench.baselines.exported``: an exported artifact as a benchmark variant, inference only."""

from __future__ import annotations

import numpy as np
import pytest

import frae


def test_an_artifact_variant_runs_inference_from_the_weights_given() -> None:
    pytest.importorskip("jax")
    from bench.baselines.exported import JaxScanStableHLO

    config = frae.FRAEConfig(feedback="state", state_dim=4)
    weights = frae.initial_weights(config, 9)
    model = frae.create("bench.baselines.exported:JaxScanStableHLO", config, weights=weights)
    assert isinstance(model, JaxScanStableHLO) and model.artifact_kib > 0
    x = np.random.default_rng(1).uniform(-1, 1, (2, 6, config.input_dim))
    oracle = frae.create("reference", config, weights=weights)
    np.testing.assert_allclose(model.predict(x), oracle.predict(x), rtol=1e-5, atol=1e-6)
    for training in (lambda: model.fit(x), lambda: model.loss_and_grads(x)):
        with pytest.raises(NotImplementedError, match="inference only"):
            training()
    with pytest.raises(NotImplementedError, match="baked in"):
        model.set_weights(weights)
