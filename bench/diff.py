"""Compare two benchmark runs: what changed on the machine, and which measurements moved.

    frae diff OLD NEW [--fail-slower RATIO] [--min-margin FRACTION] [--markdown]

OLD and NEW are ``results.jsonl`` files (``bench.records``) or the report folders holding
them. Measurements pair by (variant, operation, model, B, T, and the stream's side and
chunk length). For a pair timed in both runs,
with medians m₀ (old) and m₁ (new) and quartiles [q1₀, q3₀] and [q1₁, q3₁]:

    r = m₁ / m₀                            the ratio new/old
    w = (q3 − q1) / m                      a run's relative spread, IQR / median
    δ = max(δ_min, (w₀ + w₁) / 2)          the noise margin; δ_min = 5 % by default

    slower        if q1₁ > q3₀  and  r   > 1 + δ
    faster        if q3₁ < q1₀  and  1/r > 1 + δ
    within noise  otherwise

The quartile test asks that most new calls (three quarters) took longer than most old ones,
whatever the shape of the spread: timings have a long right tail, and a skewed old spread
can reach above the new median even when the medians are far apart. The margin asks that
the medians be further apart than the two spreads' half-widths together, and never less
than δ_min: a run's IQR says how much its calls vary within that run, not how much two runs
on one machine differ (clock speed, caches, other processes), and a single sample has
q1 = q3 = m, where the quartile test alone would call any difference. ``faster`` uses 1/r,
so swapping OLD and NEW swaps ``slower`` and ``faster`` exactly.

A measurement in one run only, or timed in one and not in the other, is listed as such,
with the reason it was not timed. With ``--fail-slower RATIO`` the exit status is 1 when a
measurement is ``slower`` by at least RATIO, which lets a CI job fail on a regression.
"""

from __future__ import annotations

import argparse
import textwrap
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from bench.analysis import label
from bench.records import DEFAULT_MODEL, ResultRecord, RunRecord, read
from bench.render import WIDTH, table

MIN_MARGIN = 0.05
"""δ_min: the least relative change called faster or slower, whatever the spreads."""
MACHINE_FACTS = ("processor", "cpu_count", "affinity", "python")
"""The facts of ``RunRecord.machine`` listed when they differ, before library versions."""
FASTER, SLOWER, NOISE = "faster", "slower", "within noise"
ONLY_OLD, ONLY_NEW = "old only", "new only"
FAILED_OLD, FAILED_NEW, FAILED_BOTH = "old failed", "new failed", "both failed"


class Key(NamedTuple):
    """What pairs a measurement with its counterpart in the other run."""

    variant: str
    operation: str
    model: str
    batch: int
    steps: int
    side: str | None = None
    """The stream's side; ``None`` for every other operation."""
    chunk: int | None = None
    """The stream's frames per call; ``None`` for every other operation."""

    @property
    def operation_label(self) -> str:
        """The operation as the tables name it, with the stream's side and chunk length."""
        return label(self.operation, self.side, self.chunk)


@dataclass(frozen=True)
class Run:
    """A benchmark run as read back: its facts and its measurements by key."""

    run: RunRecord
    results: dict[Key, ResultRecord]


@dataclass(frozen=True)
class Comparison:
    """One measurement in either run or both, and its verdict."""

    key: Key
    old: ResultRecord | None
    new: ResultRecord | None
    verdict: str

    @property
    def ratio(self) -> float | None:
        """m₁ / m₀, when both runs timed it."""
        if self.old is None or self.new is None:
            return None
        if self.old.median_s is None or self.new.median_s is None:
            return None
        return self.new.median_s / self.old.median_s


def key(result: ResultRecord) -> Key:
    """What pairs a measurement with its counterpart in the other run."""
    r = result
    return Key(r.variant, r.operation, r.model, r.batch, r.steps, r.side, r.chunk)


