"""``frae demo``: train both models in every chosen backend, then print the tables and draw
the plots (``run_demo``)."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import frae
from apps.demo import plots, tables
from apps.demo.data import Signal, load_signal
from apps.demo.rate_distortion import rate_distortion
from apps.demo.settings import BATCH_SIZE, CHANNELS, EPOCHS, LEARNING_RATE, MODELS, SEED, WINDOW
from apps.demo.worker import Variant, run_variant, variants

Results = dict[str, dict[str, Any]]
"""Each variant's results by label: ``train_in_this_process``'s, its ``seconds`` added."""


def main(argv: Sequence[str] | None = None, prog: str = "frae demo") -> None:
    """The command line: ``frae demo [--out DIR] [--backends NAME ...] [--epochs N]
    [--jobs N]``."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Both models on a real signal (Japanese Vowels) in every installed backend.",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("reports/demo"), help="folder of plots, weights, logs"
    )
    parser.add_argument(
        "--backends", nargs="+", metavar="NAME", help="these backends (default: every installed)"
    )
    parser.add_argument("--epochs", type=int, help=f"training epochs (default {EPOCHS})")
    parser.add_argument(
        "--jobs", type=int, help="backends trained at once (default: one per CPU, up to 4)"
    )
    args = parser.parse_args(argv)
    for option in ("epochs", "jobs"):
        value = getattr(args, option)
        if value is not None and value < 1:
            parser.error(f"--{option} must be at least 1, got {value}")
    run_demo(args.out, args.backends, args.epochs or EPOCHS, args.jobs)


def run_demo(
    out: Path,
    backends: Sequence[str] | None = None,
    epochs: int = EPOCHS,
    jobs: int | None = None,
) -> Results:
    """Train, measure, plot and print; returns each variant's results by label.

    ``jobs`` workers run at once (default: one per CPU this process may use, up to 4),
    each on one thread (``worker.ONE_THREAD``).
    """
    started = time.perf_counter()
    signal = load_signal()
    for folder in ("weights", "logs"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    chosen = variants(backends)
    jobs = jobs or min(len(os.sched_getaffinity(0)), 4)
    print(
        f"Japanese Vowels: {len(signal.train)} training and {len(signal.test)} held-out windows "
        f"of {WINDOW} frames × {CHANNELS} channels; {epochs} epochs of Adam (learning rate "
        f"{LEARNING_RATE}, batches of {BATCH_SIZE}); {len(chosen)} backends, each in its own "
        f"process, {jobs} at a time",
        flush=True,
    )
    results = train_variants(out, signal, chosen, epochs, jobs)
    report(out, signal, results)
    print(f"total {time.perf_counter() - started:.0f} s")
    return results


def train_variants(
    out: Path, signal: Signal, chosen: Sequence[Variant], epochs: int, jobs: int
) -> Results:
    """Each of ``chosen`` trained by its worker, ``jobs`` at a time; a line per finished one."""
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "windows.npz"
        np.savez(data, train=signal.train, test=signal.test)
        job = {
            "data": str(data),
            "weights": str(out / "weights"),
            "models": {name: config.to_dict() for name, config in MODELS.items()},
            "epochs": epochs,
            "batch_size": BATCH_SIZE,
            "learning_rate": LEARNING_RATE,
            "seed": SEED,
        }

        def run(variant: Variant) -> dict[str, Any]:
            result = run_variant(variant, job, out / "logs" / f"{variant.label}.log")
            print(f"  {variant.label}: {tables.progress(result)}", flush=True)
            return result

        with ThreadPoolExecutor(jobs) as pool:
            return dict(zip((v.label for v in chosen), pool.map(run, chosen), strict=True))


def report(out: Path, signal: Signal, results: Results) -> None:
    """The SNR table; the rate–distortion sweep of the first weights of each model, and its
    table; the plots, in ``out``."""
    print()
    print(tables.snr_table(results))
    weights = {model: frae.load_weights(path) for model, path in first_weights(results).items()}
    curves = {model: rate_distortion(MODELS[model], w, signal.test) for model, w in weights.items()}
    if curves:
        source = ", ".join(Path(p).stem for p in first_weights(results).values())
        print(f"\nClosed-loop rate–distortion on the held-out windows (weights: {source})")
        print(tables.rate_table(curves))
    drawn = [
        plots.plot_losses(out / "loss.png", results),
        plots.plot_reconstruction(out / "reconstruction.png", signal, weights),
        plots.plot_rate_distortion(out / "rate_distortion.png", curves),
    ]
    print(f"\nplots: {', '.join(str(path) for path in drawn)}")


def first_weights(results: Results) -> dict[str, str]:
    """Per model, the weights file of the first variant that trained it (the reference
    comes first when it runs)."""
    found: dict[str, str] = {}
    for result in results.values():
        for model, outcome in result["models"].items():
            if "weights" in outcome:
                found.setdefault(model, outcome["weights"])
    return found
