"""``bench.measuring.timing``: calls timed in turn with other calls in the same process
(``prepare_beside``), the order reversed every other sample, the other's seconds kept beside
the record's own."""

from __future__ import annotations

import time
from functools import partial

import pytest

from bench.measuring.job import Settings
from bench.measuring.timing import Beside, Calls, alone, prepare_beside
from bench.records import ResultRecord

SETTINGS = Settings(repeats=3, min_time_s=0.0, budget_s=0.0, max_samples=3)
ROW = partial(ResultRecord, "variant", "train_step", 1, 10)


def calls(order: list[str], name: str) -> Calls:
    """Calls that write ``name`` down, one step each."""
    return Calls(lambda: order.append(name), lambda: order.append(name), 1)


def test_calls_beside_others_take_turns_the_order_reversed_every_other_sample() -> None:
    order: list[str] = []
    made = prepare_beside(calls(order, "own"), calls(order, "other"), "other", SETTINGS, ROW)
    assert isinstance(made, Beside)
    assert order == ["own", "own", "other", "other"]  # each one's first call and warm-up
    order.clear()
    for _ in range(3):
        made.sample()
    assert order == ["own", "other", "other", "own", "own", "other"]
    (record,) = made.records()
    assert record.calls_s is not None and record.partners_s is not None
    assert record.partners_s.keys() == {"other"}
    assert len(record.partners_s["other"]) == len(record.calls_s) == 3


def test_calls_whose_partner_cannot_be_timed_are_timed_alone_saying_why() -> None:
    def fails() -> None:
        raise ValueError("no such model")

    order: list[str] = []
    made = prepare_beside(calls(order, "own"), Calls(fails, fails, 1), "other", SETTINGS, ROW)
    assert not isinstance(made, Beside)
    (record,) = alone(made)
    assert record.median_s is not None and record.partners_s is None
    assert (
        record.note
        == "not in turn with other, whose calls were not timed: ValueError: no such model"
    )


def test_what_other_processes_took_is_shared_by_the_calls_in_proportion() -> None:
    """Taken over both calls of every sample, it counts against the record's own calls in
    the share of their time (here a tenth: its own calls take a ninth of the other's)."""
    own = Calls(lambda: time.sleep(0.001), lambda: time.sleep(0.001), 1)
    other = Calls(lambda: time.sleep(0.009), lambda: time.sleep(0.009), 1)
    made = prepare_beside(own, other, "other", SETTINGS, ROW)
    assert isinstance(made, Beside)
    for _ in range(3):
        made.sample()
    made.others_s = 1.0
    (record,) = made.records()
    assert record.calls_s is not None and record.partners_s is not None
    share = sum(record.calls_s) / (sum(record.calls_s) + sum(record.partners_s["other"]))
    assert record.others_s == pytest.approx(share) and 0.05 < share < 0.2
