"""What the demo prints: each worker's progress line, the SNR table and each model's
rate–distortion table (rendered by ``tabulate``)."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from apps.demo import crossing
from apps.demo.rate_distortion import CODE_STEPS, step_label
from apps.demo.settings import MODELS


def progress(result: dict[str, Any]) -> str:
    """One worker's line: its seconds (and CPU seconds), then each model's SNR (of the
    float model, or of the finest quantized one) or error."""
    cpu = result["cpu_seconds"]
    parts = [f"{result['seconds']:.0f} s" + (f" ({cpu:.0f} s CPU)" if cpu is not None else "")]
    for model, outcome in result["models"].items():
        if "error" in outcome:
            parts.append(f"{model}: {outcome['error']}")
        elif "decoded" in outcome:
            count = sum(len(names) for names in outcome["decoded"].values())
            parts.append(f"{model}: {count} other backends' streams decoded")
        elif "after_training" in outcome:
            last = outcome["after_training"][-1]
            parts.append(f"{model} {last['snr_db']:.2f} dB at Δ = {step_label(last['step'])}")
        else:
            parts.append(f"{model} {outcome['snr_db']:.2f} dB in {outcome['seconds']:.0f} s")
    return ", ".join(parts)


def snr_table(results: dict[str, dict[str, Any]]) -> str:
    headers = [
        "backend",
        *(f"{model} SNR dB" for model in MODELS),
        *(f"{model} s" for model in MODELS),
        "process s",
        "CPU s",
    ]
    return tabulate(snr_rows(results), headers=headers, floatfmt=".2f")


def rate_table(results: dict[str, dict[str, Any]], model: str) -> str:
    return tabulate(rate_rows(results, model), headers=RATE_HEADERS, floatfmt=".2f")


def bytes_table(results: dict[str, dict[str, Any]], model: str) -> str:
    return tabulate(bytes_rows(results, model), headers=BYTES_HEADERS, floatfmt=".2f")


def snr_rows(results: dict[str, dict[str, Any]]) -> list[list[Any]]:
    """Per variant: each model's held-out SNR and seconds (creation to SNR), the process's
    wall-clock seconds and its CPU seconds, imports included."""
    rows = []
    for label, result in results.items():
        outcomes = [result["models"][model] for model in MODELS]
        snrs = [o.get("snr_db", "failed") for o in outcomes]
        seconds = [o.get("seconds", "") for o in outcomes]
        rows.append([label, *snrs, *seconds, result["seconds"], result["cpu_seconds"] or ""])
    return rows


RATE_HEADERS = [
    "Δ",
    "after training: bits/frame",
    "SNR dB",
    "backends with these symbols and SNR",
    "trained with Δ: bits/frame, every backend",
    "SNR dB, every backend",
]


def points_of(results: dict[str, dict[str, Any]], model: str, kind: str) -> dict[str, list[Any]]:
    """Each variant's rate points of ``model`` of ``kind`` (``after_training`` or
    ``trained_quantized``), by label, where it made them."""
    return {
        label: result["models"][model][kind]
        for label, result in results.items()
        if kind in result["models"].get(model, {})
    }


def rate_rows(results: dict[str, dict[str, Any]], model: str) -> list[list[Any]]:
    """Per Δ: the float weights quantized after training (the first backend's rate and SNR,
    and how many backends made the same symbols and SNR to 0.01 dB), and beside the Δ each
    backend also trained with, every backend's rate and SNR (the least to the most)."""
    after = list(points_of(results, model, "after_training").values())
    trained = points_of(results, model, "trained_quantized").values()
    by_step = [{point["step"]: point for point in points} for points in trained]
    rows = []
    for index, step in enumerate(CODE_STEPS):
        points = [sweep[index] for sweep in after]
        row: list[Any] = [step_label(step), "", "", f"0/{len(after)}"]
        if points:
            first = points[0]
            agree = sum(_same(point, first) for point in points)
            row[1:] = [first["bits"], first["snr_db"], f"{agree}/{len(points)}"]
        here = [points[step] for points in by_step if step in points]
        row += [_span(here, "bits"), _span(here, "snr_db")] if here else ["", ""]
        rows.append(row)
    return rows


BYTES_HEADERS = [
    "Δ",
    "entropy: bits/frame",
    "prior's information",
    "one stream, all bytes",
    "packets of a frame",
    "packets: bits beyond information",
    "one sequence: words beyond information",
    "backends with these bytes",
    "decoded, sender × receiver: SNR dB",
]


def bytes_rows(results: dict[str, dict[str, Any]], model: str) -> list[list[Any]]:
    """Per Δ, the float weights quantized after training, in real bytes (the first backend's):
    the symbols' entropy, their information under the training windows' prior, the bytes of
    one stream, all counted, and of a packet of one frame past the opening, and how far these
    exceed the frame's information; the words of the windows end to end as one sequence
    against their information; how many backends made the same bytes; and
    every backend's bytes decoded on every backend (``crossing.pair_snrs``): the ordered
    pairs decoded of all, and their SNR."""
    after = list(points_of(results, model, "after_training").values())
    rows = []
    for index, step in enumerate(CODE_STEPS):
        points = [sweep[index] for sweep in after]
        if not points:
            continue
        first = points[0]
        same = sum(point["bytes"] == first["bytes"] for point in points)
        fields = ("bits", "prior_bits", "stream_bits", "packet_bits", "packet_overhead")
        excess = f"{100 * first['payload_excess']:+.2f} %"
        crossed = _crossed(crossing.pair_snrs(results, model, index), len(points))
        agreed = f"{same}/{len(points)}"
        rows.append([step_label(step), *(first[f] for f in fields), excess, agreed, crossed])
    return rows


def _crossed(pairs: dict[tuple[str, str], float], backends: int) -> str:
    """ "49/49: 12.34" where every pair's SNR rounds alike, else its span."""
    if not pairs:
        return f"0/{backends**2}"
    low, high = (f"{value:.2f}" for value in (min(pairs.values()), max(pairs.values())))
    return f"{len(pairs)}/{backends**2}: {low}" + (f" to {high}" if high != low else "")


def _span(points: list[dict[str, Any]], field: str) -> str:
    values = [point[field] for point in points]
    return f"{min(values):.2f} to {max(values):.2f}"


def _same(point: dict[str, Any], first: dict[str, Any]) -> bool:
    return (
        point["symbols"] == first["symbols"]
        and f"{point['snr_db']:.2f}" == f"{first['snr_db']:.2f}"
    )
