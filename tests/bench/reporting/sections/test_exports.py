"""``bench.reporting.sections.exports``: the report's section on exported artifacts."""

from __future__ import annotations

from bench.records import STREAM, ResultRecord
from bench.reporting.analysis import Pivot
from bench.reporting.sections.exports import export_rows


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
    assert export_rows(Pivot.of(records)) == [["a/onnx", "4", "10", "1", "1", "1", "–"]]
