"""``bench.report``: its sections in one order in both renderers, the terminal's in 100 columns."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import frae
from bench import report
from bench.grid import model_label
from bench.records import Listing, Point, Record, to_json
from bench.reporting import analysis, render
from bench.reporting.sections import Report, stream
from bench.reporting.sections.stream import STREAM_TARGETS
from bench.reporting.sections.summary import TARGETS_ORIGIN
from bench.reporting.sections.wide_layers import ROOFLINE_MODEL
from bench.reporting.verdicts import targets
from tests.bench_cases import (
    LONG_NAMES,
    STREAMS,
    WIDE,
    markdown,
    measured,
    on_models,
    peaked_run,
    quick_like_records,
    run_record,
    terminal,
    wide_run,
)


def records() -> list[Record]:
    listings = {
        "floor": Listing("numba_floor", "floor", "loops"),
        "fast": Listing("jax_scan", "compiled", "scan"),
    }
    return [
        run_record(listings, [Point("default", 1, 1000, ("predict",))]),
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
    assert capsys.readouterr().out.startswith("THE ANSWER")
    with pytest.raises(SystemExit):
        report.main([str(tmp_path / "missing.jsonl")])


def test_the_terminal_summary_fits_100_columns_and_says_its_shape() -> None:
    text = terminal(quick_like_records())
    assert max(len(line) for line in text.splitlines()) <= render.WIDTH
    assert text.startswith("THE ANSWER") and "\nB=1, T=1000:" in text
    assert "not enough points" in text  # two T: no split


def test_the_terminal_call_costs_and_flags_fit_100_columns() -> None:
    """A full grid's split (three T, one poor fit, one below resolution) and many flags."""
    records = quick_like_records()
    for index, name in enumerate(LONG_NAMES):
        for operation in ("predict", "loss_and_grads", "train_step"):
            us = 12.3456 * (index + 1) ** 2 * (1 + len(operation) / 10)
            records.append(measured(name, "compiled", operation, 1, 10_000, us, spread=0.8))
    text = terminal(records)
    assert "poor fit" in text and "readings to doubt" in text and "more" in text
    assert max(len(line) for line in text.splitlines()) <= render.WIDTH


def test_a_wide_models_section_fits_100_columns_too() -> None:
    label = model_label(WIDE)
    records = quick_like_records()
    records[0] = on_models({"default": frae.FRAEConfig(), label: WIDE})
    for index, name in enumerate(LONG_NAMES):
        for batch in (1, 256):
            for operation in ("predict", "train_step"):
                us = 123.456 * (index + 1) * batch
                records.append(measured(name, "compiled", operation, batch, 1000, us, model=label))
    text = terminal(records)
    assert f"model {label}:" in text and "train step B=256" in text
    assert max(len(line) for line in text.splitlines()) <= render.WIDTH


def test_the_markdown_report_says_where_targets_come_from_and_every_shape() -> None:
    text = markdown(quick_like_records())
    assert TARGETS_ORIGIN in text
    assert "## Summary at B=1, T=1000" in text
    assert "not enough points" in text and "## Cost per call and per step (B=1)" in text


def test_the_report_says_the_peaks_and_each_ratio_beside_the_floors() -> None:
    drawn = report.sections(wide_run())
    text, brief = render.markdown(drawn), render.terminal(drawn)
    assert "roofline peaks: 100.0 GFLOP/s" in text and "openblas 0.3.30, Haswell" in text
    assert "1000.0 GB/s" in text
    model = text[text.index(f"## Model {ROOFLINE_MODEL}") :]
    header = next(line for line in model.splitlines() if line.startswith("| variant"))
    assert header.count("×roof") == 2  # beside each figure at B=256, the shape measured
    assert "| 2×" in model and "| 6×" in model
    assert "Where the roofline's targets come from" in model
    assert "×roof " in brief and "missed by 1.33×" in brief


def test_the_terminals_wide_model_table_fits_100_columns_with_the_roofline() -> None:
    records = wide_run()
    for index, name in enumerate(["keras_defaults[tensorflow]", "torch_scan[defaults]"]):
        for batch in (1, 256):
            for operation in ("predict", "train_step"):
                us = 123.456 * (index + 1) * batch
                found = measured(name, "baseline", operation, batch, 1000, us)
                records.append(replace(found, model=ROOFLINE_MODEL))
    brief = render.terminal(report.sections(records))
    assert "×roof " in brief
    assert max(len(line) for line in brief.splitlines()) <= render.WIDTH


def test_a_run_without_peaks_shows_none_and_a_failed_measurement_says_why() -> None:
    text = render.markdown(report.sections(wide_run(peak=None)))  # a run from before it
    assert "roofline" not in text.lower()
    failed = replace(peaked_run(None), roofline={"error": "exited with 1: no BLAS"})
    text = render.markdown(report.sections([failed, *wide_run()[1:]]))
    assert "roofline peaks: not measured (exited with 1: no BLAS)" in text


def test_a_run_without_the_stream_reports_no_stream() -> None:
    """A run that measured no stream reports none, and judges the stream's targets not
    measured."""
    listing = Listing("reference", "baseline", "ref")
    run = run_record({"reference": listing}, [Point("default", 1, 1000, ("predict",))])
    records = [run, measured("reference", "baseline", "predict", 1, 1000, 40.0)]
    pivot = analysis.Pivot.of(records)
    assert stream.stream_rows(pivot) == [] and stream.sections(Report(records)) == []
    assert all(not outcome.judged for outcome in targets(pivot, STREAM_TARGETS))
    text = render.markdown(report.sections(records))
    assert "## Streaming" not in text and "Where the stream's targets come from" in text


def test_the_report_streams_in_a_section_of_its_own_and_judges_the_streams_targets() -> None:
    """The Streaming section and its split; the summary keeps its columns; the stream's
    targets are in the Targets section, where they come from with them."""
    drawn = report.sections([run_record(), *STREAMS])
    text, brief = render.markdown(drawn), render.terminal(drawn)
    assert "## Streaming" in text and "| fast      | compiled | 21 (17.5×)" in text
    assert text.index("## Targets") < text.index("## Streaming") < text.index("## Variants")
    assert "Where the stream's targets come from" in text
    assert "the best framework route streams a frame in ≤ 10 µs" in text
    (summary,) = [section for section in drawn if section.title.startswith("Summary")]
    assert all(len(row) == len(summary.header) for row in summary.rows)
    assert "stream, B=1: µs per frame" in brief and "sender 10" in brief
    assert max(len(line) for line in brief.splitlines()) <= render.WIDTH
