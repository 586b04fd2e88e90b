"""The benchmark as a user runs it on a port outside the repository: the quick benchmark twice
at width 64 from ``--config``, then ``frae diff`` of the two runs and its exit status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.records import ResultRecord, RunRecord, read
from tests.processes import ROOT, python

# the module's runs of the benchmark are fixtures: its tests share a worker, which runs them once
pytestmark = [pytest.mark.nested, pytest.mark.xdist_group("bench_tool")]
pytest.importorskip("flax", reason="the example port needs jax: pip install 'frae[jax]'")

PORT = "my_port:PlainJaxFRAE"
WIDTH_64 = {"encoder_units": [64], "latent_dim": 16, "decoder_units": [64]}
LABEL = "2-64-16-64-2"


def frae_command(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return python("-m", "frae", *arguments, cwd=cwd, env=env, check=False)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The quick benchmark of the out-of-tree port at width 64, twice; what the first printed."""
    home = tmp_path_factory.mktemp("my_port")
    shutil.copy(ROOT / "examples" / "plain_jax.py", home / "my_port.py")
    (home / "wide.json").write_text(json.dumps(WIDTH_64))
    printed = []
    for name in ("before", "after"):
        done = frae_command(
            "bench",
            "--quick",
            "--variants",
            PORT,
            "--config",
            "wide.json",
            "--out",
            name,
            "--no-progress",
            cwd=home,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        printed.append(done.stdout)
    return home / "before", home / "after", printed[0]


def test_the_quick_benchmark_measures_a_port_from_outside_on_its_config(
    two_runs: tuple[Path, Path, str],
) -> None:
    before, _, printed = two_runs
    records = read(before / "results.jsonl")
    run = records[0]
    assert isinstance(run, RunRecord)
    assert run.models == {LABEL: {**json.loads(json.dumps(run.models[LABEL])), **WIDTH_64}}
    timed = [r for r in records if isinstance(r, ResultRecord) and r.median_s is not None]
    assert {(r.variant, r.model) for r in timed} == {(PORT, LABEL)}
    assert {r.operation for r in timed} == {"predict", "loss_and_grads", "train_step", "stream"}
    assert printed.startswith(f"B=1, T=1000, model {LABEL}:")
    assert any(line.startswith(PORT) for line in printed.splitlines())
    assert max(len(line) for line in printed.splitlines()) <= 100


def test_frae_diff_compares_the_two_runs_and_gates_on_a_threshold(
    two_runs: tuple[Path, Path, str],
) -> None:
    before, after, _ = two_runs
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
