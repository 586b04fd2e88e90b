"""The report's plots, as PNGs, from one ``Pivot``: time per step against T, throughput
against B, the stream's time per frame against the chunk length, and the first calls.

Every variant keeps one style (``styles``) in every plot of a run; its points are joined by
a line only where it has ``MIN_LINE_POINTS`` of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bench.grid import BATCHED_SHAPE
from bench.records import OPERATIONS, SIDES, STREAM
from bench.reporting.analysis import Pivot, label
from bench.roles import Role

MIN_LINE_POINTS = 3
"""A variant's points are joined by a line only where it has this many: a line through two
always fits and says nothing of what lies between them (on log axes, a power law nobody
measured); with fewer, its markers stand alone."""
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
"""Each role's line style, where a variant's points make a line; any other role's is solid."""
GREYS = {
    Role.FLOOR: "black",
    Role.SIMD_FLOOR: "darkgray",
    Role.MATRIX_FLOOR: "gray",
    Role.CHECK: "dimgray",
}
"""The floors and the check in greys, told apart by their markers; every other variant takes
a colour of ``palette``."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h")
"""Eight markers beside the palette's nine colours: as 8 and 9 share no factor, the i-th
coloured variant starts from the (i mod 9)-th colour and the (i mod 8)-th marker, and the
first 72 differ in one or the other."""
OPERATION_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "h")
"""The first calls' marker of each of ``OPERATIONS`` in turn, repeated past the eighth."""
ROW_BAND = 0.66
"""How much of its row a variant's first calls spread over, one operation above the next."""


class Style(NamedTuple):
    """How one variant is drawn in every plot of a run."""

    colour: str
    marker: str
    line: str
    """Its role's line style (``LINES``), where its points make a line."""

    def drawn(self, joined: bool) -> dict[str, Any]:
        """Matplotlib's keywords for a series of points, ``joined`` by a line or not."""
        linestyle = self.line if joined else "None"
        return {"color": self.colour, "marker": self.marker, "linestyle": linestyle}


def palette() -> list[str]:
    """Matplotlib's ten qualitative colours but its grey, which is the check's."""
    import matplotlib
    from matplotlib.colors import to_hex

    tab10 = matplotlib.colormaps["tab10"]
    return [to_hex(tab10(i)) for i in range(10) if i != 7]


def styles(roles: Mapping[str, Role]) -> dict[str, Style]:
    """variant -> its style, from the variants of a run in its order (``Pivot.roles``, the
    same for each of its models): the floors and the check in their greys, every other
    variant the palette's next colour; each the next of ``MARKERS`` not yet drawn in its
    colour, so no two share both while a colour has a marker left (8 variants a colour)."""
    colours = palette()
    greys, coloured = 0, 0
    found: dict[str, Style] = {}
    for name, role in roles.items():
        if role in GREYS:
            colour, start, greys = GREYS[role], greys, greys + 1
        else:
            colour, start = colours[coloured % len(colours)], coloured
            coloured += 1
        turn = start % len(MARKERS)
        markers = MARKERS[turn:] + MARKERS[:turn]
        taken = {style.marker for style in found.values() if style.colour == colour}
        marker = next((m for m in markers if m not in taken), markers[0])
        found[name] = Style(colour, marker, LINES.get(role, "-"))
    return found


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


def _scaling_figure(pivot: Pivot, by_steps: bool, value: int) -> Any:
    """``scaling_panels`` side by side, or ``None`` where there is none."""
    panels = scaling_panels(pivot, by_steps, value)
    held = "B" if by_steps else "T"
    titles = {op: f"{label(op)}, {held}={value}{pivot.on}" for op in panels}
    x_label = "T (time steps)" if by_steps else "B (sequences per call)"
    y_label = "µs per time step (median)" if by_steps else "sequence-steps per second"
    return _panels_figure(pivot, panels, titles, (x_label, y_label))


def _stream_figure(pivot: Pivot) -> Any:
    """``stream_panels`` side by side, or ``None`` where there is none."""
    panels = stream_panels(pivot)
    titles = {side: f"stream, {side}, B=1{pivot.on}" for side in panels}
    labels = ("frames per call (chunk length)", "µs per frame (median)")
    return _panels_figure(pivot, panels, titles, labels)


