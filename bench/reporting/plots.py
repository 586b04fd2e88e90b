"""The report's plots, as PNGs, from one ``Pivot``: time per step against T, throughput
against B, the stream's time per frame against the chunk length, and the first calls.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np

from bench.records import OPERATIONS, SIDES, STREAM
from bench.reporting.analysis import BATCHED_SHAPE, LABELS, Pivot
from bench.roles import Role

LINES = {
    Role.FLOOR: "-",
    Role.CHECK: "--",
    Role.COMPILED: "-",
    Role.BY_HAND: "--",
    Role.TEXTBOOK: "-.",
    Role.REFERENCE: ":",
    Role.BASELINE: ":",
    Role.EXPORTED: "--",
}
COLOURS = {
    Role.FLOOR: "black",
    Role.SIMD_FLOOR: "darkgray",
    Role.MATRIX_FLOOR: "gray",
    Role.CHECK: "dimgray",
}
"""The floors and the check in greys; every other variant gets a colour of its own."""


Panel = dict[str, list[tuple[int, float]]]
"""variant -> its (T, B or chunk length, figure) points."""


def scaling_panels(pivot: Pivot, by_steps: bool, value: int) -> dict[str, Panel]:
    """operation -> its panel, for predict and a training step: µs per step against T at
    B = ``value`` (``by_steps``), or throughput against B at T = ``value``; a panel where no
    variant has two points is left out."""
    panels: dict[str, Panel] = {}
    for operation in ("predict", "train_step"):
        lines: Panel = {}
        for key, r in pivot.results.items():
            figure = r.us_per_step if by_steps else r.sequence_steps_per_s
            held = key.batch if by_steps else key.steps
            if key.operation == operation and held == value and figure is not None:
                point = (key.steps if by_steps else key.batch, figure)
                lines.setdefault(key.variant, []).append(point)
        if any(len(points) > 1 for points in lines.values()):
            panels[operation] = lines
    return panels


def stream_panels(pivot: Pivot) -> dict[str, Panel]:
    """side -> its panel: each variant's µs per frame of the stream against the chunk
    length; a panel where no variant has two points is left out."""
    panels: dict[str, Panel] = {}
    for key, r in pivot.results.items():
        if key.operation == STREAM and key.side and key.chunk and r.us_per_step is not None:
            panels.setdefault(key.side, {}).setdefault(key.variant, []).append(
                (key.chunk, r.us_per_step)
            )
    ordered = {side: panels[side] for side in SIDES if side in panels}
    return {s: lines for s, lines in ordered.items() if any(len(p) > 1 for p in lines.values())}


def _scaling_plot(pivot: Pivot, by_steps: bool, value: int, path: Path) -> Path | None:
    """``scaling_panels`` side by side, or ``None`` where there is none."""
    panels = scaling_panels(pivot, by_steps, value)
    held = "B" if by_steps else "T"
    titles = {op: f"{LABELS[op]}, {held}={value}{pivot.on}" for op in panels}
    x_label = "T (time steps)" if by_steps else "B (sequences per call)"
    y_label = "µs per time step (median)" if by_steps else "sequence-steps per second"
    return _panels_plot(pivot, panels, titles, (x_label, y_label), path)


def _stream_plot(pivot: Pivot, path: Path) -> Path | None:
    """``stream_panels`` side by side, or ``None`` where there is none."""
    panels = stream_panels(pivot)
    titles = {side: f"stream, {side}, B=1{pivot.on}" for side in panels}
    labels = ("frames per call (chunk length)", "µs per frame (median)")
    return _panels_plot(pivot, panels, titles, labels, path)


def _panels_plot(
    pivot: Pivot,
    panels: dict[str, Panel],
    titles: dict[str, str],
    labels: tuple[str, str],
    path: Path,
) -> Path | None:
    """``panels`` side by side on log axes, one line per variant in its role's style;
    ``None`` where there is no panel."""
    import matplotlib
    import matplotlib.pyplot as plt

    if not panels:
        return None
    tab10 = matplotlib.colormaps["tab10"]
    palette = itertools.cycle(tab10(i) for i in range(10) if i != 7)  # its grey is the check's
    colours = {n: COLOURS.get(role) or next(palette) for n, role in pivot.roles.items()}
    size = (13 if len(panels) > 1 else 8, 4.8)
    figure, axes = plt.subplots(1, len(panels), figsize=size, sharey=True, layout="constrained")
    axes = np.atleast_1d(axes)
    for axis, (panel, lines) in zip(axes, panels.items(), strict=True):
        for name, points in lines.items():
            style = {"color": colours[name], "linestyle": LINES.get(pivot.roles[name], "-")}
            axis.plot(*zip(*sorted(points), strict=True), marker="o", label=name, **style)
        axis.set(xscale="log", yscale="log", title=titles[panel], xlabel=labels[0])
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(labels[1])
    handles = {h.get_label(): h for axis in axes for h in axis.get_lines()}
    figure.legend(handles.values(), handles.keys(), loc="outside right center", fontsize=8)
    return _save(figure, path)


def _wide_steps(pivot: Pivot) -> int:
    """The T of the throughput plot: T=1000, where every variant runs, if measured at several
    B; else the T with the most B, the longest of those."""
    batches_at: dict[int, set[int]] = {}
    for key in pivot.results:
        batches_at.setdefault(key.steps, set()).add(key.batch)
    if len(batches_at.get(BATCHED_SHAPE.steps, ())) >= 2:
        return BATCHED_SHAPE.steps
    return max(batches_at, key=lambda t: (len(batches_at[t]), t), default=0)


def first_call_figure(pivot: Pivot) -> Any:
    """Each operation's first call per variant, labelled with the shape it compiled, or
    ``None``."""
    import matplotlib.pyplot as plt

    if not (compiles := pivot.first_calls()):
        return None
    names = list(dict.fromkeys(name for name, _ in compiles))
    figure, axis = plt.subplots(figsize=(10, 0.45 * len(names) + 1.5), layout="constrained")
    markers = dict(zip(OPERATIONS, "osD", strict=True))
    for index, operation in enumerate(OPERATIONS):
        found = [
            (row, compiles[name, operation])
            for row, name in enumerate(names)
            if (name, operation) in compiles
        ]
        if not found:
            continue
        at = [row + (index - 1) * 0.22 for row, _ in found]
        seconds = [first.seconds for _, first in found]
        axis.scatter(seconds, at, marker=markers[operation], label=LABELS[operation])
        for y, (_, first) in zip(at, found, strict=True):
            label = f"B={first.shape.batch}, T={first.shape.steps}"
            axis.annotate(
                label, (first.seconds, y), xytext=(4, -3), textcoords="offset points", fontsize=6
            )
    axis.set_yticks(range(len(names)), names)
    axis.invert_yaxis()
    title = "first call of each operation in a fresh process (trace and compile), at its shape"
    axis.set(xscale="log", xlabel="seconds", title=title)
    axis.grid(True, axis="x", which="both", alpha=0.3)
    axis.legend(fontsize=8)
    return figure


def plots(pivot: Pivot, out: Path, suffix: str = "") -> list[Path]:
    """The plots as PNGs in ``out``, those with nothing to draw left out."""
    import matplotlib

    matplotlib.use("Agg")
    drawn = [
        _scaling_plot(pivot, True, 1, out / f"step_time_vs_T{suffix}.png"),
        _scaling_plot(pivot, False, _wide_steps(pivot), out / f"throughput_vs_B{suffix}.png"),
        _stream_plot(pivot, out / f"stream_frame_vs_chunk{suffix}.png"),
    ]
    if (figure := first_call_figure(pivot)) is not None:
        drawn.append(_save(figure, out / f"first_call{suffix}.png"))
    return [path for path in drawn if path is not None]


def _save(figure: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
