"""Whether one measurement changed between two runs: a rank test on the calls both kept.

For the same measurement in two runs, with the time per step of every timed call of each
(``ResultRecord.calls_s`` over its steps per call, every round's together) and medians m₀
(old) and m₁ (new):

    r = m₁ / m₀                                 the ratio new/old
    p = Mann–Whitney U, two-sided, on the calls  (``scipy.stats.mannwhitneyu``)
    s = the largest spread between the rounds of one run, max/min of their medians − 1
    δ = max(δ_min, s)                           the margin

    slower        if p < α  and  r   > 1 + δ  and every new round's median is above every old
                  round's by δ_min (where both runs have two rounds or more)
    faster        the same, the other way
    too few calls if even calls wholly apart could not reach p < α
    within noise  otherwise

with α = 0.002 (asv's threshold) and δ_min = 5 % by default. A rank test, for timings have
long right tails that a t-test would mistake for a shift; a margin, for many calls make a
trifling shift significant, and processes differ more than calls within one
(``bench.comparing.rounds``); the rounds apart, for a process can run in a slow state for its whole
life, and the calls of two such processes against three in the other state are apart however the
margin is widened (docs/benchmark.md shows such an A/A run). Swapping OLD and NEW swaps ``slower``
and ``faster`` exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from bench.records import ResultRecord

ALPHA = 0.002
"""The largest p-value called a change (asv's)."""
MIN_MARGIN = 0.05
"""δ: the least relative change called faster or slower, however significant."""
FASTER, SLOWER, NOISE, FEW = "faster", "slower", "within noise", "few calls"


class Change(NamedTuple):
    """One measurement's verdict between two runs, and what it rests on."""

    verdict: str
    ratio: float
    """m₁ / m₀."""
    p_value: float | None
    """The rank test's; ``None`` where too few calls could not tell."""
    margin: float | None = None
    """δ: the least change called one, with the spread between rounds."""


def per_step(result: ResultRecord) -> np.ndarray:
    """The seconds per step of every call ``result`` kept."""
    assert result.calls_s is not None
    return np.asarray(result.calls_s) / (result.steps_per_sample or 1)


def least_p(old: int, new: int) -> float:
    """The smallest two-sided p-value a rank test of ``old`` against ``new`` calls can give
    (every call of one run above every call of the other): 2 / C(old + new, old)."""
    return min(1.0, 2 / math.comb(old + new, old))


def process_spread(rounds: Sequence[ResultRecord]) -> float:
    """max/min − 1 of the medians of a measurement's rounds in one run (0 for fewer than
    two timed rounds: nothing to tell)."""
    medians = [r.median_s for r in rounds if r.median_s is not None]
    return max(medians) / min(medians) - 1 if len(medians) > 1 else 0.0


def judge(
    old: ResultRecord,
    new: ResultRecord,
    alpha: float = ALPHA,
    min_margin: float = MIN_MARGIN,
    rounds: tuple[Sequence[ResultRecord], Sequence[ResultRecord]] = ((), ()),
) -> Change:
    """The verdict on one measurement timed in both runs (the module docstring's rule):
    ``old`` and ``new`` with every round's calls together, ``rounds`` each run's rounds
    apart (none for a run of one)."""
    before, after = per_step(old), per_step(new)
    ratio = float(np.median(after) / np.median(before))
    margin = max(min_margin, *(process_spread(apart) for apart in rounds))
    if least_p(len(before), len(after)) >= alpha:
        return Change(FEW, ratio, None, margin)
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(after, before, alternative="two-sided").pvalue)
    old_rounds, new_rounds = (round_medians(apart) for apart in rounds)
    if p < alpha and ratio > 1 + margin and apart(old_rounds, new_rounds, min_margin):
        return Change(SLOWER, ratio, p, margin)
    if p < alpha and 1 / ratio > 1 + margin and apart(new_rounds, old_rounds, min_margin):
        return Change(FASTER, ratio, p, margin)
    return Change(NOISE, ratio, p, margin)


def round_medians(rounds: Sequence[ResultRecord]) -> list[float]:
    """The medians of a measurement's timed rounds."""
    return [r.median_s for r in rounds if r.median_s is not None]


def apart(lower: list[float], higher: list[float], min_margin: float) -> bool:
    """Whether every one of ``higher`` is above every one of ``lower`` by ``min_margin``;
    true where either has fewer than two rounds (nothing to tell)."""
    if len(lower) < 2 or len(higher) < 2:
        return True
    return min(higher) > max(lower) * (1 + min_margin)
