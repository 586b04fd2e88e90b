"""Whether one measurement changed between two runs: a rank test on the calls both kept.

For the same measurement in two runs, with the time per step of every timed call of each
(``ResultRecord.calls_s`` over its steps per call, every round's together) and medians m₀
(old) and m₁ (new):

    r = m₁ / m₀                                 the ratio new/old
    p = Mann–Whitney U, two-sided, on the calls  (``scipy.stats.mannwhitneyu``)
    s = the largest spread between the rounds of one run, max/min of their medians − 1
    δ = max(δ_min, s)                           the margin

    slower        if p < α  and  r   > 1 + δ
    faster        if p < α  and  1/r > 1 + δ
    too few calls if even calls wholly apart could not reach p < α
    within noise  otherwise

with α = 0.002 (asv's threshold) and δ_min = 5 % by default. The rank test asks whether a
call of one run tends to take longer than a call of the other, whatever the shape of their
spreads (timings have long right tails, which a t-test would mistake for a shift); the
margin asks that the change be large enough to matter, for many calls make a trifling shift
significant, and larger than the two runs' processes differ among themselves: calls within
one process are alike where processes are not (``bench.rounds``), so a run of one round
cannot show that spread, and its verdicts rest on δ_min alone. With few calls a test cannot
be significant however far apart they are (five against five: p ≥ 0.0079), and the verdict
says so rather than "within noise". ``faster`` uses 1/r and the test is two-sided, so
swapping OLD and NEW swaps ``slower`` and ``faster`` exactly.

A file of format 1 kept no calls, only the median and quartiles; a measurement either run
holds without its calls is judged by those instead (``by_quartiles``): slower when the new
q1 is above the old q3 and r > 1 + max(δ, the two runs' mean IQR / median), faster
symmetrically.
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
    """The rank test's; ``None`` where a run kept no calls (judged by quartiles)."""
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
    assert old.median_s is not None and new.median_s is not None
    ratio = new.median_s / old.median_s
    if old.calls_s is None or new.calls_s is None:
        return Change(by_quartiles(old, new, min_margin), ratio, None)
    before, after = per_step(old), per_step(new)
    ratio = float(np.median(after) / np.median(before))
    margin = max(min_margin, *(process_spread(apart) for apart in rounds))
    if least_p(len(before), len(after)) >= alpha:
        return Change(FEW, ratio, None, margin)
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(after, before, alternative="two-sided").pvalue)
    if p < alpha and ratio > 1 + margin:
        return Change(SLOWER, ratio, p, margin)
    if p < alpha and 1 / ratio > 1 + margin:
        return Change(FASTER, ratio, p, margin)
    return Change(NOISE, ratio, p, margin)


def _quartiles(result: ResultRecord) -> tuple[float, float, float]:
    """(q1, median, q3); a measurement without quartiles (one sample) spreads over its
    median alone."""
    assert result.median_s is not None
    q1 = result.median_s if result.q1_s is None else result.q1_s
    q3 = result.median_s if result.q3_s is None else result.q3_s
    return q1, result.median_s, q3


def by_quartiles(old: ResultRecord, new: ResultRecord, min_margin: float = MIN_MARGIN) -> str:
    """``faster``, ``slower`` or ``within noise`` from the medians and quartiles alone, for
    measurements without their calls: the quartiles must separate (most new calls beyond
    most old ones) and the medians differ by more than the two spreads' half-widths
    together, and never by less than ``min_margin`` (a single sample has q1 = q3 = m)."""
    q1_old, median_old, q3_old = _quartiles(old)
    q1_new, median_new, q3_new = _quartiles(new)
    ratio = median_new / median_old
    spreads = (q3_old - q1_old) / median_old + (q3_new - q1_new) / median_new
    margin = max(min_margin, spreads / 2)
    if q1_new > q3_old and ratio > 1 + margin:
        return SLOWER
    if q3_new < q1_old and 1 / ratio > 1 + margin:
        return FASTER
    return NOISE
