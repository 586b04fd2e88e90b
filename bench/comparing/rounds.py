"""Rounds: a run that measures every variant R times (``--rounds R``), each time in a fresh
process, the variants taking turns so that a slow minute of the machine falls on all alike.

A process's own state moves a measurement by more than its calls vary within one (on a
2-core machine, two processes of tf_while put its gradient at 3.65 and 5.42 µs a step, each
within a few per cent over its own calls), so ``bench.comparing.change`` widens its margin by the
spread between rounds, as asv measures each benchmark in several processes. ``pooled``
merges the rounds of each measurement into one record for the report's tables.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np

from bench.records import DoneRecord, Key, Record, ResultRecord, VariantRecord


def merged(rounds: list[ResultRecord]) -> ResultRecord:
    """One measurement's rounds as one record: their calls together (each in the first
    timed round's steps per call) and the floors' in turn with them (of the floors every
    round has), the median and quartiles over them, the median first call, the largest
    peak, the mean cores busy; the rounds that failed named in its note."""
    timed = [r for r in rounds if r.median_s is not None and r.calls_s is not None]
    if not timed:
        return replace(rounds[0], round=None)
    first = timed[0]
    per_call = first.steps_per_sample or 1
    calls = np.concatenate(
        [np.asarray(r.calls_s) * per_call / (r.steps_per_sample or 1) for r in timed]
    )
    q1, median, q3 = np.percentile(calls / per_call, [25, 50, 75])
    failed = [str(r.round) for r in rounds if r not in timed]
    notes = [first.note, f"failed in round {', '.join(failed)}" if failed else None]
    firsts = [r.first_call_s for r in rounds if r.first_call_s is not None]
    busy = [r.cores_busy for r in timed if r.cores_busy is not None]
    peaks = [r.peak_rss_mb for r in timed if r.peak_rss_mb is not None]
    others = [r.others_s for r in timed]
    partners = set.intersection(*(set(r.partners_s or {}) for r in timed))
    paired = {name: [s for r in timed for s in (r.partners_s or {})[name]] for name in partners}
    return replace(
        first,
        round=None,
        note="; ".join(filter(None, notes)) or None,
        samples=len(calls),
        median_s=float(median),
        q1_s=float(q1),
        q3_s=float(q3),
        calls_s=calls.tolist(),
        partners_s=dict(sorted(paired.items())) or None,
        others_s=None if None in others else sum(o for o in others if o is not None),
        first_call_s=float(np.median(firsts)) if firsts else None,
        cores_busy=float(np.mean(busy)) if busy else None,
        peak_rss_mb=max(peaks) if peaks else None,
    )


def pooled(records: list[Record]) -> list[Record]:
    """``records`` with each measurement's rounds merged (``merged``) where the first stood,
    each variant's facts its first round's (or first failure's), its worker time their sum."""
    if not any(getattr(r, "round", None) for r in records):
        return records
    results: dict[Key, list[ResultRecord]] = defaultdict(list)
    facts: dict[str, VariantRecord] = {}
    walls: dict[str, float] = defaultdict(float)
    for r in records:
        if isinstance(r, ResultRecord):
            results[r.key].append(r)
        elif isinstance(r, VariantRecord):
            known = facts.get(r.variant)
            if known is None or (r.error and not known.error):
                facts[r.variant] = r
        elif isinstance(r, DoneRecord):
            walls[r.variant] += r.wall_s
    kept: list[Record] = []
    for r in records:  # each merged record where its first round stood
        if isinstance(r, ResultRecord):
            rounds = results.pop(r.key, None)
            if rounds is not None:
                kept.append(merged(rounds))
        elif isinstance(r, VariantRecord) and r.variant in facts:
            kept.append(replace(facts.pop(r.variant), round=None))
        elif isinstance(r, DoneRecord) and r.variant in walls:
            kept.append(DoneRecord(r.variant, walls.pop(r.variant)))
        elif not isinstance(r, VariantRecord | DoneRecord):
            kept.append(r)
    return kept
