"""The benchmark run end to end from its command line: JSON lines, report and plots on a tiny
grid, damaged output rejected, the state model's unrunnable variants left out with why."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.records import ResultRecord, RunRecord, VariantRecord, read
from tests.bench_cases import STATE_LABEL

numba = pytest.importorskip("numba", reason="the floor needs numba: pip install 'frae[bench]'")

# the module's runs of the benchmark are fixtures: its tests share a worker, which runs them once
pytestmark = pytest.mark.xdist_group("bench_run")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REPORT_SECTIONS = ("## Summary", "## Targets", "## Every measurement", "## Plots")
TINY_OPERATIONS = ("predict", "train_step")


def check_report(out: Path, variants: list[str], operations: tuple[str, ...]) -> None:
    """``out`` holds JSON lines with the run's facts and every (variant, operation) timed,
    a Markdown report with its sections and the plots it links, each a decodable PNG."""
    import matplotlib.image

    found = read(out / "results.jsonl")
    run = found[0]
    assert isinstance(run, RunRecord)
    assert run.machine.platform and run.machine.cpu_count and run.machine.python
    assert {"numpy", "numba"} <= run.machine.versions.keys()
    for variant in variants:
        facts = [r for r in found if isinstance(r, VariantRecord) and r.variant == variant]
        assert facts and facts[0].import_s is not None and facts[0].threads is not None, variant
        # one thread by default: pinned to one CPU, every pool the worker reads back at one
        assert len(facts[0].threads["cpus"]) == 1, facts[0].threads
        assert facts[0].threads.get("torch_threads", 1) == 1, facts[0].threads
        for operation in operations:
            rows = [
                r
                for r in found
                if isinstance(r, ResultRecord) and (r.variant, r.operation) == (variant, operation)
            ]
            assert rows, (variant, operation)
            for row in rows:
                assert row.q1_s is not None and row.median_s is not None and row.q3_s is not None
                assert row.q1_s <= row.median_s <= row.q3_s, row
                assert row.median_s > 0 and row.first_call_s and row.peak_rss_mb, row
                # every timed call kept, and no more than the one core at work
                assert row.calls_s is not None and len(row.calls_s) == row.samples, row
                assert row.threads == 1 and row.cores_busy is not None, row
                assert row.cores_busy < 1.1, row
    text = (out / "report.md").read_text()
    for section in REPORT_SECTIONS:
        assert section in text, section
    images = [line.split("(")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    # one B: no throughput against B to draw
    assert images == ["step_time_vs_T.png", "first_call.png"]
    for image in images:
        assert (out / image).read_bytes().startswith(PNG_SIGNATURE), image
        assert matplotlib.image.imread(out / image).ndim == 3, image


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The command line, as one would measure a few backends at one shape: the report
    folder and what it printed."""
    import contextlib
    import io

    from bench.cli import main

    out = tmp_path_factory.mktemp("bench")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        main(
            [
                "--quick",
                "--variants",
                "numba_floor",
                "reference",
                "torch_eager",
                "--batch",
                "1",
                "--steps",
                "20",
                "40",
                "--operations",
                *TINY_OPERATIONS,
                "--out",
                str(out),
                "--no-progress",
            ]
        )
    return out, printed.getvalue()


@pytest.mark.slow
def test_the_harness_writes_json_lines_markdown_and_plots(tiny_run: tuple[Path, str]) -> None:
    out, summary = tiny_run
    check_report(out, ["numba_floor", "reference"], TINY_OPERATIONS)
    reference = next(line for line in summary.splitlines() if line.startswith("reference"))
    assert "×)" in reference  # every figure carries its ratio to the floor
    found = read(out / "results.jsonl")
    assert not [r for r in found if isinstance(r, ResultRecord) and r.operation == "loss_and_grads"]
    torch = [r for r in found if isinstance(r, VariantRecord) and r.variant == "torch_eager"]
    assert torch and (torch[0].skipped or torch[0].import_s is not None)


@pytest.mark.slow  # the benchmark's run it damages (``tiny_run``)
@pytest.mark.parametrize(
    "damage",
    [
        lambda out: (out / "first_call.png").write_bytes(b"not a png"),
        lambda out: (out / "results.jsonl").write_text("{not json\n"),
        lambda out: (out / "report.md").write_text(
            (out / "report.md").read_text().replace("## Targets", "## Goals")
        ),
    ],
    ids=["png", "json", "markdown"],
)
def test_the_report_check_rejects_damaged_output(
    tiny_run: tuple[Path, str], tmp_path: Path, damage: Callable[[Path], object]
) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tiny_run[0], copy)
    damage(copy)
    with pytest.raises((AssertionError, ValueError, OSError, SyntaxError)):
        check_report(copy, ["numba_floor", "reference"], ("predict",))


@pytest.fixture(scope="module")
def state_feedback_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The command line on the state-feedback model: the floor, the C check and a
    hand-written backward (both left out), predict and a training step at B=1, T=20."""
    import contextlib
    import io

    from bench.cli import main

    out = tmp_path_factory.mktemp("bench-state")
    with contextlib.redirect_stdout(io.StringIO()):
        main(
            [
                *("--variants", "numba_floor", "c_forward", "jax_scan_bptt"),
                *("--config", json.dumps({"feedback": "state", "state_dim": 8})),
                *("--batch", "1", "--steps", "20", "--operations", *TINY_OPERATIONS),
                *("--out", str(out), "--no-progress"),
            ]
        )
    return out


@pytest.mark.slow
def test_the_harness_runs_the_state_feedback_model_and_reports_what_it_left_out(
    state_feedback_run: Path,
) -> None:
    found = read(state_feedback_run / "results.jsonl")
    run = found[0]
    assert isinstance(run, RunRecord) and list(run.models) == [STATE_LABEL]
    timed = [r for r in found if isinstance(r, ResultRecord) and r.median_s is not None]
    assert {(r.variant, r.model, r.operation) for r in timed} == {
        ("numba_floor", STATE_LABEL, operation) for operation in TINY_OPERATIONS
    }
    skipped = {r.variant: r.skipped for r in found if isinstance(r, VariantRecord) and r.skipped}
    assert skipped.keys() == {"c_forward", "jax_scan_bptt"}
    text = (state_feedback_run / "report.md").read_text()
    assert f"## Summary at B=1, T=20, model {STATE_LABEL}" in text
    for name, reason in skipped.items():
        assert f"`{name}`" in text and reason and reason in text
    assert "Where the state-feedback model's targets come from" in text
