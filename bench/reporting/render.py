"""The report's two renderers: one list of ``Section``s drawn as Markdown, or for a terminal
from each one's ``Brief`` in ``WIDTH`` columns. Neither judges anything.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from tabulate import tabulate

WIDTH = 100
"""The terminal's columns; the Markdown report has the details."""


class Layout(Enum):
    """How the terminal draws a section's rows."""

    TABLE = "table"
    OUTLINE = "outline"
    """Each row's first cell, the others indented below it, the last after an arrow."""
    LIST = "list"
    """The rows' first cells, comma-separated, wrapped."""


@dataclass(frozen=True)
class Brief:
    """What the terminal shows of a section.

    Attributes:
        title: a line of its own (not wrapped).
        caption: a paragraph, wrapped to ``WIDTH``.
        layout: how the rows are drawn.
        columns: the columns of the section's table shown (``None``: every one).
        header: the header of those columns, if not the section's.
        rows: the rows shown, if not the section's (already of the shown columns).
        limit: the most rows a list names; the others are counted.
        footnote: a line after an outline.
        wrapping: the columns of a table that wrap where it is wider than ``WIDTH``
            (``table``).
    """

    title: str = ""
    caption: str = ""
    layout: Layout = Layout.TABLE
    columns: tuple[int, ...] | None = None
    header: Sequence[str] | None = None
    rows: Sequence[Sequence[str]] | None = None
    limit: int | None = None
    footnote: str = ""
    wrapping: tuple[int, ...] = ()


@dataclass(frozen=True)
class Section:
    """One part of the report: a title, a caption, a table (its header and rows) and text,
    each left out where empty; a table with a header and no rows is drawn empty."""

    title: str = ""
    caption: str = ""
    header: Sequence[str] = ()
    rows: Sequence[Sequence[str]] = ()
    text: str = ""
    brief: Brief | None = None
    """What the terminal shows of it; ``None``: nothing."""


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    markdown: bool,
    wrapping: tuple[int, ...] = (),
) -> str:
    """A table of cells formatted already: GitHub Markdown, or plain text for a terminal,
    where the columns ``wrapping`` share what the others leave of ``WIDTH`` when the table
    is too wide."""
    if markdown:
        return tabulate(rows, header, tablefmt="github", disable_numparse=True)
    drawn = tabulate(rows, header, tablefmt="simple", disable_numparse=True)
    widest = max(len(line) for line in drawn.splitlines())
    if widest <= WIDTH or not wrapping:
        return drawn
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    room = WIDTH - (widest - sum(widths[i] for i in wrapping))
    share = max(room // len(wrapping), 8)
    limits = [share if i in wrapping and widths[i] > share else None for i in range(len(widths))]
    return tabulate(rows, header, tablefmt="simple", disable_numparse=True, maxcolwidths=limits)


def markdown(sections: Sequence[Section]) -> str:
    """The sections as one Markdown document, each title a second-level heading; a section
    with nothing to draw there (a brief for the terminal alone) is left out."""
    return "\n\n".join(drawn for section in sections if (drawn := _markdown(section))) + "\n"


def _markdown(section: Section) -> str:
    drawn = table(section.header, section.rows, markdown=True) if section.header else ""
    title = f"## {section.title}" if section.title else ""
    return "\n\n".join(part for part in (title, section.caption, drawn, section.text) if part)


def terminal(sections: Sequence[Section]) -> str:
    """What the terminal shows of the sections (their briefs), apart by a blank line."""
    drawn = [_terminal(section, section.brief) for section in sections if section.brief]
    return "\n\n".join(part for part in drawn if part)


def _terminal(section: Section, brief: Brief) -> str:
    heading = [brief.title] if brief.title else []
    if brief.caption:
        heading.append("\n".join(textwrap.wrap(brief.caption, WIDTH)))
    rows = section.rows if brief.rows is None else brief.rows
    if brief.rows is None and brief.columns:
        rows = [[row[i] for i in brief.columns] for row in section.rows]
    if brief.layout is Layout.TABLE:
        header = brief.header
        if header is None:
            header = [section.header[i] for i in (brief.columns or range(len(section.header)))]
        shown = [table(header, rows, markdown=False, wrapping=brief.wrapping)] if header else []
        return "\n\n".join([*heading, *shown])
    lines = _outline(rows) if brief.layout is Layout.OUTLINE else _list(rows, brief.limit)
    if brief.footnote:
        lines.append(f"  {brief.footnote}")
    return "\n".join(["\n\n".join(heading), *lines] if heading else lines)


def _outline(rows: Sequence[Sequence[str]]) -> list[str]:
    """Each row: its first cell, its middle cells indented below it, its last after "->"."""
    lines = []
    for first, *middle, last in rows:
        lines += textwrap.wrap(first, WIDTH, initial_indent="  ", subsequent_indent="    ")
        for cell in middle:
            lines += textwrap.wrap(cell, WIDTH, initial_indent="    ", subsequent_indent="    ")
        lines.append(f"    -> {last}")
    return lines


def _list(rows: Sequence[Sequence[str]], limit: int | None) -> list[str]:
    """The rows' first cells, at most ``limit`` named and the rest counted."""
    shown = [row[0] for row in rows][:limit]
    more = len(rows) - len(shown)
    text = ", ".join(shown) + (f" and {more} more" if more else "")
    return textwrap.wrap(text, WIDTH, initial_indent="  ", subsequent_indent="  ")
