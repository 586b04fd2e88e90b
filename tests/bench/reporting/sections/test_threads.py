"""``bench.reporting.sections.threads``: the variants' threads and settings as one table, what
every variant shares said once, below the results."""

from __future__ import annotations

from bench.records import VariantRecord
from bench.reporting.sections import Report, threads
from tests.bench_cases import markdown, measured, on_models

SHARED = {"OMP_NUM_THREADS": "1", "cpus": [1]}


def facts() -> list[VariantRecord]:
    return [
        VariantRecord("floor", threads={**SHARED, "numba_threads": 1}),
        VariantRecord("route", threads=SHARED, routes=["XLA_FLAGS threshold=300000 (frae)"]),
    ]


def test_what_every_variant_shares_is_said_once_and_the_rest_a_row_each() -> None:
    (section,) = threads.sections(Report([on_models(), *facts()]))
    assert "Every variant: OMP_NUM_THREADS 1, cpus [1]." in section.caption
    assert section.rows == [
        ["floor", "numba_threads 1", "—"],
        ["route", "as every variant", "XLA_FLAGS threshold=300000 (frae)"],
    ]


def test_the_table_stands_below_the_results_and_the_head_lists_no_variant() -> None:
    records = [on_models(), *facts(), measured("floor", "floor", "predict", 1, 1000, 2.0)]
    page = markdown(records)
    head = page[page.index("## Machine and versions") : page.index("## How it was measured")]
    assert "numba_threads" not in head
    assert page.index("## Summary") < page.index("## Threads and settings")
