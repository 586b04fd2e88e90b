"""The facts of the machine a run is made on, written into its first record."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

LIBRARIES = (
    "numpy",
    "tensorflow",
    "keras",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "numba",
    "llvmlite",
    "torch",
    "matplotlib",
)
"""The libraries whose installed versions a run records."""


@dataclass(frozen=True)
class Machine:
    """The machine a run was made on (``RunRecord.machine``): what a comparison of two runs
    checks before their figures (``bench.comparing.differences``)."""

    platform: str = ""
    machine: str = ""
    processor: str = ""
    cpu_count: int | None = None
    affinity: int | None = None
    """The CPUs this process may run on."""
    python: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    thread_variables: dict[str, str] = field(default_factory=dict)
    c_compiler: str | None = None
    """The C compiler's version and the floors' flags; ``None``: no compiler."""


def machine_facts() -> Machine:
    """Platform, CPUs, Python, library versions and thread variables; imports no framework."""
    from bench.baselines.c_forward import FLAGS, compiler
    from bench.measuring.threads import THREAD_VARIABLES

    versions = {}
    for name in LIBRARIES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    if cc := compiler():
        said = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
        cc = f"{said.splitlines()[0]} {' '.join(FLAGS)}"
    return Machine(
        platform=platform.platform(),
        machine=platform.machine(),
        processor=_cpu_model(),
        cpu_count=os.cpu_count(),
        affinity=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        python=platform.python_version(),
        versions=versions,
        thread_variables={k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
        c_compiler=cc,
    )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()
