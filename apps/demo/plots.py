"""The demo's plots, by matplotlib on its Agg backend (files only, no display needed): the
training losses, a reconstruction, the rate–distortion curves, the counted prior's beside the
rate term's, and the SNR through lost packets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import frae
from apps.demo.data import Signal, cut_windows
from apps.demo.rate_distortion import CODE_STEPS, step_label
from apps.demo.rate_term import RATE_CODE_STEP
from apps.demo.settings import CHANNELS, MODELS, WINDOW
from apps.demo.tables import loss_sweeps, points_of
from frae.params import Weights

PLOTTED_CHANNELS = (0, 1, 2)


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
        model: frae.create("reference", MODELS[model], weights=w)
        .predict(windows)
        .reshape(-1, CHANNELS)
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


def plot_rate_distortion(path: Path, results: dict[str, dict[str, Any]]) -> Path:
    """Held-out SNR against bits per frame of the first backend's quantized models: the float
    model quantized after training (a curve over Δ), and the models trained with Δ (points)."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    for index, model in enumerate(MODELS):
        for kind, style, what in (
            ("after_training", "o-", "quantized after training"),
            ("trained_quantized", "s", "trained with Δ"),
        ):
            points = next(iter(points_of(results, model, kind).values()), [])
            bits, snrs = [p["stream_bits"] for p in points], [p["snr_db"] for p in points]
            axis.plot(bits, snrs, style, color=f"C{index}", label=f"{model} feedback, {what}")
            if kind == "after_training":
                entropy = [p["bits"] for p in points]
                axis.plot(entropy, snrs, ":", color=f"C{index}", linewidth=1)
    axis.set(
        xlabel="bits per frame, in the bytes of one stream (dotted: the symbols' entropy)",
        ylabel="held-out SNR (dB)",
    )
    steps = f"{step_label(CODE_STEPS[0])} … {step_label(CODE_STEPS[-1])}"
    axis.set_title(f"codes quantized inside the loop, Δ = {steps}", fontsize="medium")
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    return _save(figure, path)


RATE_TERM_CURVES = (
    ("after_training", "o-", "C0", "counted prior, float model quantized, over Δ", (4, -10)),
    ("trained_quantized", "D", "0.4", "counted prior, trained with Δ", (-48, 4)),
    ("rate_trained", "s-", "C3", "learned prior, trained with Δ and λ, over λ", (4, 4)),
)
"""Each curve of ``plot_rate_term``: the kind of its points, its style, colour, legend and
where its points' names sit."""


def plot_rate_term(path: Path, results: dict[str, dict[str, Any]]) -> Path:
    """Each model's payload bits a frame against held-out SNR, of the bytes decoded: the
    counted prior's curve over Δ, the model trained with the rate term's Δ alone, and the rate
    term's curve over λ at that Δ, each point named by its Δ or λ, of the first backend that
    made them; the other backends' points faint in the same colour. Lower is better: fewer
    bits for the same SNR."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(MODELS), figsize=(11, 4.5), sharey=True)
    for axis, model in zip(axes, MODELS, strict=True):
        for kind, style, colour, label, offset in RATE_TERM_CURVES:
            for rank, sweep in enumerate(points_of(results, model, kind).values()):
                points = [
                    p for p in sweep if kind != "trained_quantized" or p["step"] == RATE_CODE_STEP
                ]
                snrs, bits = [p["snr_db"] for p in points], [p["payload_bits"] for p in points]
                if rank:
                    axis.plot(snrs, bits, style[0], color=colour, alpha=0.25, markersize=4)
                    continue
                axis.plot(snrs, bits, style, color=colour, label=label)
                for point in points:
                    where = (point["snr_db"], point["payload_bits"])
                    axis.annotate(
                        _point_name(point),
                        where,
                        xytext=offset,
                        textcoords="offset points",
                        fontsize=7,
                    )
        axis.set(title=f"{model} feedback", xlabel="held-out SNR of the bytes decoded (dB)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small", loc="upper left")
    axes[0].set_ylabel("bits per frame, the stream's payload")
    return _save(figure, path)


def _point_name(point: dict[str, Any]) -> str:
    """``Δ = 1/16`` for a point without the rate term, ``λ = 0.004`` for one with it."""
    weight = point.get("rate_weight")
    return f"Δ = {step_label(point['step'])}" if weight is None else f"λ = {weight:g}"


def plot_packet_loss(path: Path, results: dict[str, dict[str, Any]]) -> Path:
    """Each model's held-out SNR against the packets lost (as many as each rate's draw lost),
    a line per refresh interval, of the first backend that measured it; the other backends'
    points in the line's colour, faint; the other concealment where it was measured
    (crosses); and the held-out windows' SNR at the same Δ, without loss (dotted)."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(MODELS), figsize=(11, 4), sharey=True)
    for axis, model in zip(axes, MODELS, strict=True):
        sweeps = loss_sweeps(results, model)
        if not sweeps:
            continue
        for index, cost in enumerate(sweeps[0]["costs"]):
            refresh, colour = cost["refresh"], f"C{index}"
            label = "no refresh" if refresh is None else f"a refresh every {refresh} frames"
            label += f": {cost['stream_bits']:.1f} bits/frame"
            for rank, sweep in enumerate(sweeps):
                rates, snrs = _loss_curve(sweep, refresh, "mode")
                style = {"alpha": 0.3} if rank else {"label": label}
                axis.plot(rates, snrs, "o" if rank else "o-", color=colour, **style)
            rates, snrs = _loss_curve(sweeps[0], refresh, "repeat")
            if rates:
                axis.plot(rates, snrs, "x", color=colour, markersize=9, label="repeat concealment")
        windows = [
            point["snr_db"]
            for point in next(iter(points_of(results, model, "after_training").values()), [])
            if point["step"] == sweeps[0]["step"]
        ]
        for snr in windows:
            axis.axhline(snr, linestyle=":", color="0.4", label="the windows of 7, no loss")
        burst = sweeps[0]["burst"]
        axis.set(
            title=f"{model} feedback",
            xlabel=f"packets lost (% of {sweeps[0]['frames']}), in bursts of {burst:g} on average",
        )
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small")
    axes[0].set_ylabel("held-out SNR (dB)")
    return _save(figure, path)


def _loss_curve(
    sweep: dict[str, Any], refresh: int | None, concealment: str
) -> tuple[list[float], list[float]]:
    """The packets lost (% of the stream's, as drawn) and SNRs of ``sweep``'s points at
    ``refresh`` and ``concealment``."""
    points = [
        p for p in sweep["points"] if (p["refresh"], p["concealment"]) == (refresh, concealment)
    ]
    return [100 * p["lost"] / sweep["frames"] for p in points], [p["snr_db"] for p in points]


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    _pyplot().close(figure)
    return path
