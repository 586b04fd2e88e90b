"""The worker's own facts: its peak memory is its own process's."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.processes import python


@pytest.mark.skipif(sys.platform != "linux", reason="the carried-over peak is Linux's")
def test_a_workers_peak_memory_is_its_own() -> None:
    """Linux carries a parent's ``ru_maxrss`` into its child; the worker reports its own."""
    ballast = np.ones(2**25)  # 256 MiB resident in this process
    probe = "from bench.worker import peak_rss_mb; print(peak_rss_mb())"
    assert float(python("-c", probe, timeout=60).stdout) < ballast.nbytes / 2**20 / 2
