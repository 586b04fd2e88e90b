"""``bench.comparing.diff``: ``frae diff``'s exit status, what is unmatched and why, argument
errors."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.comparing import change, diff
from bench.records import Record, ResultRecord, read, to_json
from frae.cli import main as frae_main
from tests.bench_cases import FORMAT_1, MACHINE, STREAMS, kept_calls, run_record

VERSIONS = {"numpy": "2.5.5", "jax": "0.12.0", "torch": "2.14.1"}
Spread = tuple[float, float, float]
"""(q1, median, q3) in µs per call."""


def result(
    spread: Spread | None,
    variant: str = "jax_scan",
    operation: str = "predict",
    batch: int = 3,
    steps: int = 100,
    calls: int = 51,
    **fields: Any,
) -> ResultRecord:
    """A measurement timed with ``spread`` (µs per call), its ``calls`` kept calls spread
    evenly between its quartiles and as far again beyond them; not timed when it is None."""
    if spread is None:
        return ResultRecord(variant, operation, batch, steps, **fields)
    q1, median, q3 = (value * 1e-6 for value in spread)
    knots = [2 * q1 - median, q1, median, q3, 2 * q3 - median]
    kept = np.interp(np.linspace(0, 1, calls), np.linspace(0, 1, 5), knots).tolist()
    return kept_calls(kept, variant, operation, batch, steps, **fields)


def write_run(
    folder: Path, results: list[ResultRecord], versions: dict[str, str] = VERSIONS, **machine: Any
) -> Path:
    """A ``results.jsonl`` in ``folder``: the run's record, then ``results``."""
    facts = {"processor": "Xeon", "cpu_count": 4, "python": "3.13.0", "versions": versions}
    run = run_record(machine=replace(MACHINE, **(facts | machine)))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.jsonl"
    path.write_text("".join(to_json(r) + "\n" for r in [run, *results]))
    return path


def run_main(
    tmp_path: Path, old: list[ResultRecord], new: list[ResultRecord], *options: str
) -> int:
    """``bench.comparing.diff.main``'s exit status on two runs written in ``tmp_path``."""
    old_path = write_run(tmp_path / "old", old)
    new_path = write_run(tmp_path / "new", new)
    return diff.main([str(old_path), str(new_path), *options])


@pytest.mark.parametrize(("threshold", "status"), [(None, 0), ("1.5", 1), ("1.95", 1), ("2.5", 0)])
def test_fail_slower_sets_the_exit_status_from_a_slowdowns_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], threshold: str | None, status: int
) -> None:
    slowdown = ([result((98, 100, 103))], [result((196, 200, 206))])
    options = [] if threshold is None else ["--fail-slower", threshold]
    assert run_main(tmp_path, *slowdown, *options) == status
    out = capsys.readouterr().out
    assert "2.00×" in out
    assert "0 faster, 1 slower, 0 within noise, 0 with too few calls to tell, 0 unmatched" in out


