"""``examples/data_parallel.py``, the one-process data-parallel command of docs/data_parallel.md."""

from __future__ import annotations

import pytest

from tests.processes import python


def test_example_launcher_trains_on_two_devices() -> None:
    """docs/data_parallel.md's one-process command: ``examples/data_parallel.py`` on two virtual
    CPU devices."""
    pytest.importorskip("jax")
    command = ["-m", "examples.data_parallel", "--backend", "jax_scan", "--devices", "2"]
    done = python(*command, "--cpu-devices", "2", "--epochs", "1", timeout=300)
    assert "jax_scan on 2 devices: loss" in done.stdout
