"""Steady-state time per time step of ``predict`` and of a training step, per backend.

Each backend runs in a process of its own. ``predict`` is timed per call; a training step
as ``fit(x, epochs=K)`` divided by K, so it includes the per-step cost a user pays through
``fit`` (the loss of every step is read back). Compilation is excluded by a warm-up.

    python -m bench.step_time tf_while impls.tf_while:TextbookTFWhileBackend --steps 1000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

import frae
from frae.data import multi_sine


def _seconds(call: Callable[[], object], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()  # returns NumPy: the work is finished when the clock stops
        samples.append(time.perf_counter() - start)
    return samples


def measure(backend: str, batch: int, steps: int, repeats: int, train_steps: int) -> dict:
    """µs per time step (median and interquartile range) of predict and a training step."""
    x = multi_sine(batch=batch, steps=steps, seed=0)
    model = frae.create(backend)
    start = time.perf_counter()
    model.predict(x)
    first_predict = time.perf_counter() - start
    model.fit(x, epochs=2, learning_rate=1e-3)  # warm-up: traces and compiles the step
    result = {"backend": backend, "batch": batch, "steps": steps, "first_predict_s": first_predict}
    for operation, call, per in (
        ("predict", lambda: model.predict(x), steps),
        ("train_step", lambda: model.fit(x, epochs=train_steps), steps * train_steps),
    ):
        quartiles = np.percentile(np.array(_seconds(call, repeats)) / per * 1e6, [25, 50, 75])
        result[f"{operation}_us_per_step"] = float(quartiles[1])
        result[f"{operation}_iqr_us"] = float(quartiles[2] - quartiles[0])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backends", nargs="+", help="registered names or import paths")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--train-steps", type=int, default=5)
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    options = [
        f"--{k}={getattr(args, k.replace('-', '_'))}"
        for k in ("batch", "steps", "repeats", "train-steps")
    ]
    if args.in_process:
        for backend in args.backends:
            print(
                json.dumps(measure(backend, args.batch, args.steps, args.repeats, args.train_steps))
            )
        return
    rows = []
    for backend in args.backends:
        command = [sys.executable, "-m", "bench.step_time", backend, *options, "--in-process"]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(output.splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    fastest = {op: min(r[f"{op}_us_per_step"] for r in rows) for op in ("predict", "train_step")}
    print(f"\n{'backend':<42}{'predict µs/step':>17}{'×best':>7}{'train µs/step':>15}{'×best':>7}")
    for r in rows:
        print(
            f"{r['backend']:<42}{r['predict_us_per_step']:>17.2f}"
            f"{r['predict_us_per_step'] / fastest['predict']:>7.1f}"
            f"{r['train_step_us_per_step']:>15.2f}"
            f"{r['train_step_us_per_step'] / fastest['train_step']:>7.1f}"
        )
    print(
        f"B={args.batch} T={args.steps}; median of {args.repeats}, each backend in its own process"
    )


if __name__ == "__main__":
    main()
