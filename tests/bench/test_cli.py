"""``bench.cli``: a bad argument named; the benchmark end to end, on a port from outside too."""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import bench.cli
from bench.cli import benchmark, main
from bench.records import (
    EndRecord,
    ParityRecord,
    Point,
    Record,
    ResultRecord,
    RunRecord,
    VariantRecord,
    read,
    to_json,
)
from frae.config import FRAEConfig
from tests.bench_cases import STATE_LABEL, measured, run_record
from tests.processes import ROOT, python

BAD_ARGUMENTS = {
    "steps-zero": (["--steps", "0"], "--steps"),
    "batch-negative": (["--batch", "-1"], "--batch"),
    "repeats-zero": (["--repeats", "0"], "--repeats"),
    "train-steps-few": (["--train-steps", "2"], "--train-steps"),
    "config-not-json": (["--config", "{latent: 16}"], "--config"),
    "config-no-file": (["--config", "no_such_file.json"], "--config"),
    "config-bad-field": (["--config", '{"latent_dim": 0}'], "latent_dim"),
    "config-unknown-field": (["--config", '{"width": 64}'], "width"),
    "variant-unknown": (["--variants", "no_such_variant"], "no_such_variant"),
    "port-not-importable": (["--variants", "no_such_module:Port"], "no_such_module"),
    "rate-weight-unquantized": (["--rate-weight", "0.01"], "--rate-weight"),
    "rate-weight-negative": (["--code-step", "0.25", "--rate-weight", "-1"], "--rate-weight"),
    "rate-weight-not-finite": (["--code-step", "0.25", "--rate-weight", "inf"], "--rate-weight"),
    "rate-weight-nothing-trains": (
        ["--code-step", "0.25", "--rate-weight", "0.1", "--operations", "predict"],
        "--rate-weight",
    ),
}


