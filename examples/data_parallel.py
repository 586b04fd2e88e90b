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
devices and its cluster when it starts, so ``frae.devices.start_devices`` runs before the
backend is created. PyTorch's devices are processes (``torch_scan``: one device per
process), so it takes ``--processes N`` for ``--devices N``. For TensorFlow (``tf_while``,
and ``keras_rnn`` on TensorFlow), ``--coordinator`` is the first worker's address and
worker i listens on its port + i; on several hosts, set ``TF_CONFIG`` on each instead, as
``tf.distribute.MultiWorkerMirroredStrategy`` reads it.
"""

from __future__ import annotations

import argparse

import numpy as np

import frae
from frae.devices import create_in, framework_of, start_devices


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
    context = start_devices(
        framework_of(args.backend),
        cpu_devices=args.cpu_devices,
        processes=args.processes,
        process_id=args.process_id,
        coordinator=args.coordinator,
    )
    model = create_in(context, args.backend, devices=args.devices)
    x = frae.data.multi_sine(batch=8 * args.devices, steps=200)
    history = model.fit(x, batch_size=4 * args.devices, epochs=args.epochs)["loss"]
    checksum = float(sum(np.abs(value).sum() for value in model.get_weights().values()))
    if args.process_id == 0:
        print(
            f"{args.backend} on {args.devices} devices: loss {history[0]:.5f} -> "
            f"{history[-1]:.5f} over {len(history)} steps; weights' |sum| {checksum:.6f}"
        )


if __name__ == "__main__":
    main()
