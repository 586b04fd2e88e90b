"""What differs between two benchmark runs besides the code measured: the machine, the
library versions, the settings, the grid and each variant's threads, any of which explains
a change as well as a regression does."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from bench.records import RunRecord, VariantRecord

MACHINE_FACTS = ("processor", "cpu_count", "affinity", "python")
"""The facts of ``RunRecord.machine`` listed when they differ, before library versions."""
ABSENT = "—"

Difference = tuple[str, str, str]
"""(what, old, new)."""


def differing(
    before: Mapping[str, Any], after: Mapping[str, Any], names: Iterable[str], prefix: str = ""
) -> list[Difference]:
    """(prefix + name, old, new) for each of ``names`` whose values differ."""
    return [
        (prefix + name, str(before.get(name, ABSENT)), str(after.get(name, ABSENT)))
        for name in names
        if before.get(name) != after.get(name)
    ]


def _union(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return sorted(before.keys() | after.keys())


def machine_differences(old: RunRecord, new: RunRecord) -> list[Difference]:
    """The machine facts (``MACHINE_FACTS``) and library versions that differ."""
    versions_old, versions_new = old.machine.versions, new.machine.versions
    return differing(asdict(old.machine), asdict(new.machine), MACHINE_FACTS) + differing(
        versions_old, versions_new, _union(versions_old, versions_new)
    )


def setting_differences(old: RunRecord, new: RunRecord) -> list[Difference]:
    """The settings that differ (``bench.records.Settings``)."""
    before, after = asdict(old.settings), asdict(new.settings)
    return differing(before, after, _union(before, after), "setting ")


def grid_differences(old: RunRecord, new: RunRecord) -> list[Difference]:
    """The grid's points that one run has and the other lacks."""
    points_old, points_new = set(old.grid), set(new.grid)
    if points_old == points_new:
        return []

    def said(points: set[Any]) -> str:
        shown = ", ".join(f"{p.model} B={p.batch} T={p.steps}" for p in sorted(points))
        return textwrap.shorten(shown, 60) if shown else "none"

    return [("grid: points only in", said(points_old - points_new), said(points_new - points_old))]


def thread_differences(
    old: Mapping[str, VariantRecord], new: Mapping[str, VariantRecord]
) -> list[Difference]:
    """The thread settings that differ, of each variant that ran in both runs."""
    found = []
    for variant in old.keys() & new.keys():
        before, after = old[variant].threads or {}, new[variant].threads or {}
        found += differing(before, after, _union(before, after), f"{variant} threads: ")
    return sorted(found)


def differences(
    old: RunRecord,
    new: RunRecord,
    old_facts: Mapping[str, VariantRecord],
    new_facts: Mapping[str, VariantRecord],
) -> list[Difference]:
    """Everything that differs between the runs but the code."""
    return (
        machine_differences(old, new)
        + setting_differences(old, new)
        + grid_differences(old, new)
        + thread_differences(old_facts, new_facts)
    )