@pytest.mark.parametrize(("argv", "named"), BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS)
def test_bad_arguments_exit_2_naming_the_argument(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit status 2 before anything runs, the message naming what is wrong (once: exit 0
    with a report of failed cells)."""
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--out", str(tmp_path / "report"), "--no-progress"])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"frae {importlib.metadata.version('frae')}"


def test_every_option_has_help_that_matches(capsys: pytest.CaptureFixture[str]) -> None:
    """Each option of ``frae bench --help`` says what it does (``--no-progress`` did not);
    --quick names the grid it runs."""
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    text = capsys.readouterr().out
    blocks = re.split(r"\n(?=  -)", text[text.index("options:") :])[1:]
    described = {}
    for block in blocks:
        invocation, _, rest = block.strip().partition("  ")  # argparse: two spaces, or a line
        invocation, _, below = invocation.partition("\n")
        described[invocation.split()[0].rstrip(",")] = " ".join((rest + below).split())
    assert "--no-progress" in described and "--config" in described
    assert {option for option, words in described.items() if not words} == set()
    assert "predict at B=1, T=100" in described["--quick"]


def test_the_parity_records_go_after_the_run_s_line_and_into_the_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``benchmark(parity=...)`` (``frae compare``'s): the results file the runner wrote, with
    the parity lines after the run's, as ``read`` gives it to ``python -m bench.report``, and
    the same records, in the same order, to the report it writes."""
    ran = [
        run_record(),
        measured("reference", "reference", "predict", 1, 20, us_per_step=50.0),
        EndRecord(1.0),
    ]
    parity = [
        ParityRecord("tf_while", passed=True, worst="adam", used=0.05, held_to="float32"),
        ParityRecord("keras_rnn[torch]", reason="needs torch: not installed"),
    ]

    def run(*arguments: object) -> list[Record]:  # as the runner writes its file
        (tmp_path / "results.jsonl").write_text("".join(to_json(r) + "\n" for r in ran))
        return list(ran)

    reported: list[Record] = []
    monkeypatch.setattr(bench.cli, "run", run)
    monkeypatch.setattr("bench.report.write", lambda records, *_: reported.extend(records) or "")
    records, _ = benchmark(quick=True, out=tmp_path, variants=["reference"], parity=parity)
    expected = [ran[0], *parity, *ran[1:]]
    assert records == reported == read(tmp_path / "results.jsonl") == expected
    benchmark(quick=True, out=tmp_path, variants=["reference"])  # no parity: the file as run
    assert read(tmp_path / "results.jsonl") == ran


def test_the_rate_weight_adds_the_rated_model_to_the_grid_the_runner_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``benchmark(code_step=..., rate_weight=...)``: the quantized model and the same trained
    for its rate, each by its config, at the training operations the grid has at B=1, T=1000."""
    given: list[tuple[list[Point], dict[str, FRAEConfig]]] = []

    def run(
        variants: object,
        grid: list[Point],
        settings: object,
        out: Path,
        progress: bool,
        models: dict[str, FRAEConfig],
    ) -> list[Record]:
        given.append((grid, models))
        return [run_record()]

    monkeypatch.setattr(bench.cli, "run", run)
    monkeypatch.setattr("bench.report.write", lambda *_: "")
    shape = {"batches": [1], "steps": [1000], "operations": ["train_step"]}
    benchmark(quick=True, out=tmp_path, code_step=0.25, rate_weight=0.5, **shape)
    ((grid, models),) = given
    assert grid == [
        Point("default", 1, 1000, ("train_step",)),
        Point("default Δ=2^-2", 1, 1000, ("train_step",)),
        Point("default Δ=2^-2 λ=0.5", 1, 1000, ("train_step",)),
    ]
    assert models["default Δ=2^-2 λ=0.5"] == FRAEConfig(code_step=0.25, rate_weight=0.5)


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


# the runs of the benchmark are module fixtures: the tests of one share a worker, which runs it once
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The command line, as one would measure a few backends at one shape: the report
    folder and what it printed."""
    pytest.importorskip("numba", reason="the floor needs numba: pip install 'frae[bench]'")
    out = tmp_path_factory.mktemp("bench")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        main(
            [
                *("--quick", "--variants", "numba_floor", "reference", "torch_eager"),
                *("--batch", "1", "--steps", "20", "40", "--operations", *TINY_OPERATIONS),
                *("--out", str(out), "--no-progress"),
            ]
        )
    return out, printed.getvalue()


@pytest.mark.xdist_group("bench_run")
@pytest.mark.slow
def test_the_harness_writes_json_lines_markdown_and_plots(tiny_run: tuple[Path, str]) -> None:
    out, summary = tiny_run
    check_report(out, ["numba_floor", "reference"], TINY_OPERATIONS)
    table = summary[summary.index("\nB=1, T=") :]  # the summary, after the answer
    reference = next(line for line in table.splitlines() if line.startswith("reference"))
    assert "×)" in reference  # every figure carries its ratio to the floor
    found = read(out / "results.jsonl")
    assert not [r for r in found if isinstance(r, ResultRecord) and r.operation == "loss_and_grads"]
    torch = [r for r in found if isinstance(r, VariantRecord) and r.variant == "torch_eager"]
    assert torch and (torch[0].skipped or torch[0].import_s is not None)


@pytest.mark.xdist_group("bench_run")
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
    copy = tmp_path / "copy"
    shutil.copytree(tiny_run[0], copy)
    damage(copy)
    with pytest.raises((AssertionError, ValueError, OSError, SyntaxError)):
        check_report(copy, ["numba_floor", "reference"], ("predict",))


@pytest.fixture(scope="module")
def state_feedback_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The command line on the state-feedback model: the floor, the C check and a
    hand-written backward (both left out), predict and a training step at B=1, T=20."""
    pytest.importorskip("numba", reason="the floor needs numba: pip install 'frae[bench]'")
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


@pytest.mark.xdist_group("bench_run")
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


PORT = "my_port:PlainJaxFRAE"
WIDTH_64 = {"encoder_units": [64], "latent_dim": 16, "decoder_units": [64]}
LABEL = "2-64-16-64-2"


def frae_command(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return python("-m", "frae", *arguments, cwd=cwd, env=env, check=False)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The quick benchmark of the out-of-tree port at width 64, twice; what the first printed."""
    pytest.importorskip("flax", reason="the example port needs jax: pip install 'frae[jax]'")
    home = tmp_path_factory.mktemp("my_port")
    shutil.copy(ROOT / "examples" / "plain_jax.py", home / "my_port.py")
    (home / "wide.json").write_text(json.dumps(WIDTH_64))
    printed = []
    for name in ("before", "after"):
        options = ("--variants", PORT, "--config", "wide.json", "--out", name, "--no-progress")
        done = frae_command("bench", "--quick", *options, cwd=home)
        assert done.returncode == 0, done.stderr[-3000:]
        printed.append(done.stdout)
    return home / "before", home / "after", printed[0]


@pytest.mark.nested
@pytest.mark.xdist_group("bench_tool")
def test_a_port_from_outside_is_measured_on_its_config_and_frae_diff_gates_its_two_runs(
    two_runs: tuple[Path, Path, str],
) -> None:
    before, after, printed = two_runs
    records = read(before / "results.jsonl")
    run = records[0]
    assert isinstance(run, RunRecord)
    assert run.models == {LABEL: {**json.loads(json.dumps(run.models[LABEL])), **WIDTH_64}}
    timed = [r for r in records if isinstance(r, ResultRecord) and r.median_s is not None]
    assert {(r.variant, r.model) for r in timed} == {(PORT, LABEL)}
    assert {r.operation for r in timed} == {"predict", "loss_and_grads", "train_step", "stream"}
    assert printed.startswith("THE ANSWER") and f"\nB=1, T=1000, model {LABEL}:" in printed
    assert any(line.startswith(PORT) for line in printed.splitlines())
    assert max(len(line) for line in printed.splitlines()) <= 100
    lenient = frae_command("diff", str(before), str(after), "--fail-slower", "100", cwd=ROOT)
    assert lenient.returncode == 0, lenient.stderr
    assert PORT in lenient.stdout and LABEL in lenient.stdout
    assert "unmatched" in lenient.stdout.splitlines()[-1]
    # the same run against itself: every measurement within noise, whatever the threshold
    same = frae_command("diff", str(before), str(before), "--fail-slower", "1.01", cwd=ROOT)
    assert same.returncode == 0, same.stdout
    assert "slower" not in same.stdout.splitlines()[-1].replace("0 slower", "")
    broken = frae_command("diff", str(before), str(after / "nothing"), cwd=ROOT)
    assert broken.returncode == 2 and "nothing" in broken.stderr
