"""Train part of the way on one framework, checkpoint, and finish on another: one loss curve.

    python -m examples.resume_across_frameworks --first jax_scan --then torch_scan

The first backend trains ``--first-epochs`` epochs and writes a checkpoint (the weights and
Adam's state, one safetensors file); a fresh model of the second backend loads it and
trains the rest. The curve is printed step by step beside the same run on the second
backend alone, uninterrupted: Adam's moments and step count and the shuffle's epoch carry
over, so the two agree to float32 rounding (the contract's "Training state").
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import frae
from frae.data import multi_sine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--first", default="jax_scan", help="the backend that starts")
    parser.add_argument("--then", default="torch_scan", help="the backend that finishes")
    parser.add_argument("--first-epochs", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=20, help="epochs in all")
    parser.add_argument("--checkpoint", type=Path, help="where to write it (default: a temp file)")
    args = parser.parse_args()

    x = multi_sine(batch=16, steps=100, seed=0)
    options = {"batch_size": 4, "shuffle": True, "seed": 1, "learning_rate": 1e-2}
    first = frae.create(args.first, seed=0)
    started = first.fit(x, epochs=args.first_epochs, **options)
    path = args.checkpoint or Path(tempfile.mkdtemp()) / "frae.safetensors"
    frae.save_checkpoint(path, first.get_weights(), started["training_state"])

    weights, state = frae.load_checkpoint(path)
    then = frae.create(args.then, weights=weights)
    finished = then.fit(x, epochs=args.epochs - args.first_epochs, **options, training_state=state)
    alone = frae.create(args.then, seed=0).fit(x, epochs=args.epochs, **options)["loss"]

    curve = started["loss"] + finished["loss"]
    print(f"checkpoint after step {state.step}, epoch {state.epoch}: {path}")
    print(f"{'step':>5}  {'backend':<12} {'loss':>10}  {args.then + ' alone':>16}")
    for step, (loss, reference) in enumerate(zip(curve, alone, strict=True), start=1):
        backend = args.first if step <= len(started["loss"]) else args.then
        print(f"{step:>5}  {backend:<12} {loss:>10.6f}  {reference:>16.6f}")
    gap = max(abs(a - b) / b for a, b in zip(curve, alone, strict=True))
    print(f"largest relative gap from the uninterrupted run: {gap:.2e}")


if __name__ == "__main__":
    main()
