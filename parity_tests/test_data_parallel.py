"""``create(..., devices=N)``: data-parallel training equals training on one device, each run
in processes of its own (``data_parallel_worker.py``), as a framework fixes its devices."""

from __future__ import annotations

import inspect
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from frae.devices import framework_of
from frae.registry import REGISTRY, _load, factory_of, takes_devices
from parity_tests import data_parallel_worker
from parity_tests.checks import assert_same_weights
from parity_tests.tolerances import assert_close

ROOT = Path(__file__).resolve().parent.parent
VIRTUAL_DEVICES = 4
"""Devices of the one-process run: more than two, so a mean over two would not pass."""

MODELS = tuple(data_parallel_worker.MODELS)
ENGINES = {"jax": "jax.sharding", "tensorflow": "tf.distribute", "torch": "DDP"}


def models_of(training_only: bool, models: tuple[str, ...] = MODELS) -> tuple[str, ...]:
    """``models`` but, for a training-only backend, those with a rate weight, which it
    refuses."""
    configs = data_parallel_worker.MODELS
    return tuple(m for m in models if not training_only or configs[m].rate_weight is None)


def framework(backend: str) -> str:
    """The framework ``backend`` trains on: for an import path, that of the registered
    backend it derives from, or ``"none"``."""
    if backend in REGISTRY:
        return framework_of(backend)
    cls = _load(backend)
    for name, entry in REGISTRY.items():
        # a class that derives from a registered backend imported its module: none other
        # is imported here (each would start its framework)
        if name == "reference" or entry.target.partition(":")[0] not in sys.modules:
            continue
        if inspect.isclass(cls) and issubclass(cls, _load(entry.target)):
            return framework_of(name)
    return "none"


def has_engine(backend: str) -> bool:
    """Whether ``backend`` is expected to train on several devices (Keras: on JAX or TF)."""
    return framework(backend) in ENGINES and not (
        framework_of("keras_rnn") == "torch" and backend == "keras_rnn"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


def run_workers(
    backend: str,
    tmp_path: Path,
    *,
    devices: int,
    processes: int,
    cpu_devices: int | None,
    models: tuple[str, ...] = MODELS,
) -> list[dict[str, Any]]:
    """Run ``processes`` workers together, each training ``models``; each one's results."""
    port = free_port()
    commands, outputs = [], []
    for process_id in range(processes):
        out = tmp_path / f"process_{process_id}.json"
        command = [sys.executable, "-m", "parity_tests.data_parallel_worker"]
        command += ["--backend", backend, "--framework", framework(backend)]
        command += ["--devices", str(devices), "--out", str(out), "--models", *models]
        if cpu_devices:
            command += ["--cpu-devices", str(cpu_devices)]
        if processes > 1:
            command += ["--processes", str(processes), "--process-id", str(process_id)]
            command += ["--coordinator", f"localhost:{port}"]
        commands.append(command)
        outputs.append(out)
    environment = os.environ | {"PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    running = [
        subprocess.Popen(command, cwd=ROOT, env=environment, stderr=subprocess.PIPE, text=True)
        for command in commands
    ]
    errors = [process.communicate(timeout=600)[1] for process in running]
    for process, error in zip(running, errors, strict=True):
        assert process.returncode == 0, error[-3000:]
    return [json.loads(out.read_text()) for out in outputs]


def float32(run: dict[str, Any], quantity: str) -> np.ndarray:
    """``run[quantity]`` (``"weights/NAME"``: a weight) as the float32 array it was."""
    value = run
    for key in quantity.split("/", 1):
        value = value[key]
    return np.array(value, np.float32)


def assert_same_training(result: dict[str, Any], devices: int, first: dict[str, Any]) -> None:
    """For each model, N devices' run equals one device's (made by the ``first`` process);
    the contract's errors."""
    assert "refused" not in result, result.get("refused")
    assert set(result) & set(MODELS), "no model trained"
    for model in set(result) & set(MODELS):
        runs = result[model]
        many, one = runs["many"], first[model]["one"]
        weights = [f"{kind}/{name}" for kind in ("weights", "m", "v") for name in one["weights"]]
        for quantity in ("loss", "predict", *weights):
            what = f"{model}: {quantity}"
            assert_close("devices", float32(many, quantity), float32(one, quantity), what)
        assert many["counts"] == one["counts"] == [6, 3], (many["counts"], one["counts"])
        assert f"devices={devices}" in runs["uneven"] and str(devices + 1) in runs["uneven"]
        assert runs["uneven_kept_weights"]
        assert f"devices={devices * 64}" in runs["too_many"]


@pytest.mark.processes
def test_data_parallel_equals_one_device(
    backend_spec: str, tmp_path: Path, training_only: bool
) -> None:
    """Training on four virtual CPU devices in one process equals training on one."""
    if not has_engine(backend_spec):
        pytest.skip("no data-parallel engine: test_devices_refused_without_engine")
    if framework(backend_spec) == "torch":  # no process group here: one device
        with pytest.raises(ValueError, match=f"devices={VIRTUAL_DEVICES}, but torch"):
            frae.create(backend_spec, devices=VIRTUAL_DEVICES)
        return
    (result,) = run_workers(
        backend_spec,
        tmp_path,
        devices=VIRTUAL_DEVICES,
        processes=1,
        cpu_devices=VIRTUAL_DEVICES,
        models=models_of(training_only),
    )
    assert_same_training(result, VIRTUAL_DEVICES, result)


@pytest.mark.processes
def test_data_parallel_across_processes(
    backend_spec: str, tmp_path: Path, training_only: bool
) -> None:
    """Two processes on localhost, one device each, end where one device ends."""
    if not has_engine(backend_spec):
        pytest.skip("no data-parallel engine: test_devices_refused_without_engine")
    if training_only and framework(backend_spec) != "torch":
        pytest.skip("its twin's engine, its gradient checked on 4 devices in one process")
    # the one-process test trained every model; what a cluster adds is the same for each
    models = models_of(training_only) if framework(backend_spec) == "torch" else ("output",)
    results = run_workers(
        backend_spec, tmp_path, devices=2, processes=2, cpu_devices=None, models=models
    )
    for result in results:
        assert_same_training(result, 2, results[0])


def test_devices_refused_without_engine(backend_spec: str) -> None:
    """A backend without an engine refuses ``devices`` > 1 and leaves the weights given."""
    if has_engine(backend_spec):
        pytest.skip("has a data-parallel engine: test_data_parallel_equals_one_device")
    weights = frae.create(backend_spec, seed=1).get_weights()
    given = {name: value.copy() for name, value in weights.items()}
    with pytest.raises(ValueError, match=r"\bdevices\b"):
        frae.create(backend_spec, weights=given, devices=2)
    assert_same_weights(given, weights)
    if takes_devices(factory_of(backend_spec)):
        assert frae.create(backend_spec, devices=1).get_weights().keys()
    else:
        with pytest.raises(ValueError, match=r"\bdevices\b"):
            frae.create(backend_spec, devices=1)
