"""``bench.reporting.render``: Markdown draws every section in full, the terminal each one's
brief."""

from __future__ import annotations

from bench.reporting import render
from bench.reporting.render import Brief, Layout, Section

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
