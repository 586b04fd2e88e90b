"""``bench.comparing.change``: the verdict on kept calls; a rule missing a part of it misjudges a
case."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from bench.comparing import change
from bench.comparing.change import FEW, NOISE
from bench.records import ResultRecord
from tests.bench_cases import kept_calls

Rounds = tuple[Sequence[ResultRecord], Sequence[ResultRecord]]


def timed(calls: Sequence[float], round_: int | None = None) -> ResultRecord:
    """A measurement of predict that kept ``calls`` (µs, one step each)."""
    return kept_calls([c * 1e-6 for c in calls], round=round_)


def drawn(median: float, count: int, seed: int, spread: float = 0.05) -> list[float]:
    """``count`` calls around ``median`` µs with a long right tail."""
    return list(median * np.random.default_rng(seed).lognormal(0.0, spread, count))


def rounds_of(medians: Sequence[float], seed: int) -> list[ResultRecord]:
    """A run's rounds, one per median, 50 calls each."""
    return [timed(drawn(m, 50, seed + i), i + 1) for i, m in enumerate(medians)]


def together(rounds: Sequence[ResultRecord]) -> ResultRecord:
    """The rounds' calls as one measurement (as ``bench.comparing.rounds.merged`` pools them)."""
    return timed([c * 1e6 for r in rounds for c in (r.calls_s or [])])


Case = tuple[ResultRecord, ResultRecord, Rounds, str]
SPREAD_OLD, SPREAD_NEW = rounds_of([100, 140], 10), rounds_of([100, 138], 20)
TIGHT_OLD, TIGHT_NEW = rounds_of([100, 101], 30), rounds_of([130, 131], 40)
STATES_OLD = [timed(drawn(m, 50, 50 + i, 0.005), i + 1) for i, m in enumerate([150, 100, 150])]
STATES_NEW = [timed(drawn(97.5, 50, 60 + i, 0.005), i + 1) for i in range(3)]
"""Two of the old run's three processes in a slow state: the calls apart beyond the margin
widened by the old run's spread, and yet a round of each run alike."""
WIDE_OLD, WIDE_NEW = rounds_of([100, 150], 70), rounds_of([160, 170], 80)
"""Every new round above every old one, by less than the old rounds differ."""
ALONE: Rounds = ((), ())
"""No rounds: a measurement of one process."""
CASES: dict[str, Case] = {
    "the same distribution": (timed(drawn(100, 200, 1)), timed(drawn(100, 200, 2)), ALONE, NOISE),
    "1.5× slower": (timed(drawn(100, 200, 3)), timed(drawn(150, 200, 4)), ALONE, change.SLOWER),
    "1.5× faster": (timed(drawn(150, 200, 5)), timed(drawn(100, 200, 6)), ALONE, change.FASTER),
    # many calls make a 3 % shift significant; the margin keeps it within noise
    "3 % with 2000 calls": (
        timed(drawn(100, 2000, 7, 0.02)),
        timed(drawn(103, 2000, 8, 0.02)),
        ALONE,
        NOISE,
    ),
    # two modes, mixed a little differently: the medians 1.33× apart, the calls alike
    "medians apart, calls mixed": (
        timed([100.0] * 5 + [200.0] * 5 + [150.0]),
        timed([100.0] * 4 + [200.0] * 6 + [199.0]),
        ALONE,
        NOISE,
    ),
    # wholly apart, but five calls each cannot reach p < 0.002
    "five calls each, 2× apart": (timed(drawn(100, 5, 9)), timed(drawn(200, 5, 10)), ALONE, FEW),
    # each run's two processes differ by 40 %: a 1.2× change between runs is within that
    "1.2× within the spread between rounds": (
        together(SPREAD_OLD),
        together([timed([c * 1.2e6 for c in (r.calls_s or [])], r.round) for r in SPREAD_NEW]),
        (SPREAD_OLD, SPREAD_NEW),
        NOISE,
    ),
    "a slow state in two of three processes": (
        together(STATES_OLD),
        together(STATES_NEW),
        (STATES_OLD, STATES_NEW),
        NOISE,
    ),
    "rounds apart, within the old run's spread": (
        together(WIDE_OLD),
        together(WIDE_NEW),
        (WIDE_OLD, WIDE_NEW),
        NOISE,
    ),
    "1.3× beyond tight rounds": (
        together(TIGHT_OLD),
        together(TIGHT_NEW),
        (TIGHT_OLD, TIGHT_NEW),
        change.SLOWER,
    ),
}


