"""``bench.measuring.runner``: a measurement of the roofline's peaks that fails is recorded with
why."""

from __future__ import annotations

import os
from pathlib import Path

from bench import roofline
from bench.measuring.runner import measure_roofline


def test_a_failed_measurement_is_recorded_with_why(tmp_path: Path) -> None:
    """More threads than CPUs: the process refuses, and the run records why."""
    found = measure_roofline((os.cpu_count() or 1) + 64, tmp_path)
    assert found.keys() == {"error"} and "asked for" in found["error"], found
    assert roofline.Peak.from_dict(found) is None
