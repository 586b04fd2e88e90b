"""torch_scan's training step under ``DistributedDataParallel``, beside one process.

    python -m bench.data_parallel_torch [--backend torch_scan] [--processes 2] \\
        [--threads 1] [--batch 256] [--steps 1000]

PyTorch's devices are processes, one each, which the benchmark's one-process workers do
not launch; this starts ``--processes`` of them on localhost (gloo), each with
``--threads`` torch threads, times ``fit`` steps on the whole batch (each process training
on its part), and prints µs per time step (median and quartiles of 5 samples of 2 steps)
next to one process with torch's default threads.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

import numpy as np

SAMPLES, STEPS_PER_SAMPLE = 5, 2


def measure(backend: str, processes: int, rank: int, port: int, batch: int, steps: int) -> None:
    """One process's part: warm up, time ``SAMPLES`` fits; rank 0 prints the figures."""
    import frae
    from frae.devices import start_devices

    start_devices("torch", processes=processes, process_id=rank, coordinator=f"localhost:{port}")
    x = frae.data.multi_sine(batch, steps)
    model = frae.create(backend, devices=processes if processes > 1 else None)
    model.fit(x)
    model.fit(x)
    seconds = []
    for _ in range(SAMPLES):
        begin = time.perf_counter()
        model.fit(x, epochs=STEPS_PER_SAMPLE)
        seconds.append((time.perf_counter() - begin) / STEPS_PER_SAMPLE / steps)
    if rank == 0:
        q1, median, q3 = np.percentile(np.array(seconds) * 1e6, [25, 50, 75])
        print(f"{backend}, {processes} process(es): {median:.1f} µs/step (IQR {q1:.1f}-{q3:.1f})")


def launch(args: argparse.Namespace, processes: int, threads: int | None) -> None:
    """Run ``processes`` workers together, each with ``threads`` torch threads if given."""
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    env = os.environ | ({"OMP_NUM_THREADS": str(threads)} if threads else {})
    command = [sys.executable, "-m", "bench.data_parallel_torch", "--backend", args.backend]
    command += ["--batch", str(args.batch), "--steps", str(args.steps)]
    workers = [
        subprocess.Popen([*command, "--worker", f"{rank},{processes},{port}"], env=env)
        for rank in range(processes)
    ]
    if any(worker.wait() for worker in workers):
        raise SystemExit("a worker failed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--backend", default="torch_scan")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        rank, processes, port = map(int, args.worker.split(","))
        measure(args.backend, processes, rank, port, args.batch, args.steps)
        return
    launch(args, 1, None)
    launch(args, args.processes, args.threads)


if __name__ == "__main__":
    main()
