"""``bench.comparing.pairs``: a ratio to the floor from calls taken in turn, and each figure's
spread."""

from __future__ import annotations

import numpy as np
import pytest

from bench.comparing.pairs import Spread, paired, paired_ratios, partner_spread, spread_of
from tests.bench_cases import kept_calls

FLOORS = ("slow_floor", "fast_floor")


def test_each_call_is_divided_by_the_fastest_floor_of_its_own_turn() -> None:
    """A variant compared with it directly, in turn too, is no floor."""
    turns = {"slow_floor": [3.0, 3.0, 3.0], "fast_floor": [2.0, 4.0, 1.0], "twin": [0.1] * 3}
    record = kept_calls([4.0, 6.0, 8.0], partners_s=turns)
    np.testing.assert_allclose(paired_ratios(record, FLOORS), [2.0, 2.0, 8.0])


def test_a_floor_with_fewer_calls_than_the_variant_is_not_paired() -> None:
    assert paired_ratios(kept_calls([1.0, 2.0], partners_s={"floor": [1.0]}), ["floor"]) is None
    assert paired_ratios(kept_calls([1.0, 2.0]), ["floor"]) is None


def test_the_spread_covers_the_quartiles_and_every_rounds_median() -> None:
    """Rounds that agree within: the quartiles of all the values; a round apart widens it."""
    together = spread_of([np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0])])
    assert together == Spread(2.0, 1.25, 2.75, 2)
    apart = spread_of([np.ones(8), np.array([9.0])])
    assert apart is not None and (apart.low, apart.high) == (1.0, 9.0)


def test_the_paired_ratio_of_several_rounds_keeps_each_rounds_median() -> None:
    one = kept_calls([2.0, 2.0, 2.0], partners_s={"floor": [1.0, 1.0, 1.0]}, round=1)
    two = kept_calls([3.0, 3.0, 3.0], partners_s={"floor": [1.0, 1.0, 1.0]}, round=2)
    found = paired([one, two], ["floor"])
    assert found is not None and found.low == pytest.approx(2.0) and found.high == 3.0
    without = kept_calls([3.0, 3.0], round=2)
    assert paired([one, without], ["floor"]) is None, "a round without its floor"


def test_a_ratio_of_figures_measured_apart_spans_both_spreads() -> None:
    """Not in turn: its low end the lower over the upper, its high end the other way round,
    over the fewer rounds of the two."""
    ratio = Spread(4.0, 3.0, 6.0, 2).over_apart(Spread(2.0, 1.5, 2.5, 3))
    assert ratio == Spread(2.0, 1.2, 4.0, 2)


def test_a_partners_calls_in_turn_give_its_figure_where_every_round_kept_them() -> None:
    """µs per time step of the calls kept under its name (T = 1000 here), over the rounds."""
    one = kept_calls([1.0, 1.0], steps=1000, partners_s={"other": [1e-3, 2e-3]}, round=1)
    two = kept_calls([1.0, 1.0], steps=1000, partners_s={"other": [3e-3, 3e-3]}, round=2)
    found = partner_spread([one, two], "other")
    assert found is not None and found.rounds == 2
    assert (found.value, found.low, found.high) == pytest.approx((2.5, 1.5, 3.0))
    assert partner_spread([one, kept_calls([1.0], steps=1000, round=2)], "other") is None
    assert partner_spread([one], "floor") is None
