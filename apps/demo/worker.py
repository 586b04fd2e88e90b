"""One backend's part of the demo, in a process of its own.

Each backend trains both models in a fresh process (Keras' backend is fixed when it
starts), on one thread, as many at once as there are CPUs (up to 4); Keras runs once per
installed Keras backend. ``run_variant`` starts the process, ``python -m apps.demo.worker
'<job as JSON>'``, which runs the job's kind (``JOBS``: training; training with the rate
term; the quantization sweep; decoding the other backends' bytes) and prints its results as
one JSON line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

import frae
from apps.demo import packet_loss, rate_term
from apps.demo.crossing import decode_in_this_process, keep_stream
from apps.demo.rate_distortion import (
    TRAINED_CODE_STEPS,
    quantized_after_training,
    rate_point,
    snr_db,
)
from frae.config import FRAEConfig

KERAS_BACKENDS = ("tensorflow", "jax", "torch")
"""The Keras backends ``keras_rnn`` runs on, each in its own process (``KERAS_BACKEND``)."""
WORKER_TIMEOUT_S = 600
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
}
"""Each worker's thread settings unless the caller set them: the steps are too small to
share, and waiting threads cost torch_scan many times one thread's time."""
ROOT = Path(__file__).resolve().parents[2]
"""The folder the worker starts in, where ``apps`` is found."""


@dataclass(frozen=True)
class Variant:
    """One backend run in a process of its own: its label in the tables, the registered
    name and the environment (``KERAS_BACKEND`` for Keras)."""

    label: str
    backend: str
    env: dict[str, str]


def variants(backends: Sequence[str] | None = None) -> list[Variant]:
    """Each of ``backends`` (default: every installed one); a Keras port once per
    installed Keras backend: ``keras_rnn[jax]``."""
    found = []
    for name in frae.installed_backends() if backends is None else backends:
        if frae.registry.frameworks_of(name) != ("keras",):
            found.append(Variant(name, name, {}))
            continue
        for framework in KERAS_BACKENDS:
            if importlib.util.find_spec(framework) is not None:
                found.append(Variant(f"{name}[{framework}]", name, {"KERAS_BACKEND": framework}))
    return found


def train_in_this_process(job: dict[str, Any]) -> dict[str, Any]:
    """The worker's training: each model of ``job`` trained on its windows, its weights
    saved, its held-out SNR measured and timed (wall-clock and CPU seconds, and the
    process's CPU seconds, imports included); then the same model trained with each of
    ``TRAINED_CODE_STEPS``, straight through, and its rate point. A model that fails reports
    its error; the others go on."""
    with np.load(job["data"]) as data:
        train, test = data["train"], data["test"]
    results: dict[str, Any] = {}
    for model, fields in job["models"].items():
        begin, begin_cpu = time.perf_counter(), _cpu_seconds()
        try:
            config = FRAEConfig.from_dict(fields)
            backend, history = _fitted(job, config, train)
            path = Path(job["weights"]) / f"{job['label']}-{model}.npz"
            frae.save_weights(path, backend.get_weights())
            results[model] = {
                "loss": history["loss"],
                "snr_db": snr_db(test, backend.predict(test)),
                "weights": str(path),
                "seconds": time.perf_counter() - begin,
                "cpu_seconds": _cpu_seconds() - begin_cpu,
            }
            results[model]["trained_quantized"] = [
                asdict(
                    rate_point(_fitted(job, replace(config, code_step=step), train)[0], test, train)
                )
                for step in TRAINED_CODE_STEPS
            ]
        except Exception as error:  # reported in the table, the other model still runs
            results[model] = {"error": _first_line(error)}
    return {"models": results, "cpu_seconds": _cpu_seconds()}


