"""The main job runs and reports every registered backend, compared or missing."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import frae
from frae.data import multi_sine, original_problem

pytestmark = pytest.mark.project


def test_multi_sine_is_bounded_smooth_and_seeded() -> None:
    x = multi_sine(batch=3, steps=50, features=4, seed=1)
    assert x.shape == (3, 50, 4)
    assert x.dtype == np.float32
    assert x.min() >= 0.0
    assert x.max() <= 1.0
    assert np.abs(np.diff(x, axis=1)).max() < 0.35  # periods of 10 steps and more
    np.testing.assert_array_equal(x, multi_sine(batch=3, steps=50, features=4, seed=1))
    assert not np.array_equal(x, multi_sine(batch=3, steps=50, features=4, seed=2))
    assert original_problem().shape == (1, 10, 2)


@pytest.mark.nested
def test_compare_prints_every_backend(tmp_path) -> None:
    """The parity part of the main job; its benchmark part is test_bench's harness test."""
    result = subprocess.run(
        [sys.executable, "-m", "frae", "compare", "--no-bench", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    for name in frae.available_backends():
        assert f"\n{name}" in result.stdout or f"  {name}: " in result.stdout, name
    rows = result.stdout.splitlines()
    reference_row = next(line for line in rows if line.startswith("reference"))
    assert reference_row.split()[1:6] == ["0.0e+00"] * 5
