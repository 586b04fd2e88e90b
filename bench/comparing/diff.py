"""Compare two benchmark runs: what differs between them, and which measurements moved.

    frae diff OLD NEW [--fail-slower RATIO] [--alpha P] [--min-margin FRACTION] [--markdown]

OLD and NEW are ``results.jsonl`` files (``bench.records``) or the report folders holding
them. Measurements pair by ``bench.records.Key``; each pair timed in both runs gets a
verdict from ``bench.comparing.change`` with its p-value. Before the tables the diff lists what
differs between the runs besides the code (``bench.comparing.differences``); after them, what one
run did not time and why. With ``--fail-slower RATIO`` the exit status is 1 when a measurement is
``slower`` by at least RATIO, which lets a CI job fail on a regression.
"""

from __future__ import annotations

import argparse
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.comparing.change import ALPHA, FASTER, FEW, MIN_MARGIN, NOISE, SLOWER, Change, judge
from bench.comparing.differences import differences
from bench.comparing.rounds import pooled
from bench.records import DEFAULT_MODEL, Key, ResultRecord, RunRecord, VariantRecord, read
from bench.reporting.analysis import label
from bench.reporting.render import WIDTH, table
from bench.reporting.tables import fmt, key_cells

ONLY_OLD, ONLY_NEW = "old only", "new only"
FAILED_OLD, FAILED_NEW, FAILED_BOTH = "old failed", "new failed", "both failed"


@dataclass(frozen=True)
class Run:
    """A benchmark run as read back: its facts and its measurements by key."""

    run: RunRecord
    results: dict[Key, ResultRecord]
    """Each measurement, its rounds merged (``bench.comparing.rounds.pooled``)."""
    facts: dict[str, VariantRecord] = field(default_factory=dict)
    rounds: dict[Key, list[ResultRecord]] = field(default_factory=dict)
    """Each measurement's rounds apart, for a run of more than one."""


@dataclass(frozen=True)
class Pair:
    """One measurement (``bench.records.Key``) in either run or both, and its verdict."""

    key: Key
    old: ResultRecord | None
    new: ResultRecord | None
    verdict: str
    change: Change | None = None
    """The verdict's ratio and p-value, for a measurement timed in both runs."""

    @property
    def ratio(self) -> float | None:
        return None if self.change is None else self.change.ratio

    @property
    def p_value(self) -> float | None:
        return None if self.change is None else self.change.p_value


