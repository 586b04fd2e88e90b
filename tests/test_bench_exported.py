"""An exported artifact as a benchmark variant (``bench.baselines.exported``) and the
report's section on them (``bench.export_section``)."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from bench.analysis import Pivot
from bench.export_section import export_rows
from bench.records import STREAM, ResultRecord


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


def test_the_section_has_a_row_per_artifact_variant() -> None:
    def record(variant: str, operation: str, batch: int, **fields: object) -> ResultRecord:
        return ResultRecord(variant, operation, batch, 1000, median_s=1e-3, **fields)  # type: ignore[arg-type]

    records = [
        record("a/onnx", "predict", 1, create_s=4.0, artifact_kib=10.0),
        record("a/onnx", "predict", 256, create_s=0.1, artifact_kib=10.0),
        record("a/onnx", STREAM, 1, side="sender", chunk=1, create_s=0.1, artifact_kib=10.0),
        record("a/onnx", STREAM, 1, side="sender", chunk=10, create_s=0.1, artifact_kib=10.0),
        record("jax_scan", "predict", 1, create_s=2.0),
    ]
    rows = export_rows(Pivot.of(records))
    assert rows == [["a/onnx", "4", "10", "1", "1", "1", "–"]]
