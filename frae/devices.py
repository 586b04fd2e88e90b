"""How a process gets the devices ``create(..., devices=N)`` trains on, per framework.

A framework fixes its devices, and the cluster of processes it belongs to, when it starts,
so ``start_devices`` runs before the backend's framework does anything. Imports only the
framework it is asked to start, and only when called.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
from typing import Any

from frae.backend import check_device_count
from frae.protocol import Backend
from frae.registry import create, frameworks_of


def framework_of(backend: str) -> str:
    """The framework whose devices ``backend`` trains on: ``jax``, ``tensorflow`` or
    ``torch`` (Keras: its ``KERAS_BACKEND``); ``none`` for a backend given by import path."""
    frameworks = frameworks_of(backend)
    if frameworks == ("keras",):
        return os.environ.get("KERAS_BACKEND", "tensorflow")
    return frameworks[0] if frameworks else "none"


def start_devices(
    framework: str,
    *,
    cpu_devices: int | None = None,
    processes: int = 1,
    process_id: int = 0,
    coordinator: str | None = None,
) -> Any:
    """Give this process ``cpu_devices`` virtual CPU devices and join a cluster of
    ``processes`` (``coordinator``: ``host:port`` of process 0), before ``framework`` starts.

    JAX: ``jax.distributed`` over gloo; TensorFlow: ``MultiWorkerMirroredStrategy`` over
    ``TF_CONFIG`` (workers at ``coordinator``'s port + i); PyTorch: ``torch.distributed``.

    Returns TensorFlow's strategy, under whose scope the backend is created, or ``None``.
    """
    if framework == "jax":
        jax = importlib.import_module("jax")
        if cpu_devices:
            jax.config.update("jax_num_cpu_devices", cpu_devices)
        if processes > 1:
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
            jax.distributed.initialize(coordinator, processes, process_id)
        return None
    if framework == "tensorflow":
        if processes > 1 and coordinator:
            host, port = coordinator.rsplit(":", 1)
            workers = [f"{host}:{int(port) + index}" for index in range(processes)]
            task = {"type": "worker", "index": process_id}
            os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": task})
        tf = importlib.import_module("tensorflow")
        if cpu_devices:
            cpu = tf.config.list_physical_devices("CPU")[0]
            virtual = [tf.config.LogicalDeviceConfiguration() for _ in range(cpu_devices)]
            tf.config.set_logical_device_configuration(cpu, virtual)
        if processes > 1 or "TF_CONFIG" in os.environ:
            # created first: it starts the collective server the workers talk through
            return tf.distribute.MultiWorkerMirroredStrategy()
        return None
    if framework == "torch" and processes > 1:
        distributed = importlib.import_module("torch.distributed")
        distributed.init_process_group(
            "gloo", init_method=f"tcp://{coordinator}", rank=process_id, world_size=processes
        )
    return None


def create_in(context: Any, backend: str, **options: Any) -> Backend:
    """``frae.create(backend, **options)``, under the scope of ``context``, the strategy
    ``start_devices`` returned, if any."""
    with contextlib.nullcontext() if context is None else context.scope():
        return create(backend, **options)


def tensorflow_strategy(devices: int) -> Any:
    """The ``tf.distribute`` strategy that trains on ``devices`` replicas: the one in scope
    (e.g. the ``MultiWorkerMirroredStrategy`` of ``start_devices``, under whose scope
    ``create`` runs), which must have exactly that many; else a ``MirroredStrategy`` over
    this process's first ``devices`` logical GPUs, or CPUs where it has no GPU."""
    tf = importlib.import_module("tensorflow")
    if tf.distribute.has_strategy():
        strategy = tf.distribute.get_strategy()
        replicas = strategy.num_replicas_in_sync
        if devices != replicas:
            raise ValueError(
                f"devices={devices}, but the {type(strategy).__name__} in scope has "
                f"{replicas} replicas: under it, devices must be {replicas} (or None, to "
                "train on one device)"
            )
        return strategy
    kind = "GPU" if tf.config.list_logical_devices("GPU") else "CPU"
    present = tf.config.list_logical_devices(kind)
    check_device_count(devices, len(present), f"TensorFlow's logical {kind} device list")
    return _mirrored_strategy(tuple(device.name for device in present[:devices]))


@functools.cache
def _mirrored_strategy(devices: tuple[str, ...]) -> Any:
    """One ``MirroredStrategy`` per set of devices for the whole process. Two strategies over
    the same devices number their collectives alike: a second model's all-reduce then meets
    the first's under the same instance key and TensorFlow aborts ("Shape mismatch in the
    collective instance")."""
    return importlib.import_module("tensorflow").distribute.MirroredStrategy(list(devices))
