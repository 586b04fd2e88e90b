"""The main job: every installed backend against the float64 reference on the default model.

For each backend: the largest difference from the reference in outputs, codes, loss,
gradients and a short Adam trajectory, and the steady-state time of ``predict`` per step.
Backends that cannot run here are listed with the reason.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

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


def main() -> None:
    x = multi_sine()
    batch, steps, features = x.shape
    print(f"FRAE default model {frae.FRAEConfig()}")
    print(f"data: multi-sine, B={batch} T={steps} F={features}; oracle: float64 reference")
    print(f"errors are the largest difference from the reference; Adam: {TRAINING_STEPS} steps\n")
    rows = [compare_backend(name, x) for name in frae.installed_backends()]
    print(format_table(rows))
    missing = [name for name in frae.available_backends() if frae.unavailable_reason(name)]
    if missing:
        print("\nnot compared:")
        for name in missing:
            print(f"  {name}: {frae.unavailable_reason(name)}")
