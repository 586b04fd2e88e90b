"""A figure and its spread: each measurement's per-call figures, its ratios to the floor from
calls taken in turn with the floors (``bench.measuring.turns``), and how far they move over the
calls and the rounds of a run.

For one measurement with timed calls c₁ … cₙ (seconds per step) and, in turn with each, the
floors' calls f₁ … fₙ (the fastest floor's at each turn):

    rᵢ = cᵢ / fᵢ                   the paired ratio of turn i
    r  = median(rᵢ)                the ratio reported
    spread = [min(Q₁, m₁ … m_R), max(Q₃, m₁ … m_R)]

over every round's ratios together (Q₁, Q₃ their quartiles), widened to every round's own
median m_k: a figure whose rounds disagree is as uncertain as they are. ``bench.reporting.verdicts``
calls a target met or missed only where the whole spread is on one side of its limit.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

import numpy as np

from bench.records import ResultRecord


class Spread(NamedTuple):
    """A figure (``value``, the median) and the range it moves over (``low`` to ``high``)."""

    value: float
    low: float
    high: float
    rounds: int = 1

    def over(self, divisor: float) -> Spread:
        """This figure divided by a figure without a spread of its own."""
        return Spread(self.value / divisor, self.low / divisor, self.high / divisor, self.rounds)

    def over_apart(self, divisor: Spread) -> Spread:
        """This figure over another measured apart from it (not in turn), with the spread of
        the two together: from this one's low over the other's high to its high over the
        other's low."""
        rounds = min(self.rounds, divisor.rounds)
        low, high = self.low / divisor.high, self.high / divisor.low
        return Spread(self.value / divisor.value, low, high, rounds)

    def shown(self, unit: str) -> str:
        """``2.12× (1.98–2.31×)``: the value and its spread, three significant figures."""
        return f"{self.value:.3g}{unit} ({self.low:.3g}–{self.high:.3g}{unit})"


def spread_of(rounds: Sequence[np.ndarray]) -> Spread | None:
    """The median of every round's values together, and the spread of the module docstring;
    ``None`` where no round has a value."""
    kept = [np.asarray(values, float) for values in rounds if len(values)]
    if not kept:
        return None
    together = np.concatenate(kept)
    q1, median, q3 = np.percentile(together, [25, 50, 75])
    medians = [float(np.median(values)) for values in kept]
    low, high = min(float(q1), *medians), max(float(q3), *medians)
    return Spread(float(median), low, high, len(kept))


def per_step(record: ResultRecord) -> np.ndarray | None:
    """The seconds per optimizer step of each timed call of ``record`` (``None``: not timed)."""
    if record.calls_s is None or record.median_s is None:
        return None
    return np.asarray(record.calls_s, float) / (record.steps_per_sample or 1)


def paired_ratios(record: ResultRecord, over: Collection[str]) -> np.ndarray | None:
    """Each timed call over the fastest call of the variants ``over`` in its turn (``None``
    where none of them was timed in turn with it)."""
    own = per_step(record)
    if own is None or not record.partners_s:
        return None
    found = record.partners_s.items()
    beside = [np.asarray(s, float) for n, s in found if n in over and len(s) == len(own)]
    if not beside:
        return None
    return own / np.min(beside, axis=0)


def paired(rounds: Sequence[ResultRecord], over: Collection[str]) -> Spread | None:
    """The ratio of a measurement's rounds over the fastest of the variants ``over`` (the
    floors, or one variant compared with it directly), from its calls in turn with theirs;
    ``None`` unless every timed round has them."""
    ratios = [paired_ratios(r, over) for r in rounds if r.median_s is not None]
    if not ratios or any(r is None for r in ratios):
        return None
    return spread_of([r for r in ratios if r is not None])


def partner_spread(rounds: Sequence[ResultRecord], name: str, scale: float = 1e6) -> Spread | None:
    """The µs per time step (``scale`` 1e6) of ``name``'s calls taken in turn with a
    measurement's rounds (``ResultRecord.partners_s``), with their spread; ``None`` unless
    every timed round has them."""
    timed = [r for r in rounds if r.median_s is not None]
    found = [(r.partners_s or {}).get(name) for r in timed]
    if not timed or any(calls is None for calls in found):
        return None
    pairs = zip(timed, found, strict=True)
    return spread_of([np.asarray(calls, float) / r.steps * scale for r, calls in pairs])


def figure_spread(rounds: Sequence[ResultRecord], scale: float = 1e6) -> Spread | None:
    """A measurement's µs per time step (``scale`` 1e6) with its spread over its calls and
    rounds: seconds per step of each call, over the T of its shape."""
    steps = [s / r.steps * scale for r in rounds if (s := per_step(r)) is not None]
    return spread_of(steps)