def _panels_figure(
    pivot: Pivot, panels: dict[str, Panel], titles: dict[str, str], labels: tuple[str, str]
) -> Any:
    """``panels`` side by side on log axes, each variant in its style (``styles``), a line
    where it has ``MIN_LINE_POINTS`` points, its markers alone elsewhere; the legend in the
    run's order. ``None`` where there is no panel."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    if not panels:
        return None
    style = styles(pivot.roles)
    joined: dict[str, bool] = {}
    for lines in panels.values():
        for name, points in lines.items():
            joined[name] = joined.get(name, False) or len(points) >= MIN_LINE_POINTS
    names = [name for name in pivot.roles if name in joined]
    size = (13 if len(panels) > 1 else 8, max(4.8, 0.19 * len(names) + 0.6))
    figure, axes = plt.subplots(1, len(panels), figsize=size, sharey=True, layout="constrained")
    axes = np.atleast_1d(axes)
    for axis, (panel, lines) in zip(axes, panels.items(), strict=True):
        for name, points in lines.items():
            xs, ys = zip(*sorted(points), strict=True)
            axis.plot(xs, ys, label=name, **style[name].drawn(len(points) >= MIN_LINE_POINTS))
        axis.set(xscale="log", yscale="log", title=titles[panel], xlabel=labels[0])
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(labels[1])
    handles = [Line2D([], [], label=name, **style[name].drawn(joined[name])) for name in names]
    figure.legend(handles=handles, loc="outside right center", fontsize=8)
    return figure


def _wide_steps(pivot: Pivot) -> int:
    """The T of the throughput plot: T=1000, where every variant runs, if measured at several
    B; else the T with the most B, the longest of those."""
    batches_at: dict[int, set[int]] = {}
    for key in pivot.results:
        batches_at.setdefault(key.steps, set()).add(key.batch)
    if len(batches_at.get(BATCHED_SHAPE.steps, ())) >= 2:
        return BATCHED_SHAPE.steps
    return max(batches_at, key=lambda t: (len(batches_at[t]), t), default=0)


def operation_marker(operation: str) -> str:
    """The first calls' marker of one of ``OPERATIONS``, by its place there."""
    return OPERATION_MARKERS[OPERATIONS.index(operation) % len(OPERATION_MARKERS)]


def first_call_figure(pivot: Pivot) -> Any:
    """Each operation's first call per variant, one row a variant in its colour, a marker an
    operation (``OPERATION_MARKERS``), each point labelled with the shape it compiled; or
    ``None``. Points, not bars: a bar on a log axis starts at an arbitrary value."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    compiles = {k: first for k, first in pivot.first_calls().items() if k[1] in OPERATIONS}
    if not compiles:
        return None
    style = styles(pivot.roles)
    names = list(dict.fromkeys(name for name, _ in compiles))
    found = [op for op in OPERATIONS if op in {operation for _, operation in compiles}]
    figure, axis = plt.subplots(figsize=(10, 0.45 * len(names) + 1.5), layout="constrained")
    for index, operation in enumerate(found):
        rows = [(row, name) for row, name in enumerate(names) if (name, operation) in compiles]
        at = [row + (index - (len(found) - 1) / 2) * ROW_BAND / len(found) for row, _ in rows]
        firsts = [compiles[name, operation] for _, name in rows]
        colours = [style[name].colour for _, name in rows]
        seconds = [first.seconds for first in firsts]
        axis.scatter(seconds, at, c=colours, marker=operation_marker(operation))
        for y, first in zip(at, firsts, strict=True):
            shape = f"B={first.shape.batch}, T={first.shape.steps}"
            axis.annotate(
                shape, (first.seconds, y), xytext=(4, -3), textcoords="offset points", fontsize=6
            )
    axis.set_yticks(range(len(names)), names)
    axis.invert_yaxis()
    title = "first call of each operation in a fresh process (trace and compile), at its shape"
    axis.set(xscale="log", xlabel="seconds", title=title)
    axis.grid(True, axis="x", which="both", alpha=0.3)
    handles = [
        Line2D(
            [], [], color="black", marker=operation_marker(op), linestyle="None", label=label(op)
        )
        for op in found
    ]
    axis.legend(handles=handles, fontsize=8)
    return figure


def figures(pivot: Pivot) -> dict[str, Any]:
    """file name -> figure, for the plots of ``pivot`` with something to draw."""
    import matplotlib

    matplotlib.use("Agg")
    drawn = {
        "step_time_vs_T": _scaling_figure(pivot, True, 1),
        "throughput_vs_B": _scaling_figure(pivot, False, _wide_steps(pivot)),
        "stream_frame_vs_chunk": _stream_figure(pivot),
        "first_call": first_call_figure(pivot),
    }
    return {name: figure for name, figure in drawn.items() if figure is not None}


def plots(pivot: Pivot, out: Path, suffix: str = "") -> list[Path]:
    """The plots as PNGs in ``out``, those with nothing to draw left out."""
    return [_save(figure, out / f"{name}{suffix}.png") for name, figure in figures(pivot).items()]


def _save(figure: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
