"""Both FRAE models on a real signal, in every installed backend: ``frae demo``.

The signal is Japanese Vowels (UCI; Kudo, Toyama and Shimbo, 1999): nine speakers saying
/ae/, each utterance 7 to 29 frames of 12 LPC cepstrum coefficients, 270 utterances for
training and 370 held out. It is measured speech, not a synthetic curve; multichannel, with
channels that share information (a code of 4 for a frame of 12 has something to exploit);
small enough to train on in seconds in every backend; and it ships inside sktime (the
``demo`` extra), so nothing is downloaded when the demo runs.

The contract takes (B, T, F) arrays and has no masks, so each utterance is cut into
non-overlapping windows of T = 7 frames (the shortest utterance's length) from its start:
every frame of every window is real data, each window is one sequence from a zero
feedback, and the last ``n mod 7`` frames of each utterance (about a fifth of all frames)
are left out, where padding would have needed a mask. Training windows beyond a whole
number of mini-batches are left out too (one of 501), so every step has one shape and a
compiled backend traces once. Each channel is standardised with the mean and standard
deviation of the training frames alone; standardised coefficients reach beyond ±4, no
bounded activation's range, so both models end in ``output_activation="linear"``. The SNR,
10·log10(Σ x² / Σ (x − x̂)²) over the held-out windows, is in those units: predicting the
training mean scores 0 dB.

Each backend trains both models, output feedback (contract section 1) and GRU state
feedback (section 1b), from the same initial weights, on the same windows, with the same
Adam settings and shuffling, each in a process of its own (Keras' backend is fixed when it
starts), one thread each, as many at once as there are CPUs (up to 4).

The rate–distortion view rounds each code to a grid of step Δ inside the recurrence,
ẑ_t = Δ·round(z_t / Δ): the decoder sees only ẑ_t, and through the feedback so does the
encoder at t + 1, as at a receiver (``closed_loop``). The rate is the empirical entropy of
the rounded codes, summed over the L code dimensions, in bits per frame
(``bits_per_frame``).

    frae demo [--out reports/demo] [--backends NAME ...] [--epochs N] [--jobs N]
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import frae
from frae.config import FRAEConfig
from frae.params import Weights

Array = npt.NDArray[np.float64]
Windows = npt.NDArray[np.float32]

WINDOW = 7
"""Frames per sequence: the shortest utterance's length."""
CHANNELS = 12
BATCH_SIZE = 250
EPOCHS = 150
LEARNING_RATE = 0.02
"""300 Adam steps, two mini-batches an epoch: the reference reaches the held-out SNR of
1500 steps in batches of 50 with them, in a fifth of the steps a slow backend pays for."""
SEED = 0
CODE_STEPS = tuple(2.0**k for k in range(1, -9, -1))
"""The grid steps Δ of the rate–distortion sweep, 2 down to 1/256: the codes are tanh
outputs in (−1, 1), so Δ = 2 leaves one symbol (0 bits) and 1/256 about 9 bits a dimension."""
KERAS_BACKENDS = ("tensorflow", "jax", "torch")
"""The Keras backends ``keras_rnn`` runs on, each in its own process (``KERAS_BACKEND``)."""
OUTPUT_FEEDBACK = FRAEConfig(
    input_dim=CHANNELS,
    encoder_units=(32,),
    latent_dim=4,
    decoder_units=(32,),
    activation="tanh",
    output_activation="linear",
)
MODELS = {
    "output": OUTPUT_FEEDBACK,
    "state": replace(OUTPUT_FEEDBACK, feedback="state", state_dim=16),
}
"""Both models by the feedback they use: 12 channels through a code of 4, one hidden layer
of 32 a side, tanh inside; the state model's GRU has 16 units."""
PLOTTED_CHANNELS = (0, 1, 2)
WORKER_TIMEOUT_S = 600
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
}
"""Each worker's thread settings unless the caller set them: the steps are too small to
share, and on a busy machine threads that wait at every barrier cost torch_scan 30× the
time of one (measured at B = 250, T = 7)."""


@dataclass(frozen=True)
class Signal:
    """The standardised windows of both splits, (B, T, F) float32, and the held-out
    utterances whole, (T_i, F) each, for the plots."""

    train: Windows
    test: Windows
    test_utterances: list[Windows]
    mean: Array
    scale: Array


