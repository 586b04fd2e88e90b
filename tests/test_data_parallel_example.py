"""``examples/data_parallel.py``, the one-process data-parallel command of docs/data_parallel.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_example_launcher_trains_on_two_devices() -> None:
    """docs/data_parallel.md's one-process command: ``examples/data_parallel.py`` on two virtual
    CPU devices."""
    pytest.importorskip("jax")
    command = [sys.executable, "-m", "examples.data_parallel", "--backend", "jax_scan"]
    command += ["--devices", "2", "--cpu-devices", "2", "--epochs", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "jax_scan on 2 devices: loss" in done.stdout
