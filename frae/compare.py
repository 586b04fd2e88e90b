"""The parity half of the main job: every installed backend against the float64 reference
on the default model.

For each backend: the largest difference from the reference in outputs, codes, loss,
gradients and a short Adam trajectory. Backends that cannot run here are listed with the
reason. Timing is the benchmark's (``frae compare`` runs it next, from ``frae.cli``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import frae
from frae.data import multi_sine

TRAINING_STEPS = 20


@dataclass(frozen=True)
class Comparison:
    backend: str
    output_error: float
    code_error: float
    loss_error: float
    gradient_error: float
    trajectory_error: float


def _relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(actual - expected).max() / max(np.abs(expected).max(), 1e-30))


def compare_backend(name: str, x: np.ndarray, seed: int = 0) -> Comparison:
    """``name`` against a fresh reference with the same initial weights."""
    oracle, model = frae.create("reference", seed=seed), frae.create(name, seed=seed)
    oracle_loss, oracle_grads = oracle.loss_and_grads(x)
    loss, grads = model.loss_and_grads(x)
    output_error = float(np.abs(model.predict(x) - oracle.predict(x)).max())
    code_error = float(np.abs(model.encode(x) - oracle.encode(x)).max())
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
    )


def format_table(rows: list[Comparison]) -> str:
    header = (
        f"{'backend':<12}{'max |dx̂|':>11}{'max |dz|':>11}{'loss rel':>11}"
        f"{'grad rel':>11}{'adam rel':>11}"
    )
    lines = [header, "-" * len(header)]
    lines += [
        f"{r.backend:<12}{r.output_error:>11.1e}{r.code_error:>11.1e}{r.loss_error:>11.1e}"
        f"{r.gradient_error:>11.1e}{r.trajectory_error:>11.1e}"
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
        "| backend | max abs dx̂ | max abs dz | loss rel | grad rel | adam rel |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.backend} | {r.output_error:.1e} | {r.code_error:.1e} | {r.loss_error:.1e} | "
        f"{r.gradient_error:.1e} | {r.trajectory_error:.1e} |"
        for r in rows
    ]
    lines += [f"| {name} | not compared: {reason} | | | | |" for name, reason in missing.items()]
    return "\n".join(lines) + "\n"


def main() -> str:
    """Print the parity table; return it as a Markdown section for the benchmark's report."""
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
    return parity_markdown(rows, missing)
