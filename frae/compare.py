"""The parity half of the main job: every installed backend against the float64 reference
on the default model.

For each backend: the largest difference from the reference in outputs, codes, loss,
gradients and a short Adam trajectory, each held to the parity suite's tolerance for it
(``frae.tolerances``), and the verdict. Backends that cannot run here are listed with the
reason. Timing is the benchmark's (``frae compare`` runs it next, from ``frae.cli``).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

import frae
from frae.data import multi_sine
from frae.tolerances import FLOAT64, TOLERANCES, held_to

TRAINING_STEPS = 20
WIDTH = 100
"""Columns of the terminal table."""

QUANTITIES = {
    "outputs": "outputs",
    "codes": "outputs",
    "loss": "loss",
    "grads": "gradients",
    "adam": "adam",
}
"""Each compared quantity (a column) -> the tolerance it is held to (``TOLERANCES``)."""

EXPLANATION = (
    "Largest difference from the reference: outputs x̂ and codes z absolute; the loss, "
    "the gradients (of each tensor's largest entry) and the loss of each of "
    f"{TRAINING_STEPS} Adam steps relative. Worst: the largest difference as a share of "
    "its tolerance."
)


@dataclass(frozen=True)
class Comparison:
    """One backend against the reference.

    ``errors`` holds each quantity's largest difference as the table shows it, ``used`` that
    difference as a fraction of the tolerance it is held to (within it at most 1), and
    ``held_to`` names the tolerances: ``"float32"`` (``TOLERANCES``) or ``"float64"``
    (``FLOAT64``, for a float64 backend).
    """

    backend: str
    errors: dict[str, float]
    used: dict[str, float]
    held_to: str

    @property
    def passed(self) -> bool:
        return all(fraction <= 1.0 for fraction in self.used.values())  # NaN fails

    @property
    def worst(self) -> str:
        """The quantity nearest its tolerance, as the share used: ``6% adam``."""
        quantity = max(self.used, key=lambda name: np.nan_to_num(self.used[name], nan=np.inf))
        share = f"{100 * self.used[quantity]:.0f}%"
        return f"{share} {quantity}" if self.used[quantity] != 0 else share

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"


def _error(actual: np.ndarray, expected: np.ndarray, relative: bool) -> float:
    """The largest difference, with ``relative`` as a fraction of the largest expected
    magnitude."""
    scale = max(np.abs(expected).max(), 1e-30) if relative else 1.0
    return float(np.abs(actual - expected).max() / scale)


def compare_backend(name: str, x: np.ndarray, seed: int = 0) -> Comparison:
    """``name`` against a fresh reference with the same initial weights."""
    oracle, model = frae.create("reference", seed=seed), frae.create(name, seed=seed)
    oracle_loss, oracle_grads = oracle.loss_and_grads(x)
    loss, grads = model.loss_and_grads(x)
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {
        "outputs": (model.predict(x), oracle.predict(x)),
        "codes": (model.encode(x), oracle.encode(x)),
        "loss": (np.asarray(loss), np.asarray(oracle_loss)),
    }
    pairs["adam"] = (  # last: fit trains the weights the others read
        np.array(model.fit(x, epochs=TRAINING_STEPS, learning_rate=1e-2)["loss"]),
        np.array(oracle.fit(x, epochs=TRAINING_STEPS, learning_rate=1e-2)["loss"]),
    )
    both_float64 = pairs["outputs"][0].dtype == np.float64  # the reference's is float64

    def used(quantity: str, actual: np.ndarray, expected: np.ndarray) -> float:
        tolerance = held_to(QUANTITIES[quantity], both_float64=both_float64)
        return tolerance.fraction_used(actual, expected)

    grads_used = max(used("grads", grads[key], oracle_grads[key]) for key in oracle_grads)
    errors = {q: _error(*pair, relative=q not in ("outputs", "codes")) for q, pair in pairs.items()}
    errors["grads"] = max(_error(grads[k], oracle_grads[k], relative=True) for k in oracle_grads)
    return Comparison(
        backend=_label(name, model),
        errors=errors,
        used={q: grads_used if q == "grads" else used(q, *pairs[q]) for q in QUANTITIES},
        held_to="float64" if both_float64 else "float32",
    )


def _label(name: str, model: frae.Backend) -> str:
    """``name``, with the Keras backend it ran on for a Keras port: ``keras_rnn[jax]``."""
    keras_backend = getattr(model, "metadata", {}).get("keras_backend")
    return f"{name}[{keras_backend}]" if keras_backend else name


def tolerance_legend() -> str:
    """The tolerances of the table's columns, (rtol, atol) each."""
    columns = "; ".join(
        f"{', '.join(q for q, k in QUANTITIES.items() if k == key)} {TOLERANCES[key]}"
        for key in dict.fromkeys(QUANTITIES.values())
    )
    return f"Tolerances (rtol, atol; frae/tolerances.py): float32: {columns}; float64: {FLOAT64}."


def title(shape: tuple[int, ...]) -> str:
    """The table's title, with the data's ``shape``, (B, T, F)."""
    batch, steps, features = shape
    return f"Parity with the float64 reference, multi-sine data B={batch} T={steps} F={features}"


def format_table(rows: list[Comparison], shape: tuple[int, ...]) -> str:
    """The terminal table, at most ``WIDTH`` columns: ``shape`` is the data's (B, T, F)."""
    label = max([len("backend"), *(len(r.backend) for r in rows)]) + 2
    header = (
        f"{'backend':<{label}}"
        + "".join(f"{quantity:>9}" for quantity in QUANTITIES)
        + f"{'held to':>9}  {'worst':<13}verdict"
    )
    lines = [title(shape), header, "-" * len(header)]
    lines += [
        f"{r.backend:<{label}}"
        + "".join(f"{r.errors[quantity]:>9.1e}" for quantity in QUANTITIES)
        + f"{r.held_to:>9}  {r.worst:<13}{r.verdict}"
        for r in rows
    ]
    lines += textwrap.wrap(EXPLANATION, WIDTH) + textwrap.wrap(tolerance_legend(), WIDTH)
    return "\n".join(lines)


def parity_markdown(rows: list[Comparison], missing: dict[str, str], shape: tuple[int, ...]) -> str:
    """The parity table as a Markdown section for the report."""
    headings = ["backend", *QUANTITIES, "held to", "worst", "verdict"]
    lines = [
        f"## {title(shape)} (default model)",
        "",
        f"{EXPLANATION} {tolerance_legend()}",
        "",
        "| " + " | ".join(headings) + " |",
        "|---" * len(headings) + "|",
    ]
    lines += [
        f"| {r.backend} | "
        + " | ".join(f"{r.errors[quantity]:.1e}" for quantity in QUANTITIES)
        + f" | {r.held_to} | {r.worst} | {r.verdict} |"
        for r in rows
    ]
    empty = " |" * (len(headings) - 2)
    lines += [f"| {name} | not compared: {reason} |{empty}" for name, reason in missing.items()]
    return "\n".join(lines) + "\n"


def main() -> str:
    """Print the parity table; return it as a Markdown section for the benchmark's report."""
    x = multi_sine()
    print(textwrap.fill(f"FRAE default model {frae.FRAEConfig()}", WIDTH), end="\n\n")
    rows = [compare_backend(name, x) for name in frae.installed_backends()]
    print(format_table(rows, x.shape))
    missing = {
        name: reason
        for name in frae.available_backends()
        if (reason := frae.unavailable_reason(name)) is not None
    }
    if missing:
        print("\nnot compared:")
        for name, reason in missing.items():
            print(f"  {name}: {reason}")
    return parity_markdown(rows, missing, x.shape)
