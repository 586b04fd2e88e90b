"""The report's tables: each one's rows of formatted cells, its header and its caption, from
one ``Pivot`` (``bench.reporting.analysis``). A figure with its ratio to the floor reads
``figure (ratio×)``; a flagged one (``bench.reporting.analysis.flags``) ends in ``FLAG``.
"""

from __future__ import annotations

from collections.abc import Container

from bench.comparing.pairs import Spread
from bench.records import Key
from bench.reporting.analysis import (
    Pivot,
    label,
)

Rows = list[list[str]]
FLAG = "!"
"""Marks a flagged figure in the tables."""
UNRESOLVED = "below resolution"
"""A part of a split fitted below zero: smaller than the noise of its times."""


def fmt(value: float | None, digits: int = 3) -> str:
    """``digits`` significant figures, or the whole number where it has more; "—": none."""
    if value is None:
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"


def with_ratio(value: float | None, ratio: float | None) -> str:
    """'figure (ratio×)', or the figure alone."""
    return fmt(value) + (f" ({fmt(ratio)}×)" if ratio is not None else "")


def ratio_cell(value: float | None) -> str:
    """'ratio×', or "—"."""
    return fmt(value) + ("×" if value else "")


def key_cells(key: Key) -> list[str]:
    """A measurement's first cells: its variant, operation (``label``), B and T."""
    return [key.variant, label(key.operation, key.side, key.chunk), str(key.batch), str(key.steps)]


def figures(pivot: Pivot, keys: list[Key], doubted: Container[Key]) -> list[str]:
    """Each measurement's µs per step with its ratio to the floor, flagged where doubted."""
    return [
        with_ratio(pivot.figure(key), pivot.floor_ratio(key)) + (FLAG if key in doubted else "")
        for key in keys
    ]


def spread_cell(spread: Spread | None, digits: int = 3) -> str:
    """'low–high', or "—"."""
    return "—" if spread is None else f"{fmt(spread.low, digits)}–{fmt(spread.high, digits)}"


def figure_cell(spread: Spread | None, unit: str = "") -> str:
    """'figure``unit`` (low–high)', or "—"."""
    return "—" if spread is None else f"{fmt(spread.value)}{unit} ({spread_cell(spread)})"


def in_turn_cell(spread: Spread | None) -> str:
    """'ratio× (low–high)', or "—"."""
    return figure_cell(spread, "×")