def load(path: Path, name: str) -> Run:
    """The run in ``path``, a ``results.jsonl`` or a report folder holding one; raises
    ``ValueError``, naming the argument ``name``, where it holds no benchmark's results."""
    folder = path.is_dir()
    path = path / "results.jsonl" if folder else path
    if not path.is_file():
        found = (
            f"the folder {path.parent} without one" if folder else f"{path}, which does not exist"
        )
        raise ValueError(
            f"{name} must be a results.jsonl file or a report folder holding one, got {found}"
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
    rounds: dict[Key, list[ResultRecord]] = {}
    for r in records:
        if isinstance(r, ResultRecord) and r.round is not None:
            rounds.setdefault(r.key, []).append(r)
    run, records = records[0], pooled(records)
    results = {r.key: r for r in records if isinstance(r, ResultRecord)}
    facts = {r.variant: r for r in records if isinstance(r, VariantRecord)}
    return Run(run, results, facts, rounds)


def compare(old: Run, new: Run, alpha: float = ALPHA, min_margin: float = MIN_MARGIN) -> list[Pair]:
    """Every measurement of either run, in the old run's order then the new run's, with its
    verdict: ``bench.comparing.change.judge``'s for those timed in both, else which run lacks it or
    failed it."""
    keys = list(old.results) + [k for k in new.results if k not in old.results]
    pairs = []
    for k in keys:
        before, after = old.results.get(k), new.results.get(k)
        change = None
        if before is None:
            outcome = ONLY_NEW
        elif after is None:
            outcome = ONLY_OLD
        elif before.median_s is None:
            outcome = FAILED_BOTH if after.median_s is None else FAILED_OLD
        elif after.median_s is None:
            outcome = FAILED_NEW
        else:
            apart = (old.rounds.get(k, []), new.rounds.get(k, []))
            change = judge(before, after, alpha, min_margin, apart)
            outcome = change.verdict
        pairs.append(Pair(k, before, after, outcome, change))
    return pairs


def _us(result: ResultRecord | None) -> str:
    """µs per time step, to three significant figures."""
    return fmt(None if result is None else result.us_per_step)


def _rows(pairs: list[Pair]) -> list[list[str]]:
    rows = []
    for c in pairs:
        ratio = "—" if c.ratio is None else f"{c.ratio:.2f}×"
        p = "—" if c.p_value is None else f"{c.p_value:.1g}"  # none: too few calls to tell
        rows.append([*key_cells(c.key), _us(c.old), _us(c.new), ratio, p, c.verdict])
    return rows


def _tables(pairs: list[Pair], markdown: bool) -> list[str]:
    """The measurements' tables, one per model when a run measured other models than the
    default one: a column of model labels would not fit the line."""
    header = ["variant", "operation", "B", "T", "old", "new", "ratio", "p", "verdict"]
    models = list(dict.fromkeys(c.key.model for c in pairs))
    lines = []
    for model in models:
        if models != [DEFAULT_MODEL]:
            lines += ["", f"model {model}:"]
        in_model = [c for c in pairs if c.key.model == model]
        lines += ["", table(header, _rows(in_model), markdown, wrapping=(0, 1))]
    legend = (
        "old, new: µs, the median per time step (median / T; per frame for the stream); "
        "ratio: new median / old median; p: the rank test's on the calls both kept "
        "(— where too few calls could not tell)"
    )
    return [*lines, "", legend if markdown else textwrap.fill(legend, WIDTH)]


def _not_timed(pairs: list[Pair], markdown: bool) -> list[str]:
    """A line for each measurement a run has but did not time, with the reason."""
    lines = []
    for c in pairs:
        for run, result in (("old", c.old), ("new", c.new)):
            if result is None or result.median_s is not None:
                continue
            k = c.key
            on = "" if k.model == DEFAULT_MODEL else f" {k.model}"
            reason = (
                f"error: {result.error}" if result.error else f"unsupported: {result.unsupported}"
            )
            where = f"{label(k.operation, k.side, k.chunk)}{on} B={k.batch} T={k.steps}"
            line = f"- {k.variant} {where}, {run}: {reason}"
            lines.append(line if markdown else textwrap.shorten(line, WIDTH))
    return ["", "not timed:", *lines] if lines else []


def _rounds_said(old: Run, new: Run) -> list[str]:
    """How many processes measured each measurement, and what a single one cannot tell."""
    rounds = [run.run.settings.rounds for run in (old, new)]
    said = f"rounds: old {rounds[0]}, new {rounds[1]}"
    if min(rounds) > 1:
        return ["", f"{said}; each margin widened by the spread between one run's rounds"]
    single = "a run of one round cannot show how its processes differ: margins rest on "
    single += "--min-margin alone (bench --rounds 2 or more)"
    return ["", textwrap.fill(f"{said}; {single}", WIDTH)]


def render(old: Run, new: Run, pairs: list[Pair], markdown: bool = False) -> str:
    """The report: both runs' start, what differs between them, the tables of measurements,
    why those not timed were not, and the count of each verdict."""
    lines = [
        f"old: started {old.run.started}, {len(old.results)} measurements",
        f"new: started {new.run.started}, {len(new.results)} measurements",
        "",
    ]
    if changes := differences(old.run, new.run, old.facts, new.facts):
        drawn = table(["", "old", "new"], changes, markdown, wrapping=(0, 1, 2))
        lines += ["differs between the runs:", "", drawn]
    else:
        lines.append("the same machine, library versions, settings, grid and threads in both runs")
    lines += _rounds_said(old, new)
    lines += _tables(pairs, markdown) + _not_timed(pairs, markdown)
    counts = Counter(c.verdict for c in pairs)
    unmatched = sum(n for v, n in counts.items() if v not in (FASTER, SLOWER, NOISE, FEW))
    lines += [
        "",
        f"{counts[FASTER]} faster, {counts[SLOWER]} slower, {counts[NOISE]} within noise, "
        f"{counts[FEW]} with too few calls to tell, {unmatched} unmatched",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "frae diff") -> int:
    """The command line: print the comparison; return 1 when ``--fail-slower`` is given and
    a measurement is slower by at least that ratio, else 0."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog="verdict: slower when the Mann-Whitney U test on the calls both runs kept gives "
        "p < --alpha and new/old > 1 + --min-margin, faster symmetrically",
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
    parser.add_argument(
        "--alpha",
        type=float,
        default=ALPHA,
        metavar="P",
        help=f"the largest p-value called a change (default {ALPHA}, as asv)",
    )
    parser.add_argument("--markdown", action="store_true", help="GitHub Markdown tables")
    args = parser.parse_args(argv)
    if args.fail_slower is not None and not args.fail_slower > 1:
        parser.error(f"--fail-slower must be a ratio above 1, got {args.fail_slower}")
    if not 0 <= args.min_margin < 1:
        parser.error(f"--min-margin must be a fraction in [0, 1), got {args.min_margin}")
    if not 0 < args.alpha < 1:
        parser.error(f"--alpha must be a probability in (0, 1), got {args.alpha}")
    try:
        old, new = load(args.old, "OLD"), load(args.new, "NEW")
    except ValueError as error:
        parser.error(str(error))
    pairs = compare(old, new, args.alpha, args.min_margin)
    print(render(old, new, pairs, markdown=args.markdown))
    if args.fail_slower is None:
        return 0
    regressions = [c for c in pairs if c.verdict == SLOWER and c.ratio is not None]
    return int(any(c.ratio >= args.fail_slower for c in regressions))
