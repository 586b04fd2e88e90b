"""What an exported artifact costs in its runtime alone: ``python -m bench.exported``.

Each backend's formats (``export_formats``) are exported from the default config, then each
artifact is timed in a fresh process that imports its runtime and nothing of ``frae``
(``frae/runtimes.py`` loaded by path), pinned to one CPU with every pool sized to one
thread, as the benchmark's workers are: µs per call for one frame (B = 1) through encode
and through decode with the state, and µs per step of predict at T = 1000 for B = 1 and
B = 256. A table in Markdown on stdout, beside the export's seconds and the artifact's size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

import frae
from bench.threads import environment, usable_cpus
from frae import runtimes
from frae.quiet import load_triton_before_tensorflow

TIMER = """
import importlib.util, json, sys, timeit
import numpy as np
spec = importlib.util.spec_from_file_location("runtimes", sys.argv[1])
runtimes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runtimes)
functions = runtimes.open_artifact(sys.argv[2])
widths = runtimes.read_manifest(sys.argv[2])["widths"]
found = {}

def best(call, number):
    call()
    return min(timeit.repeat(call, number=number, repeat=5)) / number

for function, width in (("encode", widths["input"]), ("decode", widths["latent"])):
    frame = np.zeros((1, 1, width), np.float32)
    state = np.zeros((1, widths["state"]), np.float32)
    found[f"{function} a frame"] = best(lambda: functions[function](frame, state), 200) * 1e6
for batch in (1, 256):
    x = np.random.default_rng(0).uniform(-1, 1, (batch, 1000, widths["input"]))
    x = x.astype(np.float32)
    state = np.zeros((batch, widths["state"]), np.float32)
    found[f"predict B={batch}"] = best(lambda: functions["predict"](x, state), 1) * 1e3
print(json.dumps(found))
"""
"""Run with ``runtimes.py``'s path and the artifact's: one JSON line of µs figures."""
COLUMNS = ("encode a frame", "decode a frame", "predict B=1", "predict B=256")


def time_artifact(artifact: Path) -> dict[str, float]:
    """The figures of ``TIMER`` for ``artifact``, from a process pinned to one CPU."""
    cpu = usable_cpus()[-1]
    command = ["taskset", "-c", str(cpu), sys.executable, "-P", "-c", TIMER]
    command += [runtimes.__file__, str(artifact)]
    done = subprocess.run(
        command,
        env={**os.environ, **environment(1)},
        capture_output=True,
        text=True,
        timeout=1200,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def size_of(artifact: Path) -> int:
    return sum(p.stat().st_size for p in artifact.rglob("*") if p.is_file())


def measure(backends: list[str], folder: Path) -> list[list[str]]:
    """A row per backend and format it makes: export seconds, size, and the figures."""
    load_triton_before_tensorflow()  # torch_scan cannot start once TensorFlow has
    rows: list[list[str]] = []
    for backend in backends:
        model = frae.create(backend, seed=1)
        for format in getattr(model, "export_formats", ()):
            start = time.perf_counter()
            artifact = frae.export(model, folder / f"{backend}-{format}", format=format)
            export_s = time.perf_counter() - start
            figures = time_artifact(artifact)
            row = [backend, format, f"{export_s:.1f}", f"{size_of(artifact) / 1024:.0f}"]
            rows.append(row + [f"{figures[column]:.3g}" for column in COLUMNS])
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.exported", description=__doc__)
    parser.add_argument("--backends", nargs="+", default=frae.installed_backends())
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        rows = measure(args.backends, Path(folder))
    headers = ["backend", "format", "export s", "KiB"]
    headers += ["encode a frame µs", "decode a frame µs", "predict B=1 µs/step"]
    headers += ["predict B=256 µs/step"]
    print(tabulate(rows, headers, tablefmt="github"))


if __name__ == "__main__":
    main()