def read_utterances(split: str) -> list[Array]:
    """The utterances of ``split`` ("train" or "test"), (frames, 12) each, by sktime's loader
    of the copy it ships."""
    try:
        datasets = importlib.import_module("sktime.datasets")
    except ModuleNotFoundError as error:
        raise ImportError(
            f"frae demo reads its data with sktime: pip install 'frae[demo]' ({error})"
        ) from error
    # sktime's nested frame, one series per channel a cell: the form its reader makes, so
    # the quickest to ask for (a list of frames costs it seconds more)
    nested, _ = datasets.load_japanese_vowels(split=split, return_type="nested_univ")
    return [
        np.stack([channel.to_numpy() for channel in row], axis=1) for _, row in nested.iterrows()
    ]


def cut_windows(utterances: Sequence[npt.NDArray[Any]], length: int) -> npt.NDArray[Any]:
    """Non-overlapping windows of ``length`` frames from each utterance's start, (N, length,
    F): utterance u gives ``len(u) // length`` windows and leaves its last frames out."""
    windows = [
        utterance[start : start + length]
        for utterance in utterances
        for start in range(0, len(utterance) - length + 1, length)
    ]
    return np.stack(windows)


def load_signal(window: int = WINDOW, batch_size: int = BATCH_SIZE) -> Signal:
    """Japanese Vowels as ``prepare`` makes it."""
    return prepare(read_utterances("train"), read_utterances("test"), window, batch_size)


def prepare(train: Sequence[Array], test: Sequence[Array], window: int, batch_size: int) -> Signal:
    """Utterances standardised by the training frames' per-channel mean and standard
    deviation, in windows of ``window`` frames; the training windows cut to a multiple of
    ``batch_size``."""
    frames = np.concatenate(train)
    mean, scale = frames.mean(axis=0), frames.std(axis=0)

    def standardise(utterance: Array) -> Windows:
        return ((utterance - mean) / scale).astype(np.float32)

    train_windows = cut_windows([standardise(u) for u in train], window)
    test_utterances = [standardise(u) for u in test]
    kept = len(train_windows) - len(train_windows) % batch_size
    return Signal(
        train_windows[:kept], cut_windows(test_utterances, window), test_utterances, mean, scale
    )


def snr_db(signal: npt.NDArray[Any], reconstruction: npt.NDArray[Any]) -> float:
    """10·log10(Σ x² / Σ (x − x̂)²), in float64."""
    x = np.asarray(signal, dtype=np.float64)
    error = x - np.asarray(reconstruction, dtype=np.float64)
    return float(10.0 * np.log10(np.sum(x**2) / np.sum(error**2)))


def closed_loop(
    config: FRAEConfig, weights: dict[str, npt.NDArray[Any]], x: npt.NDArray[Any], step: float
) -> tuple[Array, npt.NDArray[np.int64]]:
    """Run the model with its codes rounded inside the recurrence, in float64.

    Each step's code z_t becomes ẑ_t = Δ·round(z_t / Δ) (Δ = ``step``; 0 keeps z_t), and
    the decoder's GRU or dense layers, and so the feedback the encoder reads at t + 1, see
    ẑ_t alone: ``predict`` when Δ = 0, ``decode(ẑ)`` for any Δ. Built from the reference's
    dense stack and GRU step (contract sections 1 and 1b).

    Args:
        config: the model.
        weights: canonical weights, any backend's ``get_weights()``.
        x: sequences, (B, T, F).
        step: the grid step Δ ≥ 0.

    Returns:
        x̂, (B, T, F) float64, and the symbols round(z_t / Δ), (B, T, L) (zeros when Δ = 0).
    """
    # the oracle's own steps: the demo composes the core with an implementation, as the
    # command line does; by importlib, since mypy --strict covers frae alone, not impls
    reference = importlib.import_module("impls.reference.model")
    dense_stack, gru_step = reference.dense_stack, reference.gru_step
    params = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
    sequences = np.asarray(x, dtype=np.float64)
    batch, steps, _ = sequences.shape
    encoder, decoder, gru = config.encoder_layers, config.decoder_layers, config.gru
    feedback = np.zeros((batch, config.feedback_dim))
    outputs = np.empty_like(sequences)
    symbols = np.zeros((batch, steps, config.latent_dim), dtype=np.int64)
    for t in range(steps):
        code = dense_stack(params, encoder, np.concatenate([sequences[:, t], feedback], 1), None)
        if step > 0:
            symbols[:, t] = np.round(code / step)
            code = step * symbols[:, t]
        if gru is None:
            feedback = dense_stack(params, decoder, np.concatenate([code, feedback], 1), None)
            outputs[:, t] = feedback
        else:
            feedback, _ = gru_step(params, gru, code, feedback)
            outputs[:, t] = dense_stack(params, decoder, feedback, None)
    return outputs, symbols


