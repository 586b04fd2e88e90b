"""The documents' figures come from the suite's own catalogues."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.processes import ROOT

DOCS = ROOT / "docs"


def hostile_input_counts() -> dict[str, int]:
    """How many hostile inputs each catalogue of the suite tries."""
    from parity_tests import test_bad_input, test_resume
    from tests import test_checkpoints, test_weights_files

    return {
        "calls": len(test_bad_input.BAD_CALLS) + len(test_bad_input.BEYOND_CALLS),
        "configs": len(test_bad_input.BAD_CONFIGS),
        "import paths": len(test_bad_input.NOT_BACKENDS),
        "unreadable files": len(test_weights_files.UNREADABLE) + 1,  # + an object member
        "wrong entries": len(test_weights_files.ONE_WRONG_ENTRY),
        "oversized members": len(test_weights_files.HUGE),
        "training states": len(test_resume.BAD_STATES),
        "checkpoints": len(test_checkpoints.HOSTILE),
    }


def test_robustness_page_states_the_hostile_input_counts() -> None:
    """docs/robustness.md's figures are the catalogues' sizes: a case removed shows in its
    diff."""
    counts = hostile_input_counts()
    page = (DOCS / "robustness.md").read_text()
    expected = (
        f"{sum(counts.values())} hostile inputs: {counts['calls']} bad calls on every "
        f"backend, {counts['configs']} bad configs, {counts['import paths']} import paths "
        f"that name no backend, {counts['unreadable files']} unreadable weights files, "
        f"{counts['wrong entries']} files with one wrong entry, "
        f"{counts['oversized members']} with an oversized member, "
        f"{counts['training states']} training states fit cannot continue and "
        f"{counts['checkpoints']} hostile checkpoint files"
    )
    assert expected in " ".join(page.split()), expected


@pytest.mark.parametrize("run", ["full_grid", "rounding", "rate"])
def test_a_committed_report_is_what_its_results_give(tmp_path: Path, run: str) -> None:
    """docs/full_grid (the latest full grid), docs/rounding (what rounding costs) and
    docs/rate (what the rate term costs a training step): each
    report.md and its plots are what ``python -m bench.report docs/RUN/results.jsonl``
    writes: an edit by hand, or stale results, shows here."""
    from bench import report
    from bench.records import read

    report.write(read(DOCS / run / "results.jsonl"), tmp_path)
    assert (tmp_path / "report.md").read_text() == (DOCS / run / "report.md").read_text()
    written = sorted(path.name for path in tmp_path.glob("*.png"))
    assert written == sorted(path.name for path in (DOCS / run).glob("*.png"))