def rate_in_this_process(job: dict[str, Any]) -> dict[str, Any]:
    """The worker's training with the rate term: each model of ``job`` at each λ
    (``apps.demo.rate_term``), trained as the job says, and its rate point under its learned
    prior, each stream kept in ``job["streams"]`` (``apps.demo.crossing``). A model that
    fails, as on a backend without the rate term, reports its error (``rate_error``) beside
    the other results of the model."""
    with np.load(job["data"]) as data:
        train, test = data["train"], data["test"]
    results: dict[str, Any] = {}
    for model, fields in job["models"].items():
        keep = partial(keep_stream, Path(job["streams"]) / model)
        fitted = partial(_fitted_model, job, train)
        try:
            points = rate_term.rate_trained(FRAEConfig.from_dict(fields), test, train, fitted, keep)
            results[model] = {"rate_trained": [asdict(point) for point in points]}
        except Exception as error:  # the table shows it; the model's other points stand
            results[model] = {"rate_error": _first_line(error)}
    return {"models": results, "cpu_seconds": _cpu_seconds()}


def _first_line(error: Exception) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0]


def _fitted_model(job: dict[str, Any], train: np.ndarray, config: FRAEConfig) -> frae.Backend:
    return _fitted(job, config, train)[0]


def _fitted(
    job: dict[str, Any], config: FRAEConfig, train: np.ndarray
) -> tuple[frae.Backend, dict[str, Any]]:
    """A model of ``config`` on ``job``'s backend, trained as the job says, and its history."""
    backend = frae.create(job["backend"], config, seed=job["seed"])
    return backend, backend.fit(
        train,
        epochs=job["epochs"],
        batch_size=job["batch_size"],
        optimizer="adam",
        learning_rate=job["learning_rate"],
        shuffle=True,
        seed=job["seed"],
    )


def quantize_in_this_process(job: dict[str, Any]) -> dict[str, Any]:
    """The worker's sweep: each model's float weights (``job["trained"]``, one backend's)
    quantized after training at each of ``CODE_STEPS`` by this backend's quantized model, each
    stream kept in ``job["streams"]`` (``apps.demo.crossing``); then sent as one long stream
    and received through lost packets (``apps.demo.packet_loss``)."""
    with np.load(job["data"]) as data:
        train, test = data["train"], data["test"]
    results: dict[str, Any] = {}
    for model, fields in job["models"].items():
        try:
            weights = frae.load_weights(job["trained"][model])
            keep = partial(keep_stream, Path(job["streams"]) / model)
            config = FRAEConfig.from_dict(fields)
            points = quantized_after_training(job["backend"], config, weights, test, train, keep)
            results[model] = {
                "after_training": [asdict(point) for point in points],
                "packet_loss": packet_loss.measured(job["backend"], config, weights, test, train),
            }
        except Exception as error:  # reported in the table, the other model still runs
            results[model] = {"error": _first_line(error)}
    return {"models": results, "cpu_seconds": _cpu_seconds()}


JOBS = {
    "train": train_in_this_process,
    "rate": rate_in_this_process,
    "quantize": quantize_in_this_process,
    "decode": decode_in_this_process,
}
"""The worker's jobs by ``job["kind"]``."""


def _cpu_seconds() -> float:
    """User and system CPU seconds of this process so far, all its threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_variant(variant: Variant, job: dict[str, Any], log: Path) -> dict[str, Any]:
    """``job`` (its kind one of ``JOBS``) in a fresh process with ``variant``'s environment, its
    wall-clock ``seconds`` added; a process that fails gives every model its log's tail as
    the error."""
    env = {**ONE_THREAD, **os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **variant.env}
    job = {**job, "backend": variant.backend, "label": variant.label}
    command = [sys.executable, "-m", "apps.demo.worker", json.dumps(job)]
    start = time.perf_counter()
    try:
        with log.open("w") as errors:
            done = subprocess.run(
                command,
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                timeout=WORKER_TIMEOUT_S,
            )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode == 0 and lines:
            result: dict[str, Any] = json.loads(lines[-1])
        else:
            tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
            result = _failed(job, f"worker exited with {done.returncode}: {tail}")
    except subprocess.TimeoutExpired:
        result = _failed(job, f"timed out after {WORKER_TIMEOUT_S} s")
    return result | {"seconds": time.perf_counter() - start}


def _failed(job: dict[str, Any], reason: str) -> dict[str, Any]:
    return {"models": {model: {"error": reason} for model in job["models"]}, "cpu_seconds": None}


if __name__ == "__main__":  # python -m apps.demo.worker '<job as JSON>'
    job = json.loads(sys.argv[1])
    print(json.dumps(JOBS[job["kind"]](job)), flush=True)
