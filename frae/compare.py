"""The main job: every installed backend against the float64 reference on the default model,
then the quick cross-framework benchmark.

For each backend: the largest difference from the reference in outputs, codes, loss,
gradients and a short Adam trajectory, and the steady-state time of ``predict`` per step.
Backends that cannot run here are listed with the reason. Then ``bench`` measures every
variant, each in its own process, and writes the report (Markdown, JSON lines, PNGs) to a
folder, ``reports/<timestamp>/`` unless named.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import frae
from frae.data import multi_sine

TRAINING_STEPS = 20
TIMING_REPEATS = 7


@dataclass(frozen=True)
class Comparison:
    backend: str
    output_error: float
    code_error: float
    loss_error: float
    gradient_error: float
    trajectory_error: float
    predict_us_per_step: float


def _relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(actual - expected).max() / max(np.abs(expected).max(), 1e-30))


def _median_seconds(call: Callable[[], object], repeats: int) -> float:
    call()  # warm-up: tracing and compilation stay out of the steady state
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.asarray(call())  # results are NumPy: the work is finished when the clock stops
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def compare_backend(name: str, x: np.ndarray, seed: int = 0) -> Comparison:
    """``name`` against a fresh reference with the same initial weights."""
    oracle, model = frae.create("reference", seed=seed), frae.create(name, seed=seed)
    oracle_loss, oracle_grads = oracle.loss_and_grads(x)
    loss, grads = model.loss_and_grads(x)
    output_error = float(np.abs(model.predict(x) - oracle.predict(x)).max())
    code_error = float(np.abs(model.encode(x) - oracle.encode(x)).max())
    predict_seconds = _median_seconds(lambda: model.predict(x), TIMING_REPEATS)
    trajectory, oracle_trajectory = (
        np.array(backend.fit(x, epochs=TRAINING_STEPS, learning_rate=1e-2)["loss"])
        for backend in (model, oracle)
    )
    return Comparison(
        backend=name,
        output_error=output_error,
        code_error=code_error,
        loss_error=abs(loss - oracle_loss) / oracle_loss,
        gradient_error=max(_relative_error(grads[k], oracle_grads[k]) for k in oracle_grads),
        trajectory_error=_relative_error(trajectory, oracle_trajectory),
        predict_us_per_step=predict_seconds / x.shape[1] * 1e6,
    )


def format_table(rows: list[Comparison]) -> str:
    header = (
        f"{'backend':<12}{'max |dx̂|':>11}{'max |dz|':>11}{'loss rel':>11}"
        f"{'grad rel':>11}{'adam rel':>11}{'predict µs/step':>17}"
    )
    lines = [header, "-" * len(header)]
    lines += [
        f"{r.backend:<12}{r.output_error:>11.1e}{r.code_error:>11.1e}{r.loss_error:>11.1e}"
        f"{r.gradient_error:>11.1e}{r.trajectory_error:>11.1e}{r.predict_us_per_step:>17.1f}"
        for r in rows
    ]
    return "\n".join(lines)


def parity_markdown(rows: list[Comparison], missing: dict[str, str]) -> str:
    """The parity table as a Markdown section for the report."""
    lines = [
        "## Parity with the float64 reference (default model)",
        "",
        "Largest difference from the reference; Adam: "
        f"{TRAINING_STEPS} steps, the relative difference of the loss trajectory.",
        "",
        "| backend | max abs dx̂ | max abs dz | loss rel | grad rel | adam rel | predict µs/step |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.backend} | {r.output_error:.1e} | {r.code_error:.1e} | {r.loss_error:.1e} | "
        f"{r.gradient_error:.1e} | {r.trajectory_error:.1e} | {r.predict_us_per_step:.1f} |"
        for r in rows
    ]
    lines += [f"| {name} | not compared: {reason} | | | | | |" for name, reason in missing.items()]
    return "\n".join(lines) + "\n"


def main(out: Path | None = None, benchmark: bool = True) -> None:
    """Print the parity table; then run the quick benchmark and write the report to ``out``."""
    x = multi_sine()
    batch, steps, features = x.shape
    print(f"FRAE default model {frae.FRAEConfig()}")
    print(f"data: multi-sine, B={batch} T={steps} F={features}; oracle: float64 reference")
    print(f"errors are the largest difference from the reference; Adam: {TRAINING_STEPS} steps\n")
    rows = [compare_backend(name, x) for name in frae.installed_backends()]
    print(format_table(rows))
    missing = {
        name: reason
        for name in frae.available_backends()
        if (reason := frae.unavailable_reason(name)) is not None
    }
    if missing:
        print("\nnot compared:")
        for name, reason in missing.items():
            print(f"  {name}: {reason}")
    if not benchmark:
        return
    from bench.harness import benchmark as run_benchmark
    from bench.harness import default_out

    folder = out or default_out()
    print(f"\nquick benchmark, each variant in its own process; report in {folder}/", flush=True)
    start = time.perf_counter()
    _, summary = run_benchmark(quick=True, out=folder, preamble=parity_markdown(rows, missing))
    print(f"\n{summary}")
    print(f"\nreport ({time.perf_counter() - start:.0f} s): {folder / 'report.md'}")
    print(f"also there: results.jsonl, {', '.join(p.name for p in sorted(folder.glob('*.png')))}")
