"""The report's call costs: a call's time split into a per-call and a per-step cost."""

from __future__ import annotations

import pytest

from bench.records import ResultRecord


def test_call_costs_split_a_call_into_per_call_and_per_step() -> None:
    """Times made as a line, a fixed cost plus a cost per step times T, come back as those
    two numbers; a second batch size and a variant measured at one T only are not fitted."""
    from bench.analysis import Pivot, call_costs

    def record(variant: str, batch: int, steps: int, seconds: float) -> ResultRecord:
        return ResultRecord(variant, "predict", batch, steps, median_s=seconds)

    records = [record("line", 1, t, 300e-6 + 0.2e-6 * t) for t in (100, 1000, 10000)]
    records += [record("line", 256, t, 1.0) for t in (100, 1000)]
    records += [record("one_length", 1, 1000, 1e-3)]
    (cost,) = call_costs(Pivot.of(records))
    assert (cost.variant, cost.batch, cost.steps) == ("line", 1, (100, 1000, 10000))
    assert cost.per_call_us == pytest.approx(300.0)
    assert cost.per_step_us == pytest.approx(0.2)
