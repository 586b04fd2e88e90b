"""Data-parallel training of one FRAE on N devices, in one process or in several: the
launcher of docs/data_parallel.md ("Starting the devices"), which gives its commands."""

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
