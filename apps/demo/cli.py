"""``frae demo``: train both models in every chosen backend, then print the tables and draw
the plots (``run_demo``)."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import frae
from apps.demo import crossing, plots, tables
from apps.demo.data import Signal, load_signal
from apps.demo.rate_distortion import step_label
from apps.demo.rate_term import RATE_CODE_STEP
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
    out: Path, backends: Sequence[str] | None = None, epochs: int = EPOCHS, jobs: int | None = None
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
    job = {
        "models": {name: config.to_dict() for name, config in MODELS.items()},
        "weights": str(out / "weights"),
        "streams": str(out / "streams"),
        "epochs": epochs,
        "batch_size": BATCH_SIZE,
        "learning_rate": LEARNING_RATE,
        "seed": SEED,
    }
    results = run_variants(out, signal, chosen, first_jobs(job), jobs)
    if trained := first_weights(results):
        sources = ", ".join(Path(path).stem for path in trained.values())
        print(f"Quantized after training, the weights of {sources}:")
        job |= {"trained": trained}
        merge(results, run_variants(out, signal, chosen, [{**job, "kind": "quantize"}], jobs))
    if wanted := crossing.streams_to_decode(results):
        print("Each backend decoding the bytes of the others, where they differ from its own:")
        receivers = [variant for variant in chosen if variant.label in wanted]
        decode = {**job, "kind": "decode", "decode": wanted}
        merge(results, run_variants(out, signal, receivers, [decode], jobs))
    report(out, signal, results)
    print(f"total {time.perf_counter() - started:.0f} s")
    return results


def first_jobs(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The jobs that need nothing but the windows, run side by side: training, and training
    with the rate term, a job a model (each trains fewer models than the training job, so
    that none runs longer than it)."""
    rate = [
        {**job, "kind": "rate", "models": {model: fields}, "part": model}
        for model, fields in job["models"].items()
    ]
    return [{**job, "kind": "train"}, *rate]


def merge(results: Results, more: Results) -> None:
    """Each model's outcome in ``more`` added to its variant's in ``results`` (the variant
    taken whole where ``results`` has none)."""
    for label, found in more.items():
        if label not in results:
            results[label] = found
            continue
        for model, outcome in found["models"].items():
            results[label]["models"].setdefault(model, {}).update(outcome)


def run_variants(
    out: Path, signal: Signal, chosen: Sequence[Variant], kinds: Sequence[dict[str, Any]], jobs: int
) -> Results:
    """Each job of ``kinds`` run by each of ``chosen``'s workers, ``jobs`` at a time, in that
    order; a line per finished one. A variant's results are its first job's, each model's
    outcomes of the others merged in (``merge``)."""
    tasks = [(variant, job) for job in kinds for variant in chosen]
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "windows.npz"
        np.savez(data, train=signal.train, test=signal.test)

        def run(task: tuple[Variant, dict[str, Any]]) -> dict[str, Any]:
            variant, job = task
            kind = "-".join(filter(None, (job["kind"], job.get("part"))))
            log = out / "logs" / f"{variant.label}-{kind}.log"
            result = run_variant(variant, {**job, "data": str(data)}, log)
            print(f"  {variant.label} ({kind}): {tables.progress(result)}", flush=True)
            return result

        with ThreadPoolExecutor(jobs) as pool:
            done = list(pool.map(run, tasks))
    results: Results = {}
    for (variant, _), result in zip(tasks, done, strict=True):
        merge(results, {variant.label: result})
    return results


def report(out: Path, signal: Signal, results: Results) -> None:
    """The SNR table; each model's rate table, quantized after training and trained
    quantized, its bytes, the counted prior's curve beside the rate term's, and its tables of
    lost packets; printed, and written to ``out`` as
    ``tables.txt`` beside every variant's results (``results.json``) and the plots."""
    sections = [tables.snr_table(results)]
    for model in MODELS:
        sections += [
            f"{model} feedback, quantized (bits per frame, held-out SNR)",
            tables.rate_table(results, model),
            f"{model} feedback in real bytes (frae.codec), quantized after training:",
            tables.bytes_table(results, model),
            f"{model} feedback, the counted prior's curve and the rate term's at Δ = "
            f"{step_label(RATE_CODE_STEP)}, in real bytes (each figure every backend's, one "
            "where they round alike):",
            tables.rate_term_table(results, model),
        ]
        if sweeps := tables.loss_sweeps(results, model):
            sections += [
                f"{model} feedback through lost packets (held-out SNR dB): {sweeps[0]['frames']} "
                f"held-out frames end to end, a packet each, at Δ = "
                f"{step_label(sweeps[0]['step'])} after training; losses in bursts of "
                f"{sweeps[0]['burst']:g} on average, the opening packet never lost",
                tables.loss_table(results, model),
                f"{model} feedback: each concealment (held-out SNR dB, of every frame and of the "
                "lost frames alone)",
                tables.concealment_table(results, model),
                tables.stand_in_line(sweeps[0]),
            ]
    text = "\n\n".join(sections)
    print(f"\n{text}")
    (out / "tables.txt").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    weights = {model: frae.load_weights(path) for model, path in first_weights(results).items()}
    drawn = [
        plots.plot_losses(out / "loss.png", results),
        plots.plot_reconstruction(out / "reconstruction.png", signal, weights),
        plots.plot_rate_distortion(out / "rate_distortion.png", results),
        plots.plot_rate_term(out / "rate_term.png", results),
        plots.plot_packet_loss(out / "packet_loss.png", results),
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