def test_fail_slower_ignores_a_large_ratio_too_few_calls_can_tell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four calls against four wholly apart cannot reach p < 0.002 (``bench.comparing.change``)."""
    few = ([result((98, 100, 103), calls=4)], [result((196, 200, 206), calls=4)])
    assert run_main(tmp_path, *few, "--fail-slower", "1.1") == 0
    assert "0 slower, 0 within noise, 1 with too few calls to tell" in capsys.readouterr().out


def test_a_speedup_passes_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    speedup = ([result((196, 200, 206))], [result((98, 100, 103))])
    assert run_main(tmp_path, *speedup, "--fail-slower", "1.01") == 0
    out = capsys.readouterr().out
    assert "1 faster, 0 slower, 0 within noise, 0 with too few calls to tell, 0 unmatched" in out


def test_unmatched_measurements_are_listed_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = [
        result((98, 100, 103)),
        result((98, 100, 103), operation="loss_and_grads"),
        result((98, 100, 103), operation="train_step"),
        result(None, variant="torch_scan", error="RuntimeError: out of memory"),
        result(None, variant="c_forward", unsupported="no C compiler"),
    ]
    new = [
        result((98, 100, 103)),
        result(None, operation="loss_and_grads", error="XlaRuntimeError: INTERNAL"),
        result((98, 100, 103), steps=1000),
        result((98, 100, 103), variant="torch_scan"),
        result(None, variant="c_forward", unsupported="no C compiler"),
    ]
    before = diff.load(write_run(tmp_path / "old", old), "OLD")
    after = diff.load(write_run(tmp_path / "new", new), "NEW")
    comparisons = diff.compare(before, after)
    verdicts = {(c.key.variant, c.key.operation, c.key.steps): c.verdict for c in comparisons}
    assert verdicts == {
        ("jax_scan", "predict", 100): diff.NOISE,
        ("jax_scan", "loss_and_grads", 100): diff.FAILED_NEW,
        ("jax_scan", "train_step", 100): diff.ONLY_OLD,
        ("torch_scan", "predict", 100): diff.FAILED_OLD,
        ("c_forward", "predict", 100): diff.FAILED_BOTH,
        ("jax_scan", "predict", 1000): diff.ONLY_NEW,
    }
    assert run_main(tmp_path / "main", old, new, "--fail-slower", "1.1") == 0
    out = capsys.readouterr().out
    assert "jax_scan loss_and_grads B=3 T=100, new: error: XlaRuntimeError: INTERNAL" in out
    assert "torch_scan predict B=3 T=100, old: error: RuntimeError: out of memory" in out
    assert "c_forward predict B=3 T=100, old: unsupported: no C compiler" in out
    assert "c_forward predict B=3 T=100, new: unsupported: no C compiler" in out
    assert "0 faster, 0 slower, 1 within noise, 0 with too few calls to tell, 5 unmatched" in out


def test_differing_versions_and_machine_facts_are_printed_and_the_same_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_path = write_run(tmp_path / "old", [result((98, 100, 103))])
    new_versions = {k: v for k, v in VERSIONS.items() if k != "torch"} | {"jax": "0.13.0"}
    new_path = write_run(tmp_path / "new", [result((98, 100, 103))], new_versions, cpu_count=8)
    assert diff.main([str(old_path), str(new_path)]) == 0
    rows = {tuple(line.split()) for line in capsys.readouterr().out.splitlines()}
    assert ("jax", "0.12.0", "0.13.0") in rows
    assert ("torch", "2.14.1", "—") in rows
    assert ("cpu_count", "4", "8") in rows
    assert not any(row[:1] in {("numpy",), ("python",), ("processor",)} for row in rows)
    assert run_main(tmp_path / "same", [result((98, 100, 103))], [result((98, 100, 103))]) == 0
    out = capsys.readouterr().out
    assert "the same machine, library versions, settings, grid and threads" in out


def test_the_terminal_output_fits_100_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variants = ["keras_defaults[tensorflow]", "my_baselines.fused_kernel:FusedBackend", "jax"]
    old = [
        result((9e5, 1e6, 1.1e6), variant=v, operation=op, batch=256, steps=10000, model=m)
        for v in variants
        for op in ("predict", "loss_and_grads", "train_step")
        for m in ("default", "3-5-2-4-6-3 tanh/sigmoid")
    ]
    failure = "RuntimeError: " + "a long trace " * 20
    new = [
        replace(r, median_s=None, q1_s=None, q3_s=None, error=failure)
        if r.operation == "train_step"
        else r
        for r in old
    ]
    long_cpu = "Intel(R) Xeon(R) Platinum 8480C CPU @ 2.00GHz with a long model name"
    old_path = write_run(tmp_path / "old", old, processor=long_cpu)
    new_path = write_run(tmp_path / "new", new, processor=long_cpu.replace("8480C", "8592+"))
    assert diff.main([str(old_path), str(new_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "model 3-5-2-4-6-3 tanh/sigmoid:" in lines
    assert max(len(line) for line in lines) <= diff.WIDTH, max(lines, key=len)


def test_markdown_prints_github_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run_main(tmp_path, [result((98, 100, 103))], [result((196, 200, 206))], "--markdown") == 0
    )
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("| variant"))
    assert lines[lines.index(header) + 1].startswith("|---")
    assert any(line.startswith("| jax_scan") and "slower" in line for line in lines)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["missing", "new"], "OLD"),
        (["old", "missing"], "NEW"),
        (["empty_folder", "new"], "OLD"),
        (["not_results", "new"], "OLD"),
        (["json_list", "new"], "OLD"),
        (["old", "no_run_record"], "NEW"),
        (["old", "new", "--fail-slower", "0.5"], "--fail-slower"),
        (["old", "new", "--fail-slower", "1"], "--fail-slower"),
        (["old", "new", "--fail-slower", "nan"], "--fail-slower"),
        (["old", "new", "--min-margin", "-0.1"], "--min-margin"),
    ],
)
def test_bad_arguments_exit_with_status_2_naming_the_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], named: str
) -> None:
    files = {
        "old": write_run(tmp_path / "old", [result((98, 100, 103))]),
        "new": write_run(tmp_path / "new", [result((98, 100, 103))]),
        "missing": tmp_path / "missing",
        "empty_folder": tmp_path / "empty_folder",
        "not_results": tmp_path / "report.md",
        "no_run_record": tmp_path / "no_run_record.jsonl",
        "json_list": tmp_path / "list.jsonl",
    }
    files["empty_folder"].mkdir()
    files["not_results"].write_text("# a Markdown report\n")
    files["json_list"].write_text("[1, 2]\n")
    files["no_run_record"].write_text(to_json(result((98, 100, 103))) + "\n")
    with pytest.raises(SystemExit) as stopped:
        diff.main([str(files.get(a, a)) for a in arguments])
    assert stopped.value.code == 2
    assert f"error: {named} must be" in capsys.readouterr().err.splitlines()[-1]


def test_frae_diff_runs_through_the_frae_command_on_report_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A report folder reads as its results file."""
    old_path = write_run(tmp_path / "old", [result((98, 100, 103))]).parent
    new_path = write_run(tmp_path / "new", [result((196, 200, 206))]).parent
    for threshold, status in [("1.5", 1), ("2.5", 0)]:
        with pytest.raises(SystemExit) as stopped:
            frae_main(["diff", str(old_path), str(new_path), "--fail-slower", threshold])
        assert stopped.value.code == status
    assert "1 slower" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stopped:
        frae_main(["diff", str(old_path)])
    assert stopped.value.code == 2
    assert "usage: frae diff" in capsys.readouterr().err


