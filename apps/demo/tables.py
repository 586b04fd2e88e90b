"""What the demo prints: each worker's progress line, the SNR table, each model's
rate–distortion tables (the counted prior's curve beside the rate term's among them) and its
tables of lost packets (rendered by ``tabulate``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from apps.demo import crossing
from apps.demo.rate_distortion import CODE_STEPS, step_label
from apps.demo.rate_term import RATE_CODE_STEP, RATE_WEIGHTS, counted_bits_at
from apps.demo.settings import MODELS


def progress(result: dict[str, Any]) -> str:
    """One worker's line: its seconds (and CPU seconds), then each model's SNR (of the
    float model, of the finest quantized one, or of each λ's) or error."""
    cpu = result["cpu_seconds"]
    parts = [f"{result['seconds']:.0f} s" + (f" ({cpu:.0f} s CPU)" if cpu is not None else "")]
    for model, outcome in result["models"].items():
        if "error" in outcome:
            parts.append(f"{model}: {outcome['error']}")
        elif "rate_error" in outcome:
            parts.append(f"{model} with the rate term: {outcome['rate_error']}")
        elif "decoded" in outcome:
            parts.append(f"{model}: {len(outcome['decoded'])} streams of other backends decoded")
        elif "rate_trained" in outcome:
            snrs = ", ".join(f"{point['snr_db']:.2f}" for point in outcome["rate_trained"])
            parts.append(f"{model} with the rate term {snrs} dB")
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
    """Each variant's rate points of ``model`` of ``kind`` (``after_training``,
    ``trained_quantized`` or ``rate_trained``), by label, where it made them."""
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


def rate_term_table(results: dict[str, dict[str, Any]], model: str) -> str:
    # every cell is text already, λ's figures among them, which tabulate would round as numbers
    rows = rate_term_rows(results, model)
    return tabulate(rows, headers=RATE_TERM_HEADERS, disable_numparse=True)


RATE_TERM_HEADERS = [
    "model",
    "prior",
    "Δ",
    "λ",
    "payload: bits/frame",
    "information: bits/frame",
    "SNR dB",
    "counted curve at this SNR: bits/frame",
    "less the counted curve",
    "its symbols counted: payload bits/frame",
    "decoded, sender × receiver",
]


def rate_term_rows(results: dict[str, dict[str, Any]], model: str) -> list[list[Any]]:
    """The counted prior's curve, the float weights quantized after training at each Δ; the
    model trained with Δ = ``RATE_CODE_STEP`` alone; then the rate term's curve, trained at
    that Δ with each λ. Every backend's figure (one where all round alike, else their span):
    the payload's bits a frame (``RatePoint.payload_bits``), the symbols' information under
    the prior, the SNR of the bytes decoded; past the counted curve, the counted curve's bits
    at the same SNR and how far the point's lie below them (each backend's against its own
    counted curve; blank beyond the curve's SNR), and for the rate term's models, their
    payload under the prior their own symbols count; every backend's bytes decoded on every
    backend: the ordered pairs decoded of all, and the farthest any decode lies from the
    sender's own."""
    counted = points_of(results, model, "after_training")
    rows = []
    for index, step in enumerate(CODE_STEPS):
        points = {label: sweep[index] for label, sweep in counted.items()}
        if points:
            crossed = _crossed_from_own(results, model, index, "after_training", len(points))
            start = ["quantized after training", "counted", step_label(step), ""]
            rows.append([*start, *_rate_cells(points), "", "", "", crossed])
    grid = step_label(RATE_CODE_STEP)
    alone = {
        label: point
        for label, sweep in points_of(results, model, "trained_quantized").items()
        for point in sweep
        if point["step"] == RATE_CODE_STEP
    }
    if alone:
        against = _against_counted(counted, alone)
        rows.append(["trained with Δ", "counted", grid, "", *_rate_cells(alone), *against, "", ""])
    trained = points_of(results, model, "rate_trained")
    for index, weight in enumerate(RATE_WEIGHTS):
        points = {label: sweep[index] for label, sweep in trained.items()}
        if points:
            against = _against_counted(counted, points)
            own = _spread([point["counted_payload_bits"] for point in points.values()])
            crossed = _crossed_from_own(results, model, index, "rate_trained", len(points))
            start = ["trained with Δ and λ", "learned", grid, f"{weight:g}"]
            rows.append([*start, *_rate_cells(points), *against, own, crossed])
    return rows


def _rate_cells(points: dict[str, dict[str, Any]]) -> list[str]:
    """Every backend's payload bits a frame, information bits a frame and SNR."""
    fields = ("payload_bits", "prior_bits", "snr_db")
    return [_spread([point[field] for point in points.values()]) for field in fields]


def _against_counted(
    counted: dict[str, list[dict[str, Any]]], points: dict[str, dict[str, Any]]
) -> list[str]:
    """Every backend's counted curve's bits a frame at its point's SNR, and the point's bits
    less them; how many backends' points lie within the curve's SNR where some do not."""
    at_snr = [_counted_at(counted.get(label), point) for label, point in points.items()]
    less = [
        None if bits is None else point["payload_bits"] - bits
        for bits, point in zip(at_snr, points.values(), strict=True)
    ]
    known = sum(bits is not None for bits in at_snr)
    within = "" if known in (0, len(at_snr)) else f" ({known} of {len(at_snr)})"
    return [_spread(at_snr) + within, _spread(less) + within]


def _counted_at(sweep: list[dict[str, Any]] | None, point: dict[str, Any]) -> float | None:
    """The bits a frame of the counted curve ``sweep`` at ``point``'s SNR."""
    if sweep is None:
        return None
    return counted_bits_at([(p["snr_db"], p["payload_bits"]) for p in sweep], point["snr_db"])


def _crossed_from_own(
    results: dict[str, dict[str, Any]], model: str, index: int, kind: str, backends: int
) -> str:
    """ "49/49 within 0.01 dB": the ordered pairs decoded, and the farthest a receiver's SNR
    lies from the sender's own decode of its bytes."""
    pairs = crossing.pair_snrs(results, model, index, kind)
    own = crossing.own_snrs(results, model, index, kind)
    if not pairs:
        return f"0/{backends**2}"
    farthest = max(abs(snr - own[sender]) for (sender, _), snr in pairs.items())
    return f"{len(pairs)}/{backends**2} within {farthest:.2f} dB"


def loss_table(results: dict[str, dict[str, Any]], model: str) -> str:
    rows, headers = loss_rows(results, model)
    return tabulate(rows, headers=headers, floatfmt=".2f")


def concealment_table(results: dict[str, dict[str, Any]], model: str) -> str:
    return tabulate(concealment_rows(results, model), headers=CONCEALMENT_HEADERS, floatfmt=".2f")


def loss_rows(results: dict[str, dict[str, Any]], model: str) -> tuple[list[list[Any]], list[str]]:
    """Per refresh interval, of the first backend's stream: its bits a frame, every packet
    counted, and the bits a refresh adds to a plain packet; then at each loss rate (its
    header: the packets lost) the held-out SNR with the default concealment, every backend's
    (one figure where they all round alike, else their span); and how many backends made
    every SNR of the row alike. The headers come with the rows."""
    sweeps = loss_sweeps(results, model)
    if not sweeps:
        return [], []
    first = sweeps[0]
    rates = sorted({point["rate"] for point in first["points"]})
    lost = {p["rate"]: p["lost"] for p in first["points"] if p["refresh"] is None}
    headers = ["refresh", "bits/frame, every packet", "bits a refresh adds"]
    headers += [f"{100 * rate:g} % lost ({lost.get(rate, '?')} packets)" for rate in rates]
    rows = []
    for cost in first["costs"]:
        refresh = cost["refresh"]
        snrs = [
            [_point(sweep, rate, refresh, "mode")["snr_db"] for rate in rates] for sweep in sweeps
        ]
        alike = sum(_rounded(row) == _rounded(snrs[0]) for row in snrs)
        every = "none" if refresh is None else f"every {refresh} frames"
        added = "" if cost["refresh_bits"] is None else cost["refresh_bits"]
        cells = [_spread([row[index] for row in snrs]) for index in range(len(rates))]
        rows.append([every, cost["stream_bits"], added, *cells, f"{alike}/{len(sweeps)}"])
    return rows, [*headers, "backends alike"]


CONCEALMENT_HEADERS = [
    "lost",
    "refresh",
    "mode: SNR dB",
    "repeat: SNR dB",
    "mode: lost frames' SNR dB",
    "repeat: lost frames' SNR dB",
]


def concealment_rows(results: dict[str, dict[str, Any]], model: str) -> list[list[Any]]:
    """Per loss rate and refresh where both concealments ran: each one's held-out SNR, of every
    frame and of the lost frames alone, every backend's (one figure, or their span)."""
    sweeps = loss_sweeps(results, model)
    if not sweeps:
        return []
    compared = sorted(
        {(p["rate"], p["refresh"]) for p in sweeps[0]["points"] if p["concealment"] != "mode"}
    )
    rows = []
    for rate, refresh in compared:
        cells = [
            _spread([_point(sweep, rate, refresh, concealment)[field] for sweep in sweeps])
            for field in ("snr_db", "lost_snr_db")
            for concealment in ("mode", "repeat")
        ]
        rows.append([f"{100 * rate:g} %", f"every {refresh} frames", *cells])
    return rows


def stand_in_line(sweep: dict[str, Any]) -> str:
    """The codes' distances from each concealment's stand-in (``packet_loss``), in words."""
    distances = sweep["stand_in_distances"]
    return (
        f"the stream's codes, root mean square distance from the frame before's (repeat): "
        f"{distances['repeat']:.3f}; from the prior's mode (mode): {distances['mode']:.3f}"
    )


def loss_sweeps(results: dict[str, dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Each variant's measurement of ``model`` through lost packets, where it made one."""
    outcomes = (result["models"].get(model, {}) for result in results.values())
    return [outcome["packet_loss"] for outcome in outcomes if "packet_loss" in outcome]


def _point(
    sweep: dict[str, Any], rate: float, refresh: int | None, concealment: str
) -> dict[str, Any]:
    """The one point of ``sweep`` at ``rate``, ``refresh`` and ``concealment``."""
    key = (rate, refresh, concealment)
    found: list[dict[str, Any]] = sweep["points"]
    (point,) = (p for p in found if (p["rate"], p["refresh"], p["concealment"]) == key)
    return point


def _rounded(values: list[float]) -> list[str]:
    return [f"{value:.2f}" for value in values]


def _spread(values: Sequence[float | None]) -> str:
    """One value to 0.01 where every one rounds alike, else "least to most"."""
    known = [value for value in values if value is not None]
    if not known:
        return ""
    low, high = (f"{value:.2f}" for value in (min(known), max(known)))
    return low if low == high else f"{low} to {high}"


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