def load(path: Path, name: str) -> Run:
    """The run in ``path``, a ``results.jsonl`` or a report folder holding one.

    Args:
        path: the file or folder.
        name: the argument it came from (``OLD``, ``NEW``), for the error messages.

    Raises:
        ValueError: ``path`` is missing or does not hold a benchmark's results.
    """
    if path.is_dir():
        if not (path / "results.jsonl").is_file():
            raise ValueError(
                f"{name} must be a results.jsonl file or a report folder holding one, "
                f"got the folder {path} without one"
            )
        path = path / "results.jsonl"
    elif not path.is_file():
        raise ValueError(
            f"{name} must be a results.jsonl file or a report folder holding one, "
            f"got {path}, which does not exist"
        )
    try:
        records = read(path)
    except (ValueError, TypeError, KeyError, AttributeError) as error:  # not our JSON
        raise ValueError(
            f"{name} must be a benchmark's results.jsonl (JSON lines of bench.records), "
            f"got {path}: {error}"
        ) from error
    if not records or not isinstance(records[0], RunRecord):
        first = f"a {records[0].kind!r} record" if records else "an empty file"
        raise ValueError(
            f"{name} must be a benchmark's results.jsonl, which starts with the run's record, "
            f"got {first} at the start of {path}"
        )
    results = {key(r): r for r in records if isinstance(r, ResultRecord)}
    return Run(records[0], results)


def _quartiles(result: ResultRecord) -> tuple[float, float, float]:
    """(q1, median, q3); a measurement without quartiles (one sample) spreads over its
    median alone."""
    assert result.median_s is not None
    q1 = result.median_s if result.q1_s is None else result.q1_s
    q3 = result.median_s if result.q3_s is None else result.q3_s
    return q1, result.median_s, q3


def verdict(old: ResultRecord, new: ResultRecord, min_margin: float = MIN_MARGIN) -> str:
    """``faster``, ``slower`` or ``within noise``, by the rule in the module docstring.

    Args:
        old, new: the same measurement in the two runs, timed in both.
        min_margin: δ_min, the least relative change that counts.

    Returns:
        ``FASTER``, ``SLOWER`` or ``NOISE``.
    """
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


def compare(old: Run, new: Run, min_margin: float = MIN_MARGIN) -> list[Comparison]:
    """Every measurement of either run, in the old run's order then the new run's, with its
    verdict: ``verdict``'s for those timed in both, else which run lacks it or failed it."""
    keys = list(old.results) + [k for k in new.results if k not in old.results]
    comparisons = []
    for k in keys:
        before, after = old.results.get(k), new.results.get(k)
        if before is None:
            outcome = ONLY_NEW
        elif after is None:
            outcome = ONLY_OLD
        elif before.median_s is None:
            outcome = FAILED_BOTH if after.median_s is None else FAILED_OLD
        elif after.median_s is None:
            outcome = FAILED_NEW
        else:
            outcome = verdict(before, after, min_margin)
        comparisons.append(Comparison(k, before, after, outcome))
    return comparisons


def machine_changes(old: RunRecord, new: RunRecord) -> list[tuple[str, str, str]]:
    """(what, old, new) for each machine fact (``MACHINE_FACTS``) and library version that
    differs between the runs; "—" where a run lacks it."""

    def differing(
        before: dict[str, Any], after: dict[str, Any], names: Iterable[str]
    ) -> list[tuple[str, str, str]]:
        return [
            (name, str(before.get(name, "—")), str(after.get(name, "—")))
            for name in names
            if before.get(name) != after.get(name)
        ]

    versions_old = old.machine.get("versions", {})
    versions_new = new.machine.get("versions", {})
    libraries = sorted(versions_old.keys() | versions_new.keys())
    return differing(old.machine, new.machine, MACHINE_FACTS) + differing(
        versions_old, versions_new, libraries
    )


def _us(result: ResultRecord | None) -> str:
    """µs per time step, to three significant figures."""
    if result is None or result.us_per_step is None:
        return "—"
    value = result.us_per_step
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


def _rows(comparisons: list[Comparison]) -> list[list[str]]:
    rows = []
    for c in comparisons:
        ratio = "—" if c.ratio is None else f"{c.ratio:.2f}×"
        where = [c.key.variant, c.key.operation_label, str(c.key.batch), str(c.key.steps)]
        rows.append([*where, _us(c.old), _us(c.new), ratio, c.verdict])
    return rows


