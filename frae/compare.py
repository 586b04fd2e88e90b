"""The parity half of the main job: every installed backend against the float64 reference
on the default model.

For each backend: the largest difference from the reference in outputs, codes, loss,
gradients and a short Adam trajectory, each held to the parity suite's tolerance for it
(``frae.tolerances``), and the verdict. A Keras port is compared on every Keras backend
installed, each but this process's own in a process of its own (``KERAS_BACKEND`` is fixed
per process):

    python -m frae.compare --backend keras_rnn

prints that process's row as JSON. Backends that cannot run here are listed with the
reason. Timing is the benchmark's (``frae compare`` runs it next, from ``frae.cli``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np

import frae
from frae.data import multi_sine
from frae.devices import framework_of
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
KERAS_BACKENDS = ("tensorflow", "jax", "torch")
"""The Keras backends a Keras port is compared on, each named as its framework."""
PROCESS_TIMEOUT_S = 600
"""How long a Keras backend's process may take to compare (about 20 s on two cores)."""

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
    def nearest(self) -> str:
        """The quantity nearest its tolerance (a NaN nearest of all)."""
        return max(self.used, key=lambda name: np.nan_to_num(self.used[name], nan=np.inf))

    @property
    def worst(self) -> str:
        """The quantity nearest its tolerance, as the share used: ``6% adam``."""
        quantity = self.nearest
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


def parity_markdown(
    rows: list[Comparison],
    missing: dict[str, str],
    shape: tuple[int, ...],
    broken: dict[str, str] | None = None,
) -> str:
    """The parity table as a Markdown section for the report; ``broken``: each backend whose
    comparison raised, with the error, ``missing``: each that cannot run here, with why."""
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
    unjudged = " |" * (len(headings) - 3)
    lines += [
        f"| {name} | raised {error} |{unjudged} fail |" for name, error in (broken or {}).items()
    ]
    empty = " |" * (len(headings) - 2)
    lines += [f"| {name} | not compared: {reason} |{empty}" for name, reason in missing.items()]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Parity:
    """The parity check on data of ``shape`` (B, T, F): each backend compared (``rows``),
    each whose comparison raised (``broken``: its label -> the error) and each that cannot
    run here (``missing``: its label -> why)."""

    shape: tuple[int, ...]
    rows: list[Comparison] = field(default_factory=list)
    broken: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        """The backends compared that fail: outside a tolerance, or their comparison raised."""
        return [r.backend for r in self.rows if not r.passed] + list(self.broken)

    def markdown(self) -> str:
        """The table as a Markdown section for the report (``parity_markdown``)."""
        return parity_markdown(self.rows, self.missing, self.shape, self.broken)


@dataclass(frozen=True)
class Planned:
    """A row to compare: its ``label``, the registered ``backend``, and the Keras backend
    its process of its own runs on (``None``: this process)."""

    label: str
    backend: str
    keras_backend: str | None = None


def plan() -> tuple[list[Planned], dict[str, str]]:
    """Each row to compare, in the table's order, and why each other cannot run here: a Keras
    port once per Keras backend installed, this process's own here. Imports no framework."""
    planned, missing = [], {}
    for name in frae.available_backends():
        if (reason := frae.unavailable_reason(name)) is not None:
            missing[name] = reason
        elif frae.registry.frameworks_of(name) != ("keras",):
            planned.append(Planned(name, name))
        else:
            own = framework_of(name)  # the process's KERAS_BACKEND
            for keras_backend in dict.fromkeys((*KERAS_BACKENDS, own)):
                label = f"{name}[{keras_backend}]"
                if importlib.util.find_spec(keras_backend) is None:
                    missing[label] = f"needs {keras_backend}: not installed"
                else:
                    elsewhere = None if keras_backend == own else keras_backend
                    planned.append(Planned(label, name, elsewhere))
    return planned, missing


def in_own_process(planned: Planned) -> subprocess.CompletedProcess[str]:
    """``planned``'s comparison in a process of its own, on its Keras backend
    (``python -m frae.compare``)."""
    assert planned.keras_backend is not None
    environment = os.environ | {"KERAS_BACKEND": planned.keras_backend}
    command = [sys.executable, "-m", "frae.compare", "--backend", planned.backend]
    return subprocess.run(
        command, env=environment, capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S
    )


def row_of(done: subprocess.CompletedProcess[str]) -> Comparison:
    """The row a process of its own printed (``in_own_process``); ``RuntimeError`` with its
    exit status and its stderr's last line where it failed, its stderr's tail printed."""
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        last = next((line for line in reversed(done.stderr.splitlines()) if line.strip()), "")
        raise RuntimeError(f"its process exited {done.returncode}: {last.strip()}")
    return Comparison(**json.loads(done.stdout.splitlines()[-1]))


def compare_all() -> Parity:
    """Every row ``plan`` gives, on the default data (``multi_sine()``, which a process of its
    own draws too): a Keras backend not this process's in a process of its own, each started
    first so that they run meanwhile. A comparison that raises is a failed row
    (``Parity.broken``); the others are still compared."""
    x = multi_sine()
    planned, missing = plan()
    elsewhere = [p for p in planned if p.keras_backend is not None]
    outcome = Parity(x.shape, missing=missing)
    with ThreadPoolExecutor(max_workers=max(1, len(elsewhere))) as pool:
        started = {p.label: pool.submit(in_own_process, p) for p in elsewhere}
        for p in planned:
            here = p.keras_backend is None
            try:
                row = compare_backend(p.backend, x) if here else row_of(started[p.label].result())
            except Exception as error:
                if here:
                    traceback.print_exc()
                outcome.broken[p.label] = f"{type(error).__name__}: {error}".splitlines()[0]
            else:
                outcome.rows.append(row)
    return outcome


def main() -> Parity:
    """Print the parity table; return the check (``Parity.markdown`` is the report's section)."""
    print(textwrap.fill(f"FRAE default model {frae.FRAEConfig()}", WIDTH), end="\n\n")
    outcome = compare_all()
    print(format_table(outcome.rows, outcome.shape))
    if outcome.broken:
        print("\nfailed to compare:")
        for label, error in outcome.broken.items():
            print(f"  {label}: {error}")
    if outcome.missing:
        print("\nnot compared:")
        for name, reason in outcome.missing.items():
            print(f"  {name}: {reason}")
    return outcome


def entry(argv: list[str] | None = None) -> None:
    """``python -m frae.compare --backend NAME``: ``NAME`` against the reference in this
    process, on the default data (``compare_all``'s), its row printed as one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m frae.compare", description=entry.__doc__)
    parser.add_argument("--backend", required=True, choices=frae.available_backends())
    row = compare_backend(parser.parse_args(argv).backend, multi_sine())
    print(json.dumps(asdict(row)))


if __name__ == "__main__":
    entry()
