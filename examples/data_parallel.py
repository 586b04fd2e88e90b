"""Data-parallel training of one FRAE on N devices, in one process or in several.

One process, four virtual CPU devices (a machine with four accelerators needs no
``--cpu-devices``):

    python -m examples.data_parallel --backend jax_scan --devices 4 --cpu-devices 4

Two processes, one device each, on two hosts (or both on this one); run the same command
on every host with its own ``--process-id``:

    python -m examples.data_parallel --backend jax_scan --devices 2 \\
        --processes 2 --process-id 0 --coordinator host0:12355

Every process passes ``fit`` the same data; each feeds only its own devices their part of
each mini-batch, and every process ends with the same weights. A framework fixes its
devices and its cluster when it starts, so ``start`` runs before the backend is created.
For TensorFlow (``tf_while``, and ``keras_rnn`` on TensorFlow), ``--coordinator`` is the
first worker's address and worker i listens on its port + i; on several hosts, set
``TF_CONFIG`` on each instead, as ``tf.distribute.MultiWorkerMirroredStrategy`` reads it.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import numpy as np

import frae
from frae.registry import frameworks_of


def framework_of(backend: str) -> str:
    """The framework whose devices ``backend`` trains on: ``jax``, ``tensorflow`` or
    ``torch`` (Keras: its ``KERAS_BACKEND``)."""
    frameworks = frameworks_of(backend)
    if frameworks == ("keras",):
        return os.environ.get("KERAS_BACKEND", "tensorflow")
    return frameworks[0] if frameworks else "none"


def start(
    framework: str,
    *,
    cpu_devices: int | None = None,
    processes: int = 1,
    process_id: int = 0,
    coordinator: str | None = None,
) -> Any:
    """Give this process ``cpu_devices`` virtual CPU devices and join a cluster of
    ``processes``, before the framework starts; returns what the backend needs from it
    (TensorFlow's ``MultiWorkerMirroredStrategy``, under whose scope ``create`` runs), or
    ``None``."""
    if framework == "jax":
        import jax

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
            cluster = {"cluster": {"worker": workers}}
            os.environ["TF_CONFIG"] = json.dumps(
                cluster | {"task": {"type": "worker", "index": process_id}}
            )
        import tensorflow as tf

        if cpu_devices:
            cpu = tf.config.list_physical_devices("CPU")[0]
            virtual = [tf.config.LogicalDeviceConfiguration() for _ in range(cpu_devices)]
            tf.config.set_logical_device_configuration(cpu, virtual)
        if processes > 1 or "TF_CONFIG" in os.environ:
            # created first: it starts the collective server the workers talk through
            return tf.distribute.MultiWorkerMirroredStrategy()
        return None
    if framework == "torch" and processes > 1:
        import torch.distributed

        torch.distributed.init_process_group(
            "gloo", init_method=f"tcp://{coordinator}", rank=process_id, world_size=processes
        )
    return None


def create(backend: str, context: Any, **options: Any) -> frae.Backend:
    """``frae.create(backend, **options)``, under the scope of ``start``'s strategy if any."""
    if context is None:
        return frae.create(backend, **options)
    with context.scope():
        return frae.create(backend, **options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--backend", default="jax_scan")
    parser.add_argument("--devices", type=int, default=2, help="devices to train on")
    parser.add_argument("--cpu-devices", type=int, help="virtual CPU devices per process")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    parser.add_argument("--coordinator", default="localhost:12355", help="host:port")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    context = start(
        framework_of(args.backend),
        cpu_devices=args.cpu_devices,
        processes=args.processes,
        process_id=args.process_id,
        coordinator=args.coordinator,
    )
    model = create(args.backend, context, devices=args.devices)
    x = frae.data.multi_sine(batch=8 * args.devices, steps=200)
    history = model.fit(x, batch_size=4 * args.devices, epochs=args.epochs)["loss"]
    weights = model.get_weights()
    checksum = float(sum(np.abs(value).sum() for value in weights.values()))
    if args.process_id == 0:
        print(
            f"{args.backend} on {args.devices} devices: loss {history[0]:.5f} -> "
            f"{history[-1]:.5f} over {len(history)} steps; weights' |sum| {checksum:.6f}"
        )


if __name__ == "__main__":
    main()