@pytest.mark.parametrize(("old", "new", "rounds", "expected"), CASES.values(), ids=list(CASES))
def test_the_verdict_on_kept_calls_and_on_the_runs_swapped(
    old: ResultRecord, new: ResultRecord, rounds: Rounds, expected: str
) -> None:
    found = change.judge(old, new, rounds=rounds)
    assert found.verdict == expected, found
    if expected in (change.SLOWER, change.FASTER):
        assert found.p_value is not None and found.p_value < change.ALPHA
    mirrored = {change.SLOWER: change.FASTER, change.FASTER: change.SLOWER}
    swapped = change.judge(new, old, rounds=(rounds[1], rounds[0]))
    assert swapped.verdict == mirrored.get(expected, expected)


def _rule(
    rank_test: bool, margin: bool, rounds_margin: bool, count: bool, apart: bool = True
) -> Callable[..., change.Change]:
    """The verdict with only the parts named."""

    def rule(
        old: ResultRecord,
        new: ResultRecord,
        alpha: float = change.ALPHA,
        min_margin: float = change.MIN_MARGIN,
        rounds: Rounds = ((), ()),
    ) -> change.Change:
        before, after = change.per_step(old), change.per_step(new)
        ratio = float(np.median(after) / np.median(before))
        spreads = [change.process_spread(apart) for apart in rounds] if rounds_margin else []
        delta = max(min_margin if margin else 0.0, *spreads, 0.0)
        if count and change.least_p(len(before), len(after)) >= alpha:
            return change.Change(change.FEW, ratio, None, delta)
        from scipy.stats import mannwhitneyu

        p = float(mannwhitneyu(after, before).pvalue) if rank_test else 0.0
        medians = [change.round_medians(each) for each in rounds]
        up = not apart or change.apart(medians[0], medians[1], min_margin)
        down = not apart or change.apart(medians[1], medians[0], min_margin)
        if p < alpha and ratio > 1 + delta and up:
            return change.Change(change.SLOWER, ratio, p, delta)
        if p < alpha and 1 / ratio > 1 + delta and down:
            return change.Change(change.FASTER, ratio, p, delta)
        return change.Change(change.NOISE, ratio, p, delta)

    return rule


BROKEN_RULES = {
    "no rank test": _rule(rank_test=False, margin=True, rounds_margin=True, count=True),
    "no margin": _rule(rank_test=True, margin=False, rounds_margin=True, count=True),
    "no spread between rounds": _rule(rank_test=True, margin=True, rounds_margin=False, count=True),
    "no count of calls": _rule(rank_test=True, margin=True, rounds_margin=True, count=False),
    "no rounds apart": _rule(
        rank_test=True, margin=True, rounds_margin=True, count=True, apart=False
    ),
}


def test_the_rule_with_every_part_judges_as_the_module() -> None:
    """The control for the broken rules."""
    whole = _rule(rank_test=True, margin=True, rounds_margin=True, count=True)
    for old, new, rounds, expected in CASES.values():
        assert whole(old, new, rounds=rounds).verdict == expected


@pytest.mark.parametrize("rule", BROKEN_RULES.values(), ids=list(BROKEN_RULES))
def test_the_cases_reject_a_rule_missing_a_part(rule: Callable[..., change.Change]) -> None:
    misjudged = [
        name
        for name, (old, new, rounds, expected) in CASES.items()
        if rule(old, new, rounds=rounds).verdict != expected
    ]
    assert misjudged, "a rule without a part of the verdict passed every case"


def test_least_p_is_the_exact_tests_floor() -> None:
    """Five calls against five wholly apart: the exact two-sided p is 2/252."""
    from scipy.stats import mannwhitneyu

    found = mannwhitneyu([6, 7, 8, 9, 10], [1, 2, 3, 4, 5], method="exact").pvalue
    assert change.least_p(5, 5) == pytest.approx(found) == pytest.approx(2 / 252)
