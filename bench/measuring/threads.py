"""Equal threads: every variant's worker runs on the same number of cores, its frameworks'
thread pools sized to match, so that a ratio to the floor measures the framework and not
how many cores each side took.

A worker on N threads is pinned to N CPUs (``os.sched_setaffinity``), the one bound every
framework obeys (XLA's CPU client sizes its pool from the affinity and ignores ``XLA_FLAGS``);
each framework's own settings are then set to N, and ``check`` refuses a worker whose
settings did not take.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

try:
    import fcntl
except ImportError:  # not on Windows
    fcntl = None  # type: ignore[assignment]

POOL_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "NUMBA_NUM_THREADS",
)
"""The environment variables a worker on N threads gets set to N, read as each library loads."""
THREAD_VARIABLES = (*POOL_VARIABLES, "XLA_FLAGS", "KERAS_BACKEND")
"""The environment variables that set a worker's threads (and Keras' backend), recorded."""
FRAMEWORK_COUNTS = (
    "tf_intra_op_threads",
    "tf_inter_op_threads",
    "torch_threads",
    "torch_interop_threads",
    "numba_threads",
)
"""The pools' sizes as the frameworks report them (``observed``)."""


def usable_cpus() -> list[int]:
    """The CPUs this process may run on, in order."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def check_count(threads: object) -> int:
    """``threads``, a whole number from 1 to the usable CPUs; anything else a ``ValueError``."""
    usable = len(usable_cpus())
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= usable:
        raise ValueError(
            f"threads must be a whole number from 1 to the {usable} usable CPUs, got {threads!r}"
        )
    return threads


def environment(threads: int) -> dict[str, str]:
    """The variables that size every library's pool to ``threads``, for the worker's
    environment (they are read as each library loads, before the worker can act)."""
    return dict.fromkeys(POOL_VARIABLES, str(threads))


LOCK = Path(tempfile.gettempdir()) / "frae-bench.lock"
"""The file whose lock a run holds while its workers measure (``one_run_at_a_time``)."""


@contextlib.contextmanager
def one_run_at_a_time() -> Iterator[None]:
    """Hold this machine's benchmark lock while the block runs; a second run waits, saying
    so. Every run pins its workers to the same last CPUs (``pin``): two at once would each
    take half of the other's core, and every figure of both would double."""
    if fcntl is None:  # no such lock where there is no fcntl: nothing is held
        yield
        return
    with LOCK.open("a") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another benchmark run on this machine ({LOCK})", file=sys.stderr)
            fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def pin(threads: int) -> list[int]:
    """Pin this process to the last ``threads`` usable CPUs (the first is left to the runner
    where there are more); return them. A no-op where the platform cannot pin."""
    cpus = usable_cpus()[-threads:]
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)
    return cpus


def apply(threads: int, frameworks: list[str]) -> None:
    """Each framework's own thread settings, set to ``threads``: PyTorch's and TensorFlow's,
    importing them (TensorFlow's must be set before its context starts, which a backend's
    import may do); JAX has none but the affinity."""
    if "torch" in frameworks:
        torch = importlib.import_module("torch")
        torch.set_num_threads(threads)
        if torch.get_num_interop_threads() != threads:
            with contextlib.suppress(RuntimeError):  # once, before inter-op work; check() tells
                torch.set_num_interop_threads(threads)
    if "tensorflow" in frameworks:
        tf = importlib.import_module("tensorflow")
        for setting in ("intra_op", "inter_op"):
            # allowed before TensorFlow's context starts (the environment sized it anyway)
            with contextlib.suppress(RuntimeError):
                getattr(tf.config.threading, f"set_{setting}_parallelism_threads")(threads)


def observed(frameworks: list[str]) -> dict[str, Any]:
    """Thread counts as this process and ``frameworks`` see them (only those: asking a
    framework can start it), and the environment variables that set them."""
    settings: dict[str, Any] = {
        name: os.environ[name] for name in THREAD_VARIABLES if name in os.environ
    }
    settings["cpus"] = usable_cpus()
    if "tensorflow" in frameworks:
        tf = importlib.import_module("tensorflow")
        settings["tf_intra_op_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
        settings["tf_inter_op_threads"] = tf.config.threading.get_inter_op_parallelism_threads()
    if "jax" in frameworks:
        jax = importlib.import_module("jax")
        settings["jax_devices"] = [str(device) for device in jax.devices()]
    if "torch" in frameworks:
        torch = importlib.import_module("torch")
        settings["torch_threads"] = torch.get_num_threads()
        settings["torch_interop_threads"] = torch.get_num_interop_threads()
    if "numba" in frameworks:
        numba = importlib.import_module("numba")
        settings["numba_threads"] = numba.config.NUMBA_NUM_THREADS
    return settings


PROC_STAT = Path("/proc/stat")
BUSY_FIELDS = (0, 1, 2, 5, 6)
"""The fields of a ``cpuN`` line of ``/proc/stat`` that count a CPU busy: user, nice,
system, irq, softirq (idle, iowait, steal and the guests' are not)."""


def busy_s(cpus: list[int]) -> float | None:
    """Seconds ``cpus`` have been busy since boot, to a clock tick (``None`` where
    ``/proc/stat`` is not)."""
    try:
        lines = PROC_STAT.read_text().splitlines()
    except OSError:
        return None
    ticks, named = 0, {f"cpu{cpu}" for cpu in cpus}
    for line in lines:
        name, *fields = line.split()
        if name in named:
            ticks += sum(int(fields[i]) for i in BUSY_FIELDS)
    return ticks / os.sysconf("SC_CLK_TCK")


class Others(NamedTuple):
    """Where this process's CPUs stood at a moment: their busy seconds and its own CPU time."""

    busy: float | None
    own: float

    def since(self) -> float | None:
        """CPU seconds other processes took on this process's CPUs since then (at least 0;
        ``None`` where the platform does not say)."""
        now = others_busy()
        if self.busy is None or now.busy is None:
            return None
        return max(0.0, (now.busy - self.busy) - (now.own - self.own))


def others_busy() -> Others:
    """The moment ``Others.since`` counts from."""
    return Others(busy_s(usable_cpus()), time.process_time())


def check(threads: int, seen: dict[str, Any]) -> None:
    """Refuse (``RuntimeError``) a worker whose CPUs or pools, as ``observed`` read them, are
    not ``threads``: its figures would not be comparable with the others'."""
    counted = (*POOL_VARIABLES, *FRAMEWORK_COUNTS)
    counts = {"cpus": len(seen["cpus"])} | {n: int(seen[n]) for n in counted if n in seen}
    if wrong := {name: count for name, count in counts.items() if count != threads}:
        raise RuntimeError(f"the worker was asked for {threads} thread(s) but has {wrong}")
