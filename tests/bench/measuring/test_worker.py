"""``bench.measuring.worker``: its answers to the runner's commands, and its own peak
memory."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

from bench.measuring.job import Job, Settings
from bench.measuring.point import Bench, Unit
from bench.measuring.worker import serve
from bench.records import Point
from tests.processes import python


def test_the_worker_answers_each_command_in_turn_and_alone() -> None:
    """In turn: ``ready`` with the steps a call makes and the rule, a ``sample`` of one run's
    seconds each, the record at ``stop``; alone: the record at once; ``idle`` after each."""
    settings = Settings(repeats=3, min_time_s=0.0, budget_s=0.0, max_samples=3)
    unit = Unit(Point("default", 1, 20, ("predict",)), "predict").to_json()
    commands = [{"unit": unit, "alone": False}, "sample", "sample", "stop"]
    commands.append({"unit": unit, "alone": True})
    said: list[str] = []
    lines = io.StringIO("".join(json.dumps(command) + "\n" for command in commands))
    serve(Bench(Job("reference", "reference", settings)), lines, said.append)
    answers = [json.loads(line) for line in said]
    kinds = ["idle", "ready", "sample", "sample", "result", "idle", "result", "idle"]
    assert [answer["kind"] for answer in answers] == kinds
    assert answers[1] == {"kind": "ready", "per_call": 1, "rule": [3, 0.0, 0.0, 3]}
    assert all(len(answer["seconds"]) == 1 for answer in answers[2:4])
    assert [answers[4]["samples"], answers[6]["samples"]] == [2, 3]


@pytest.mark.skipif(sys.platform != "linux", reason="the carried-over peak is Linux's")
def test_a_workers_peak_memory_is_its_own() -> None:
    """Linux carries a parent's ``ru_maxrss`` into its child; the worker reports its own."""
    ballast = np.ones(2**25)  # 256 MiB resident in this process
    probe = "from bench.measuring.timing import peak_rss_mb; print(peak_rss_mb())"
    assert float(python("-c", probe, timeout=60).stdout) < ballast.nbytes / 2**20 / 2
