"""The report is one list of sections drawn by two renderers: the Markdown report has every
section in full, the terminal each section's brief, in the same order. The renderers draw
what a section holds and judge nothing; ``python -m bench.report`` writes a results file's
report again."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import render, report
from bench.records import Listing, Point, Record, to_json
from bench.render import Brief, Layout, Section
from tests.bench_cases import measured, run_record

TABLE = Section(
    "Figures",
    "What the figures are.",
    ["variant", "role", "µs"],
    [["alpha", "floor", "1.5"], ["beta", "compiled", "3"]],
    brief=Brief(caption="figures:", columns=(0, 2)),
)


def test_markdown_draws_every_part_of_every_section() -> None:
    text = render.markdown([Section(text="# Head"), TABLE, Section("Only here", text="- a")])
    assert text.startswith("# Head\n\n## Figures\n\nWhat the figures are.\n\n| variant ")
    assert "| beta      | compiled | 3    |" in text
    assert text.endswith("## Only here\n\n- a\n")


def test_the_terminal_draws_the_briefs_alone() -> None:
    """The columns a brief names, its caption; no section without a brief."""
    text = render.terminal([Section(text="# Head"), TABLE, Section("Only here", text="- a")])
    assert text.splitlines()[:3] == ["figures:", "", "variant    µs"]
    assert "floor" not in text and "Head" not in text and "Only here" not in text


def test_an_outline_puts_each_row_under_its_first_cell() -> None:
    rows = [["a target", "what was measured", "met"], ["another", "more", "missed"]]
    brief = Brief(caption="targets:", layout=Layout.OUTLINE, footnote="(1 more)")
    text = render.terminal([Section(header=["t", "m", "r"], rows=rows, brief=brief)])
    assert text.splitlines() == [
        "targets:",
        "  a target",
        "    what was measured",
        "    -> met",
        "  another",
        "    more",
        "    -> missed",
        "  (1 more)",
    ]


def test_a_list_names_at_most_its_limit_and_counts_the_rest() -> None:
    rows = [[f"reading {i}"] for i in range(5)]
    brief = Brief(caption="doubts:", layout=Layout.LIST, limit=3)
    text = render.terminal([Section(rows=rows, brief=brief)])
    assert text == "doubts:\n  reading 0, reading 1, reading 2 and 2 more"
    unlimited = render.terminal([Section(rows=rows, brief=Brief(layout=Layout.LIST))])
    assert unlimited.endswith("reading 4") and "more" not in unlimited


def test_a_wide_table_wraps_only_the_columns_it_is_told_to() -> None:
    rows = [["a " * 60, "b " * 30]]
    wrapped = render.table(["x", "y"], rows, markdown=False, wrapping=(0,))
    assert max(map(len, wrapped.splitlines())) <= render.WIDTH
    assert max(map(len, render.table(["x", "y"], rows, markdown=False).splitlines())) > 100


def records() -> list[Record]:
    listings = {
        "floor": Listing("numba_floor", "floor", "loops"),
        "fast": Listing("jax_scan", "compiled", "scan"),
    }
    run = run_record(listings, [Point("default", 1, 1000, ("predict",))])
    return [
        run,
        *(measured("floor", "floor", op, 1, t, 1.0) for op in ("predict",) for t in (100, 1000)),
        *(measured("fast", "compiled", op, 1, t, 2.0) for op in ("predict",) for t in (100, 1000)),
    ]


def test_both_renderers_draw_the_report_in_one_order() -> None:
    """The summary, the targets and the call costs come in the same order in both."""
    drawn = report.sections(records())
    text, brief = render.markdown(drawn), render.terminal(drawn)
    in_markdown = [text.index(s) for s in ("## Summary", "## Targets", "## Cost per call")]
    in_terminal = [brief.index(s) for s in ("B=1, T=1000:", "targets (", "Not split")]
    assert in_markdown == sorted(in_markdown) and in_terminal == sorted(in_terminal)
    assert "## Variants" in text and "Variants" not in brief


def test_a_report_needs_the_runs_record() -> None:
    with pytest.raises(ValueError, match="run's record"):
        report.sections(records()[1:])


def test_the_report_of_a_results_file_is_written_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip(
        "matplotlib", reason="the report needs matplotlib: pip install 'frae[bench]'"
    )
    results = tmp_path / "results.jsonl"
    results.write_text("".join(to_json(r) + "\n" for r in records()))
    assert report.main([str(results), "--out", str(tmp_path / "again")]) == 0
    text = (tmp_path / "again" / "report.md").read_text()
    assert text.startswith("# FRAE benchmark") and "![step_time_vs_T]" in text
    assert capsys.readouterr().out.startswith("B=1, T=1000:")
    with pytest.raises(SystemExit):
        report.main([str(tmp_path / "missing.jsonl")])