def bits_per_frame(symbols: npt.NDArray[np.integer[Any]]) -> float:
    """Σ over the last axis's L dimensions of each one's empirical entropy, in bits:
    H_l = −Σ_s p_l(s)·log2 p_l(s) over the symbols s that dimension l takes."""
    columns = np.asarray(symbols).reshape(-1, symbols.shape[-1]).T
    total = 0.0
    for column in columns:
        _, counts = np.unique(column, return_counts=True)
        p = counts / counts.sum()
        total -= float(np.sum(p * np.log2(p)))
    return total


@dataclass(frozen=True)
class Variant:
    """One backend run in a process of its own: its label in the tables, the registered
    name and the environment (``KERAS_BACKEND`` for Keras)."""

    label: str
    backend: str
    env: dict[str, str]


def variants(backends: Sequence[str] | None = None) -> list[Variant]:
    """Each of ``backends`` (default: every installed one); a Keras port once per
    installed Keras backend: ``keras_rnn[jax]``."""
    found = []
    for name in frae.installed_backends() if backends is None else backends:
        if frae.registry.frameworks_of(name) != ("keras",):
            found.append(Variant(name, name, {}))
            continue
        for framework in KERAS_BACKENDS:
            if importlib.util.find_spec(framework) is not None:
                found.append(Variant(f"{name}[{framework}]", name, {"KERAS_BACKEND": framework}))
    return found


def train_in_this_process(job: dict[str, Any]) -> dict[str, Any]:
    """The worker's part: train each model of ``job`` on its windows, save the weights,
    measure the held-out SNR. A model that fails reports its error; the others go on.

    Times: each model's wall-clock seconds from creation to its SNR, and the CPU seconds
    (every thread's) of each model and of the whole process, imports included: on a quiet
    machine a worker's wall time is about its CPU time, since the small steps leave a
    framework's threads little to share."""
    with np.load(job["data"]) as data:
        train, test = data["train"], data["test"]
    results: dict[str, Any] = {}
    for model, fields in job["models"].items():
        begin, begin_cpu = time.perf_counter(), _cpu_seconds()
        try:
            backend = frae.create(job["backend"], FRAEConfig.from_dict(fields), seed=job["seed"])
            history = backend.fit(
                train,
                epochs=job["epochs"],
                batch_size=job["batch_size"],
                optimizer="adam",
                learning_rate=job["learning_rate"],
                shuffle=True,
                seed=job["seed"],
            )
            path = Path(job["weights"]) / f"{job['label']}-{model}.npz"
            frae.save_weights(path, backend.get_weights())
            results[model] = {
                "loss": history["loss"],
                "snr_db": snr_db(test, backend.predict(test)),
                "weights": str(path),
                "seconds": time.perf_counter() - begin,
                "cpu_seconds": _cpu_seconds() - begin_cpu,
            }
        except Exception as error:  # reported in the table, the other model still runs
            results[model] = {"error": f"{type(error).__name__}: {error}".splitlines()[0]}
    return {"models": results, "cpu_seconds": _cpu_seconds()}