def test_frae_help_lists_diff(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        frae_main(["--help"])
    assert stopped.value.code == 0
    assert "compare two benchmark runs" in capsys.readouterr().out


def test_frae_diff_refuses_a_file_of_format_1_naming_the_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "results.jsonl"
    old.write_text("\n".join(FORMAT_1) + "\n")
    with pytest.raises(SystemExit) as stopped:
        diff.main([str(old), str(old)])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert "OLD must be a benchmark's results.jsonl" in error and "got 1: format 1" in error


def test_a_diff_pairs_streams_by_side_and_chunk_length() -> None:
    assert len({r.key for r in STREAMS}) == len(STREAMS)
    run = run_record()
    old, new = diff.Run(run, {r.key: r for r in STREAMS}), diff.Run(run, {})
    text = diff.render(old, new, diff.compare(old, new), markdown=True)
    assert "| stream sender, chunk 10 " in text


def slowed(record: Record, factor: float) -> Record:
    """``record`` as a port ``factor`` times slower would have measured it: every kept call
    that much longer, its median and quartiles with them."""
    if not isinstance(record, ResultRecord) or record.calls_s is None:
        return record
    calls = [c * factor for c in record.calls_s]
    per_step = np.asarray(calls) / (record.steps_per_sample or 1)
    q1, median, q3 = np.percentile(per_step, [25, 50, 75])
    return replace(record, calls_s=calls, median_s=median, q1_s=q1, q3_s=q3)


@pytest.mark.slow
@pytest.mark.xdist_group("bench_run")  # beside the other benchmark runs: one pinned at a time
def test_fail_slower_fails_a_port_made_one_and_a_half_times_slower(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quick run, and the same run's calls made 1.5× longer: ``--fail-slower 1.2`` exits 1
    on it, 0 on the run itself. Scaled, not rerun: two processes can differ by 1.5–2× here."""
    from bench.cli import main

    port = "impls.reference:ReferenceBackend"
    args = ["--quick", "--variants", port, "--batch", "1", "--steps", "20", "--repeats", "40"]
    main([*args, "--no-progress", "--operations", "predict", "--out", str(tmp_path / "before")])
    capsys.readouterr()
    records = read(tmp_path / "before" / "results.jsonl")
    (tmp_path / "after").mkdir()
    lines = "".join(to_json(slowed(r, 1.5)) + "\n" for r in records)
    (tmp_path / "after" / "results.jsonl").write_text(lines)
    before, after = str(tmp_path / "before"), str(tmp_path / "after")
    comparisons = diff.compare(diff.load(Path(before), "OLD"), diff.load(Path(after), "NEW"))
    assert [c.verdict for c in comparisons] == [change.SLOWER], comparisons
    assert all(c.ratio == pytest.approx(1.5) for c in comparisons), comparisons
    assert diff.main([before, after, "--fail-slower", "1.2"]) == 1
    assert diff.main([before, before, "--fail-slower", "1.2"]) == 0
