"""Kill a checkpoint writer at random points and read what it left (run as a script).

    python tests/checkpoint_crashes.py FOLDER KILLS SEED

Each round forks a writer that saves checkpoints to ``FOLDER/run.safetensors`` in a loop,
numbering them on from the file's own (version n: every weight n, Adam's m n + 0.5 and v
n + 0.25, step n) and telling the parent through a pipe each one it finished; the parent
sends it SIGKILL after a random pause and reads the file. Prints one JSON object: the
kills, the versions read after them, and every round where the file was not the last
version finished or the one after it (torn, mixed or unreadable). Only NumPy, safetensors
and ``frae`` are imported, so forking is safe.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import numpy as np

import frae

CONFIG = frae.FRAEConfig(encoder_units=(128,), decoder_units=(128,))
"""About 3,000 weights: each save writes some 40 KB, so kills land mid-write too."""


def version(n: int) -> tuple[dict[str, np.ndarray], frae.TrainingState]:
    shapes = CONFIG.parameter_shapes()
    weights = {name: np.full(shape, n, np.float32) for name, shape in shapes.items()}
    m = {name: np.full(shape, n + 0.5, np.float32) for name, shape in shapes.items()}
    v = {name: np.full(shape, n + 0.25, np.float32) for name, shape in shapes.items()}
    return weights, frae.TrainingState("adam", n, 0, m, v)


def read_version(path: Path) -> int:
    """The version the file holds, or -1 when it holds no single whole version."""
    weights, state = frae.load_checkpoint(path, CONFIG)
    if state is None:
        return -1
    n = state.step
    expected_weights, expected_state = version(n)
    same = all(np.array_equal(weights[k], expected_weights[k]) for k in weights)
    same = same and all(np.array_equal(state.m[k], expected_state.m[k]) for k in state.m)
    same = same and all(np.array_equal(state.v[k], expected_state.v[k]) for k in state.v)
    return n if same else -1


def write_forever(path: Path, first: int, done: int) -> None:
    n = first
    while True:
        frae.save_checkpoint(path, *version(n), config=CONFIG)
        os.write(done, n.to_bytes(8, "little"))
        n += 1


def finished(reader: int) -> list[int]:
    data = b""
    while chunk := os.read(reader, 65536):
        data += chunk
    return [int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data) - 7, 8)]


def main(folder: Path, kills: int, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    path = folder / "run.safetensors"
    frae.save_checkpoint(path, *version(0), config=CONFIG)
    current, seen, bad = 0, [], []
    for round_ in range(kills):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer: it never returns into the loop
            try:
                os.close(reader)
                write_forever(path, current + 1, writer)
            finally:
                os._exit(1)
        os.close(writer)
        time.sleep(rng.uniform(0.0, 0.02))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        last = max(finished(reader), default=current)
        os.close(reader)
        try:
            found = read_version(path)
        except (ValueError, TypeError) as error:
            found, reason = -1, str(error)
        else:
            reason = ""
        if found not in (last, last + 1):
            bad.append({"round": round_, "last": last, "found": found, "error": reason[:300]})
        current = max(found, last)
        seen.append(found)
    leftovers = sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))
    return {"kills": kills, "seen": seen, "bad": bad, "temporary_files_left": len(leftovers)}


if __name__ == "__main__":
    target, count, draw = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(main(target, count, draw)))
