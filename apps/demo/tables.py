"""What the demo prints: each worker's progress line, the SNR table and the rate–distortion
table (rendered by ``tabulate``)."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from apps.demo.rate_distortion import CODE_STEPS, RatePoint, step_label
from apps.demo.settings import MODELS


def progress(result: dict[str, Any]) -> str:
    """One worker's line: its seconds (and CPU seconds), then each model's SNR or error."""
    cpu = result["cpu_seconds"]
    parts = [f"{result['seconds']:.0f} s" + (f" ({cpu:.0f} s CPU)" if cpu is not None else "")]
    for model, outcome in result["models"].items():
        if "error" in outcome:
            parts.append(f"{model}: {outcome['error']}")
        else:
            parts.append(f"{model} {outcome['snr_db']:.2f} dB in {outcome['seconds']:.0f} s")
    return ", ".join(parts)


def snr_table(results: dict[str, dict[str, Any]]) -> str:
    """``snr_rows`` under their headers."""
    return tabulate(snr_rows(results), headers=["backend", *snr_headers()], floatfmt=".2f")


def rate_table(curves: dict[str, list[RatePoint]]) -> str:
    """``rate_rows`` under their headers."""
    return tabulate(rate_rows(curves), headers=rate_headers(curves), floatfmt=".2f")


def snr_headers() -> list[str]:
    return [
        *(f"{model} SNR dB" for model in MODELS),
        *(f"{model} s" for model in MODELS),
        "process s",
        "CPU s",
    ]


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


def rate_headers(curves: dict[str, list[RatePoint]]) -> list[str]:
    return ["Δ", *(f"{model} {what}" for model in curves for what in ("bits/frame", "SNR dB"))]


def rate_rows(curves: dict[str, list[RatePoint]]) -> list[list[Any]]:
    rows = []
    for index, step in enumerate(CODE_STEPS):
        row: list[Any] = [step_label(step)]
        for points in curves.values():
            row += [points[index].bits, points[index].snr_db]
        rows.append(row)
    return rows
