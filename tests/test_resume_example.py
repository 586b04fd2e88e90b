"""``examples/resume_across_frameworks.py``: one loss curve across two backends, equal to the
second backend's uninterrupted run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.processes import python


@pytest.mark.slow
def test_the_example_continues_one_curve_on_another_backend(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    command = ["-m", "examples.resume_across_frameworks"]
    command += ["--first", "reference", "--then", "jax_scan", "--first-epochs", "2"]
    command += ["--epochs", "4", "--checkpoint", str(tmp_path / "c.safetensors")]
    done = python(*command, timeout=300)
    rows = [line.split() for line in done.stdout.splitlines() if re.match(r"\s+\d+\s", line)]
    assert [int(row[0]) for row in rows] == list(range(1, 17))  # 4 mini-batches, 4 epochs
    assert {row[1] for row in rows[:8]} == {"reference"}
    assert {row[1] for row in rows[8:]} == {"jax_scan"}
    assert "checkpoint after step 8, epoch 2" in done.stdout
    gap = float(done.stdout.rsplit(":", 1)[1])
    assert gap < 1e-4, done.stdout
