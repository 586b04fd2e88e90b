"""``bench.measuring.threads``: a worker pinned to N CPUs, its pools sized N, or refused;
``--threads``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.measuring.threads import (
    POOL_VARIABLES,
    check,
    check_count,
    environment,
    one_run_at_a_time,
    usable_cpus,
)
from bench.records import ResultRecord, VariantRecord, read
from tests.processes import python

USABLE = len(usable_cpus())


def test_a_worker_whose_pools_did_not_take_is_refused() -> None:
    """What ``observed`` reads in a worker asked for one thread: pinned and every pool at
    one passes; a CPU too many, a pool the environment or a framework left at two, fails."""
    good = {"cpus": [1], "OMP_NUM_THREADS": "1", "torch_threads": 1, "tf_intra_op_threads": 1}
    check(1, good)
    for wrong in (
        {"cpus": [0, 1]},  # not pinned
        {"OMP_NUM_THREADS": "2"},
        {"torch_threads": 2},
        {"tf_intra_op_threads": 0},  # TensorFlow's default: every core
        {"torch_interop_threads": 2},
        {"numba_threads": 2},
    ):
        with pytest.raises(RuntimeError, match="asked for 1 thread"):
            check(1, good | wrong)


def test_the_environment_sizes_every_pool() -> None:
    assert environment(2) == dict.fromkeys(POOL_VARIABLES, "2")


@pytest.mark.parametrize("count", [0, -1, USABLE + 1, True, 1.0, "1", None])
def test_a_count_of_threads_beyond_the_cpus_or_not_whole_is_refused(count: object) -> None:
    with pytest.raises(ValueError, match="threads must be a whole number from 1 to"):
        check_count(count)


def test_pinning_leaves_the_process_on_that_many_cpus() -> None:
    probe = (
        "import os; from bench.measuring.threads import pin; pin(1); "
        "print(len(os.sched_getaffinity(0)))"
    )
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("this platform cannot pin a process")
    assert python("-c", probe, timeout=60).stdout.strip() == "1"


@pytest.mark.slow
@pytest.mark.skipif(USABLE < 2, reason="two threads need two usable CPUs")
@pytest.mark.parametrize("threads", [1, 2])
def test_tensorflow_and_torch_run_on_the_threads_asked(threads: int, tmp_path: Path) -> None:
    """A run of tf_while and torch_eager at ``--threads N``: each worker's CPUs and its
    framework's own pools are N, and each measurement records N."""
    pytest.importorskip("tensorflow")
    pytest.importorskip("torch")
    from bench.cli import main

    variants = ["tf_while", "torch_eager"]
    args = ["--quick", "--variants", *variants, "--batch", "1", "--steps", "20"]
    main([*args, "--operations", "predict", "--threads", str(threads), "--out", str(tmp_path)])
    records = read(tmp_path / "results.jsonl")
    facts = {r.variant: r.threads for r in records if isinstance(r, VariantRecord)}
    assert set(facts) == set(variants), facts
    for seen in facts.values():
        assert seen is not None and len(seen["cpus"]) == threads, seen
    assert facts["tf_while"]["tf_intra_op_threads"] == threads
    assert facts["tf_while"]["tf_inter_op_threads"] == threads
    assert facts["torch_eager"]["torch_threads"] == threads
    results = [r for r in records if isinstance(r, ResultRecord)]
    assert len(results) == 2 and all(r.threads == threads for r in results), results


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/stat is Linux's")
def test_what_another_process_takes_of_the_cpus_is_counted() -> None:
    """A process spinning for half a second on the CPU a process is pinned to, while that
    process sleeps: most of that half second is counted as the others'."""
    probe = (
        "import os, subprocess, sys\n"
        "cpu = sorted(os.sched_getaffinity(0))[-1]\n"
        "os.sched_setaffinity(0, [cpu])\n"
        "from bench.measuring.threads import others_busy\n"
        "taken = others_busy()\n"
        "spin = 'import time\\nend = time.time() + 0.5\\nwhile time.time() < end: pass'\n"
        "subprocess.run([sys.executable, '-c', spin], check=True)\n"
        "print(taken.since())\n"
    )
    others = float(python("-c", probe, timeout=60).stdout.split()[-1])
    assert others > 0.3, others


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl")
def test_a_second_run_waits_for_the_first_to_end(tmp_path: Path) -> None:
    held = (
        "import time\nfrom bench.measuring.threads import one_run_at_a_time\n"
        "with one_run_at_a_time():\n    print('held', flush=True)\n    time.sleep(1.5)\n"
    )
    first = subprocess.Popen([sys.executable, "-c", held], stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "held"
        begin = time.perf_counter()
        with one_run_at_a_time():
            waited = time.perf_counter() - begin
    finally:
        first.wait()
    assert waited > 0.8, waited
