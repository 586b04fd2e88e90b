"""The benchmark's report, from the records a run writes (``bench.records``): its sections,
one module a subject (``bench.reporting.sections``), drawn in full as Markdown and abridged
for the terminal (``bench.reporting.render``), with the plots (``bench.reporting.plots``).

    python -m bench.report RESULTS.jsonl [--out FOLDER]

writes the report of a results file again (into the file's folder by default).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from bench.records import Record, file_name, read
from bench.reporting import sections as subjects
from bench.reporting.analysis import Pivot
from bench.reporting.plots import plots
from bench.reporting.render import Section, markdown, terminal
from bench.reporting.sections import Report
from bench.reporting.sections.threads import threads_said


def sections(
    records: Iterable[Record], images: Sequence[Path] = (), preamble: str = ""
) -> list[Section]:
    """The report's sections, in order, ``preamble`` (Markdown) after the head and the plots
    ``images`` last; ``ValueError`` where ``records`` hold no run record."""
    report = Report(list(records), images, preamble)
    said = threads_said(report.pivot)
    return [with_threads(section, said) for section in subjects.sections(report)]


def with_threads(section: Section, said: str) -> Section:
    """``section`` with ``said`` after its caption, and its brief's, where it has a table."""
    if not section.header:
        return section
    caption = f"{section.caption} {said}.".lstrip()
    brief = section.brief
    if brief is not None and brief.caption:
        text, colon = brief.caption.removesuffix(":"), ":" * brief.caption.endswith(":")
        brief = replace(brief, caption=f"{text} ({said[0].lower()}{said[1:]}){colon}")
    return replace(section, caption=caption, brief=brief)


def write(records: Iterable[Record], out: Path, preamble: str = "") -> str:
    """Write ``report.md`` (with ``preamble``, Markdown, before the summary) and the plots
    of every model but the quantized ones (their section is their figure) into ``out``;
    return the summary for the terminal."""
    report = Report(list(records))
    images = plots(report.pivot, out)
    for other in report.others():
        images += plots(Pivot.of(report.records, other), out, f"_{file_name(other)}")
    drawn = sections(records, images, preamble)
    (out / "report.md").write_text(markdown(drawn))
    return terminal(drawn)


def main(argv: list[str] | None = None) -> int:
    """The command line: write the report of a results file again; print its summary."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.report", description="write the report of a benchmark's results"
    )
    parser.add_argument("results", type=Path, help="a results.jsonl")
    parser.add_argument("--out", type=Path, help="report folder (default: the results' folder)")
    args = parser.parse_args(argv)
    if not args.results.is_file():
        parser.error(f"results must be a results.jsonl file, got {args.results}")
    out = args.out or args.results.parent
    out.mkdir(parents=True, exist_ok=True)
    print(write(read(args.results), out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
