"""Training moves between every ordered pair of installed backends (the contract's
"Training state"), keras_rnn on each Keras backend counted: k steps on A, a checkpoint file,
k more on B equal 2k uninterrupted steps on B and on the reference, both models, with Adam
(``resume_pairs.OPTIMIZERS``).

Each backend runs in a process of its own (``tests/resume_pairs.py``), all at once: first
its k steps and 2k steps, then, once every backend has written its checkpoints, every
checkpoint resumed on it. The largest difference of each pair from the reference is
printed (``pytest -s``).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import frae
from parity_tests.tolerances import assert_close
from tests import resume_pairs

ROOT = Path(__file__).resolve().parents[1]
KERAS_BACKENDS = ("tensorflow", "jax", "torch")


def installed() -> dict[str, tuple[str, dict[str, str]]]:
    """Label -> (registered backend, environment) for every installed backend, keras_rnn
    once per Keras backend whose framework is installed."""
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for name in frae.installed_backends():
        if name != "keras_rnn":
            found[name] = (name, {})
            continue
        for keras_backend in KERAS_BACKENDS:
            if importlib.util.find_spec(keras_backend) is not None:
                found[f"keras_rnn[{keras_backend}]"] = (name, {"KERAS_BACKEND": keras_backend})
    return found


def _run(path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    with np.load(path) as archive:
        weights = {k.removeprefix("w:"): archive[k] for k in archive.files if k != "losses"}
        return archive["losses"], weights


def largest_differences(folder: Path, labels: list[str]) -> dict[tuple[str, str], float]:
    """Per ordered pair (A, B), of both models and optimizers, the largest absolute
    difference of a loss or weight of k steps on A and k on B from the reference's 2k, each
    pair first checked against B's 2k and the reference's with the trajectory tolerances."""
    largest: dict[tuple[str, str], float] = {}
    runs = itertools.product(labels, labels, resume_pairs.MODELS, resume_pairs.OPTIMIZERS)
    for first, second, model, optimizer in runs:
        stem = f"{model}.{optimizer}"
        losses, weights = _run(folder / f"{first}-{second}.{stem}.npz")
        losses = np.concatenate([np.load(folder / f"{first}.{stem}.first.npy"), losses])
        what = f"{first} -> {second}, {model} model, {optimizer}"
        difference = 0.0
        for against in (second, "reference"):
            expected_losses, expected_weights = _run(folder / f"{against}.{stem}.whole.npz")
            assert_close(optimizer, np.float32(losses), expected_losses, f"{what} vs {against}")
            for name, value in expected_weights.items():
                assert_close(f"{optimizer} weights", weights[name], value, f"{what}: {name}")
                if against == "reference":
                    difference = max(difference, float(np.abs(weights[name] - value).max()))
            if against == "reference":
                difference = max(difference, float(np.abs(losses - expected_losses).max()))
        largest[first, second] = max(largest.get((first, second), 0.0), difference)
    return largest


@pytest.mark.nested
def test_training_resumes_between_every_ordered_pair_of_backends(tmp_path: Path) -> None:
    backends = installed()
    labels = list(backends)
    assert "reference" in labels and len(labels) >= 2, labels
    processes = {}
    for label, (name, env) in backends.items():
        command = [sys.executable, str(ROOT / "tests" / "resume_pairs.py"), str(tmp_path)]
        processes[label] = subprocess.Popen(
            [*command, label, name, *labels],
            cwd=ROOT,
            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    failures = {}
    for label, process in processes.items():
        _, errors = process.communicate(timeout=1800)
        if process.returncode != 0:
            failures[label] = errors[-2000:]
    assert not failures, failures
    largest = largest_differences(tmp_path, labels)
    print("\nlargest difference from the reference's 2k steps, A (row) -> B (column):")
    print("\t".join(["", *labels]))
    for first in labels:
        print("\t".join([first, *(f"{largest[first, second]:.1e}" for second in labels)]))