def _cpu_seconds() -> float:
    """User and system CPU seconds of this process so far, all its threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_variant(variant: Variant, job: dict[str, Any], log: Path) -> dict[str, Any]:
    """``train_in_this_process`` in a fresh process with ``variant``'s environment, its
    wall-clock ``seconds`` added; a process that fails gives every model its log's tail as
    the error."""
    env = {**ONE_THREAD, **os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **variant.env}
    job = {**job, "backend": variant.backend, "label": variant.label}
    command = [sys.executable, "-m", "frae.demo", json.dumps(job)]
    start = time.perf_counter()
    try:
        with log.open("w") as errors:
            done = subprocess.run(
                command,
                cwd=Path(__file__).resolve().parents[1],
                env=env,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                timeout=WORKER_TIMEOUT_S,
            )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode == 0 and lines:
            result: dict[str, Any] = json.loads(lines[-1])
        else:
            tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
            result = _failed(job, f"worker exited with {done.returncode}: {tail}")
    except subprocess.TimeoutExpired:
        result = _failed(job, f"timed out after {WORKER_TIMEOUT_S} s")
    return result | {"seconds": time.perf_counter() - start}


def _failed(job: dict[str, Any], reason: str) -> dict[str, Any]:
    return {"models": {model: {"error": reason} for model in job["models"]}, "cpu_seconds": None}


@dataclass(frozen=True)
class RatePoint:
    """One grid step Δ of the sweep: the rate in bits per frame and the held-out SNR."""

    step: float
    bits: float
    snr_db: float


def rate_distortion(
    config: FRAEConfig, weights: dict[str, npt.NDArray[Any]], x: npt.NDArray[Any]
) -> list[RatePoint]:
    """``closed_loop`` over ``x`` at each of ``CODE_STEPS``."""
    points = []
    for step in CODE_STEPS:
        reconstruction, symbols = closed_loop(config, weights, x, step)
        points.append(RatePoint(step, bits_per_frame(symbols), snr_db(x, reconstruction)))
    return points


def run_demo(
    out: Path,
    backends: Sequence[str] | None = None,
    epochs: int = EPOCHS,
    jobs: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Train, measure, plot and print; returns each variant's results by label.

    ``jobs`` workers run at once (default: one per CPU this process may use, up to 4),
    each on one thread (``ONE_THREAD``).
    """
    from tabulate import tabulate

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
            print(f"  {variant.label}: {_progress(result)}", flush=True)
            return result

        with ThreadPoolExecutor(jobs) as pool:
            results = dict(zip((v.label for v in chosen), pool.map(run, chosen), strict=True))
    print()
    print(tabulate(_snr_rows(results), headers=["backend", *_snr_headers()], floatfmt=".2f"))
    weights = {model: frae.load_weights(path) for model, path in _first_weights(results).items()}
    curves = {model: rate_distortion(MODELS[model], w, signal.test) for model, w in weights.items()}
    if curves:
        source = ", ".join(Path(p).stem for p in _first_weights(results).values())
        print(f"\nClosed-loop rate–distortion on the held-out windows (weights: {source})")
        print(tabulate(_rate_rows(curves), headers=_rate_headers(curves), floatfmt=".2f"))
    plots = [
        plot_losses(out / "loss.png", results),
        plot_reconstruction(out / "reconstruction.png", signal, weights),
        plot_rate_distortion(out / "rate_distortion.png", curves),
    ]
    print(f"\nplots: {', '.join(str(path) for path in plots)}")
    print(f"total {time.perf_counter() - started:.0f} s")
    return results


def _progress(result: dict[str, Any]) -> str:
    cpu = result["cpu_seconds"]
    parts = [f"{result['seconds']:.0f} s" + (f" ({cpu:.0f} s CPU)" if cpu is not None else "")]
    for model, outcome in result["models"].items():
        if "error" in outcome:
            parts.append(f"{model}: {outcome['error']}")
        else:
            parts.append(f"{model} {outcome['snr_db']:.2f} dB in {outcome['seconds']:.0f} s")
    return ", ".join(parts)


def _snr_headers() -> list[str]:
    return [
        *(f"{model} SNR dB" for model in MODELS),
        *(f"{model} s" for model in MODELS),
        "process s",
        "CPU s",
    ]


def _snr_rows(results: dict[str, dict[str, Any]]) -> list[list[Any]]:
    """Per variant: each model's held-out SNR and seconds (creation to SNR), the process's
    wall-clock seconds and its CPU seconds, imports included."""
    rows = []
    for label, result in results.items():
        outcomes = [result["models"][model] for model in MODELS]
        snrs = [o.get("snr_db", "failed") for o in outcomes]
        seconds = [o.get("seconds", "") for o in outcomes]
        rows.append([label, *snrs, *seconds, result["seconds"], result["cpu_seconds"] or ""])
    return rows


