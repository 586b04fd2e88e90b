"""The report divides each figure by the fastest floor measured at its shape."""

from __future__ import annotations

import pytest

from bench.records import Record
from tests.bench_cases import measured

FLOOR_RECORDS = [
    measured("scalar", "floor", "predict", 1, 1000, 1.0),
    measured("scalar", "floor", "predict", 256, 1000, 10.0),
    measured("vector", "simd_floor", "predict", 1, 1000, 2.0),
    measured("vector", "simd_floor", "predict", 256, 1000, 4.0),
    measured("a", "compiled", "predict", 1, 1000, 3.0),
    measured("a", "compiled", "predict", 256, 1000, 8.0),
]
# Each case: records, the measurement whose ratio is read, the ratio expected.
FLOOR_CHOICES = {
    "B=1-over-the-scalar-floor-the-faster-there": (FLOOR_RECORDS, ("a", 1), 3.0),
    "B=1-over-the-simd-floor-where-it-is-the-faster": (
        [
            *(r for r in FLOOR_RECORDS if (r.role, r.batch) != ("simd_floor", 1)),
            measured("vector", "simd_floor", "predict", 1, 1000, 0.5),
        ],
        ("a", 1),
        6.0,
    ),
    "B=256-over-the-matrix-floor-where-it-is-the-fastest": (
        [*FLOOR_RECORDS, measured("gemm", "matrix_floor", "predict", 256, 1000, 1.0)],
        ("a", 256),
        8.0,
    ),
    "B=256-over-the-simd-floor": (FLOOR_RECORDS, ("a", 256), 2.0),
    "the-scalar-floor-itself-at-B=256": (FLOOR_RECORDS, ("scalar", 256), 2.5),
    "B=256-without-a-simd-floor-over-the-scalar-one": (
        [r for r in FLOOR_RECORDS if r.role != "simd_floor"],
        ("a", 256),
        0.8,
    ),
    "B=256-the-simd-floor-not-at-this-shape": (
        [r for r in FLOOR_RECORDS if (r.role, r.batch) != ("simd_floor", 256)],
        ("a", 256),
        0.8,
    ),
}


@pytest.mark.parametrize(
    ("records", "measurement", "ratio"), FLOOR_CHOICES.values(), ids=FLOOR_CHOICES
)
def test_the_fastest_floor_at_each_shape_divides(
    records: list[Record], measurement: tuple[str, int], ratio: float
) -> None:
    """×floor is over the fastest floor measured at the same operation and shape, whichever
    its role; the table of every measurement shows the same."""
    from bench.analysis import Pivot
    from bench.records import DEFAULT_MODEL, Key
    from bench.tables import DETAIL_HEADER, detail_rows

    pivot = Pivot.of(records)
    name, batch = measurement
    assert pivot.floor_ratio(Key(name, "predict", DEFAULT_MODEL, batch, 1000)) == pytest.approx(
        ratio
    )
    (row,) = [r for r in detail_rows(pivot) if (r[0], r[2]) == (name, str(batch))]
    assert row[DETAIL_HEADER.index("×floor")] == f"{ratio:.3g}"
