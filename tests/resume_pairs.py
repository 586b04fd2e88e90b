"""One backend's part of the resume matrix (run as a script, one process per backend).

    KERAS_BACKEND=... python tests/resume_pairs.py FOLDER LABEL BACKEND LABEL...

First, for each model and each optimizer, k steps from the shared start written as
``FOLDER/LABEL.MODEL.OPTIMIZER.safetensors`` and 2k uninterrupted steps as ``....whole.npz``
(losses and weights); then ``LABEL.ready``. When every label's ``ready`` is there, each of
their checkpoints resumed for k steps on a fresh object of this backend, written as
``FROM-LABEL.MODEL.OPTIMIZER.npz`` (a worker that fails leaves ``LABEL.failed``, and the
others stop waiting). Only this backend's framework is
imported, so Keras runs on the backend its environment names.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import frae
from frae.data import multi_sine

MODELS = {"output": frae.FRAEConfig(), "state": frae.FRAEConfig(feedback="state", state_dim=8)}
OPTIMIZERS = {"adam": 1e-2}
"""Adam alone: SGD carries no moments, and its step and shuffle across backends are the
kit's (``parity_tests/test_resume.py``, each backend with itself and the reference)."""
HALF = 2
"""Epochs a half: 4 sequences in mini-batches of 3, shuffled, 2 steps an epoch: k = 4."""
WAIT_S = 900


def options(optimizer: str, epochs: int = HALF) -> dict[str, object]:
    return {
        "optimizer": optimizer,
        "learning_rate": OPTIMIZERS[optimizer],
        "batch_size": 3,
        "shuffle": True,
        "seed": 31,
        "epochs": epochs,
    }


def inputs(config: frae.FRAEConfig) -> np.ndarray:
    return multi_sine(batch=4, steps=9, seed=30, features=config.input_dim)


def save_run(path: Path, losses: list[float], weights: dict[str, np.ndarray]) -> None:
    np.savez(path, losses=np.asarray(losses), **{f"w:{k}": v for k, v in weights.items()})


def first_half(folder: Path, label: str, backend: str) -> None:
    for model_name, config in MODELS.items():
        for optimizer in OPTIMIZERS:
            x = inputs(config)
            model = frae.create(backend, config, seed=32)
            history = model.fit(x, **options(optimizer))
            stem = f"{label}.{model_name}.{optimizer}"
            frae.save_checkpoint(
                folder / f"{stem}.safetensors", model.get_weights(), history["training_state"]
            )
            np.save(folder / f"{stem}.first.npy", np.asarray(history["loss"]))
            whole = frae.create(backend, config, seed=32)
            losses = whole.fit(x, **options(optimizer, 2 * HALF))["loss"]
            save_run(folder / f"{stem}.whole.npz", losses, whole.get_weights())


def second_half(folder: Path, label: str, backend: str, labels: list[str]) -> None:
    for model_name, config in MODELS.items():
        for optimizer in OPTIMIZERS:
            for source in labels:
                weights, state = frae.load_checkpoint(
                    folder / f"{source}.{model_name}.{optimizer}.safetensors", config
                )
                model = frae.create(backend, config, weights=weights)
                resumed = model.fit(inputs(config), **options(optimizer), training_state=state)
                save_run(
                    folder / f"{source}-{label}.{model_name}.{optimizer}.npz",
                    resumed["loss"],
                    model.get_weights(),
                )


def main(folder: Path, label: str, backend: str, labels: list[str]) -> None:
    if backend == "torch_scan":
        from tests.compile_caches import cache_compiled_scans

        cache_compiled_scans()
    first_half(folder, label, backend)
    (folder / f"{label}.ready").touch()
    deadline = time.monotonic() + WAIT_S
    while not all((folder / f"{other}.ready").exists() for other in labels):
        if any(folder.glob("*.failed")) or time.monotonic() > deadline:
            raise SystemExit(f"{label}: another backend's first half never came")
        time.sleep(0.2)
    second_half(folder, label, backend, labels)


if __name__ == "__main__":
    target, own = Path(sys.argv[1]), sys.argv[2]
    try:
        main(target, own, sys.argv[3], sys.argv[4:])
    except BaseException:
        (target / f"{own}.failed").touch()  # the others stop waiting for this one
        raise