def _first_weights(results: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Per model, the weights file of the first variant that trained it (the reference
    comes first when it runs)."""
    found: dict[str, str] = {}
    for result in results.values():
        for model, outcome in result["models"].items():
            if "weights" in outcome:
                found.setdefault(model, outcome["weights"])
    return found


def _rate_headers(curves: dict[str, list[RatePoint]]) -> list[str]:
    return ["Δ", *(f"{model} {what}" for model in curves for what in ("bits/frame", "SNR dB"))]


def _rate_rows(curves: dict[str, list[RatePoint]]) -> list[list[Any]]:
    rows = []
    for index, step in enumerate(CODE_STEPS):
        row: list[Any] = [_fraction(step)]
        for points in curves.values():
            row += [points[index].bits, points[index].snr_db]
        rows.append(row)
    return rows


def _fraction(step: float) -> str:
    """A power of two as ``2`` or ``1/256``."""
    return f"{step:g}" if step >= 1 else f"1/{round(1 / step)}"


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend: files only, no display needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_losses(path: Path, results: dict[str, dict[str, Any]]) -> Path:
    """Each model's training loss per Adam step in every backend (they overlap), and under
    it each backend's relative difference from the first (the reference when it ran)."""
    plt = _pyplot()
    figure, axes = plt.subplots(2, len(MODELS), figsize=(11, 6), sharex=True, sharey="row")
    for column, model in enumerate(MODELS):
        histories = {
            label: np.array(result["models"][model]["loss"])
            for label, result in results.items()
            if "loss" in result["models"][model]
        }
        first = next(iter(histories), None)
        for index, (label, loss) in enumerate(histories.items()):
            style = {"color": f"C{index}", "alpha": 0.7}
            axes[0, column].plot(loss, label=label, linewidth=1, **style)
            if first is not None and label != first:
                difference = np.abs(loss / histories[first] - 1.0)
                axes[1, column].plot(np.maximum(difference, 1e-16), linewidth=0.8, **style)
        axes[0, column].set(title=f"{model} feedback", yscale="log")
        axes[1, column].set(xlabel="Adam step", yscale="log")
        if first is not None:
            axes[1, column].set_title(f"|loss / {first}'s − 1|", fontsize="small")
    axes[0, 0].set_ylabel("training loss (mini-batch MSE)")
    axes[1, 0].set_ylabel("relative difference")
    axes[0, -1].legend(fontsize="x-small", ncol=2)
    return _save(figure, path)


def plot_reconstruction(path: Path, signal: Signal, weights: dict[str, Weights]) -> Path:
    """A few channels of the longest held-out utterance, in its windows, and each model's
    reconstruction of them."""
    plt = _pyplot()
    windows = cut_windows([max(signal.test_utterances, key=len)], WINDOW)
    frames = windows.reshape(-1, CHANNELS)
    reconstructions = {
        model: closed_loop(MODELS[model], w, windows, 0.0)[0].reshape(-1, CHANNELS)
        for model, w in weights.items()
    }
    figure, axes = plt.subplots(len(PLOTTED_CHANNELS), 1, figsize=(8, 6), sharex=True)
    for axis, channel in zip(axes, PLOTTED_CHANNELS, strict=True):
        axis.plot(frames[:, channel], "k.-", label="input")
        for model, reconstruction in reconstructions.items():
            axis.plot(reconstruction[:, channel], label=f"{model} feedback")
        for edge in range(WINDOW, len(frames), WINDOW):
            axis.axvline(edge - 0.5, color="0.85", linewidth=0.8)
        axis.set_ylabel(f"c{channel + 1} (standardised)")
    axes[0].legend(fontsize="small", ncol=3)
    axes[-1].set_xlabel(f"frame of the longest held-out utterance, in windows of {WINDOW}")
    return _save(figure, path)


def plot_rate_distortion(path: Path, curves: dict[str, list[RatePoint]]) -> Path:
    """Held-out SNR against bits per frame, one curve per model."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    for model, points in curves.items():
        axis.plot([p.bits for p in points], [p.snr_db for p in points], "o-", label=model)
    axis.set(xlabel="bits per frame (empirical entropy of the codes)", ylabel="held-out SNR (dB)")
    steps = f"{_fraction(CODE_STEPS[0])} … {_fraction(CODE_STEPS[-1])}"
    axis.set_title(f"codes rounded inside the loop, Δ = {steps}", fontsize="medium")
    axis.legend(title="feedback")
    axis.grid(alpha=0.3)
    return _save(figure, path)


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    _pyplot().close(figure)
    return path


if __name__ == "__main__":  # the worker: python -m frae.demo '<job as JSON>'
    print(json.dumps(train_in_this_process(json.loads(sys.argv[1]))), flush=True)