def _tables(comparisons: list[Comparison], markdown: bool) -> list[str]:
    """The measurements' tables, one per model when a run measured other models than the
    default one: a column of model labels would not fit the line."""
    header = ["variant", "operation", "B", "T", "old µs", "new µs", "ratio", "verdict"]
    models = list(dict.fromkeys(c.key.model for c in comparisons))
    lines = []
    for model in models:
        if models != [DEFAULT_MODEL]:
            lines += ["", f"model {model}:"]
        in_model = [c for c in comparisons if c.key.model == model]
        lines += ["", table(header, _rows(in_model), markdown, wrapping=(0, 1))]
    return [
        *lines,
        "",
        "µs: median per time step (median / T; per frame for the stream); "
        "ratio: new median / old median",
    ]


def _not_timed(comparisons: list[Comparison], markdown: bool) -> list[str]:
    """A line for each measurement a run has but did not time, with the reason."""
    lines = []
    for c in comparisons:
        for run, result in (("old", c.old), ("new", c.new)):
            if result is None or result.median_s is not None:
                continue
            k = c.key
            on = "" if k.model == DEFAULT_MODEL else f" {k.model}"
            reason = (
                f"error: {result.error}" if result.error else f"unsupported: {result.unsupported}"
            )
            where = f"{k.operation_label}{on} B={k.batch} T={k.steps}"
            line = f"- {k.variant} {where}, {run}: {reason}"
            lines.append(line if markdown else textwrap.shorten(line, WIDTH))
    return ["", "not timed:", *lines] if lines else []


def render(old: Run, new: Run, comparisons: list[Comparison], markdown: bool = False) -> str:
    """The report: both runs' start, what changed on the machine, the tables of
    measurements, why those not timed were not, and the count of each verdict."""
    lines = [
        f"old: started {old.run.started}, {len(old.results)} measurements",
        f"new: started {new.run.started}, {len(new.results)} measurements",
        "",
    ]
    changes = machine_changes(old.run, new.run)
    if changes:
        drawn = table(["", "old", "new"], changes, markdown, wrapping=(1, 2))
        lines += ["changed between the runs:", "", drawn]
    else:
        lines.append("the same machine facts and library versions in both runs")
    lines += _tables(comparisons, markdown) + _not_timed(comparisons, markdown)
    counts = Counter(c.verdict for c in comparisons)
    unmatched = sum(n for v, n in counts.items() if v not in (FASTER, SLOWER, NOISE))
    lines += [
        "",
        f"{counts[FASTER]} faster, {counts[SLOWER]} slower, {counts[NOISE]} within noise, "
        f"{unmatched} unmatched",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "frae diff") -> int:
    """The command line: print the comparison; return 1 when ``--fail-slower`` is given and
    a measurement is slower by at least that ratio, else 0."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog="verdict: slower when the new q1 is above the old q3 and new/old > 1 + margin, "
        "margin = max(--min-margin, mean of the two IQR / median); faster symmetrically",
    )
    parser.add_argument("old", metavar="OLD", type=Path, help="results.jsonl or its folder")
    parser.add_argument("new", metavar="NEW", type=Path, help="results.jsonl or its folder")
    parser.add_argument(
        "--fail-slower",
        type=float,
        metavar="RATIO",
        help="exit with status 1 when a measurement is slower by new/old ≥ RATIO (> 1)",
    )
    parser.add_argument(
        "--min-margin",
        type=float,
        default=MIN_MARGIN,
        metavar="FRACTION",
        help=f"the least relative change called faster or slower (default {MIN_MARGIN})",
    )
    parser.add_argument("--markdown", action="store_true", help="GitHub Markdown tables")
    args = parser.parse_args(argv)
    if args.fail_slower is not None and not args.fail_slower > 1:
        parser.error(f"--fail-slower must be a ratio above 1, got {args.fail_slower}")
    if not 0 <= args.min_margin < 1:
        parser.error(f"--min-margin must be a fraction in [0, 1), got {args.min_margin}")
    try:
        old, new = load(args.old, "OLD"), load(args.new, "NEW")
    except ValueError as error:
        parser.error(str(error))
    comparisons = compare(old, new, args.min_margin)
    print(render(old, new, comparisons, markdown=args.markdown))
    if args.fail_slower is None:
        return 0
    regressions = [c for c in comparisons if c.verdict == SLOWER and c.ratio is not None]
    return int(any(c.ratio >= args.fail_slower for c in regressions))
