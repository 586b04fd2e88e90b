"""``bench.reporting.plots``: no panel of one point per variant; first calls as points; the
stream's panel; one style per variant, the same in every plot of a run; a line only through
three points or more; any number of operations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from bench.records import OPERATIONS, RECEIVER, SENDER, Record, ResultRecord
from bench.reporting import analysis, plots
from bench.roles import Role
from tests.bench_cases import LONG_NAMES, STREAMS, measured, quick_like_records

if TYPE_CHECKING:
    from matplotlib.lines import Line2D

pytest.importorskip("matplotlib", reason="the report needs matplotlib: pip install 'frae[bench]'")


def test_a_panel_of_one_point_per_variant_is_left_out() -> None:
    """Quick mode times the training step at one B: its throughput panel is gone, predict's
    (two B) stays."""
    pivot = analysis.Pivot.of(quick_like_records())
    assert list(plots.scaling_panels(pivot, by_steps=False, value=1000)) == ["predict"]
    assert list(plots.scaling_panels(pivot, by_steps=True, value=1)) == ["predict", "train_step"]


def test_first_calls_are_points_labelled_with_their_shape() -> None:
    """No bars (which on a log axis start at an arbitrary 1e-4): one point per variant and
    operation, each labelled with the (B, T) that was compiled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    pivot = analysis.Pivot.of(quick_like_records())
    assert pivot.first_calls()["numba_floor", "predict"] == (1.0, (1, 100))
    figure = plots.first_call_figure(pivot)
    (axis,) = figure.axes
    bars = [p for p in axis.patches if isinstance(p, Rectangle)]
    labels = [text.get_text() for text in axis.texts]
    plt.close(figure)
    assert bars == []
    assert len(labels) == len(LONG_NAMES) * 3 and set(labels) == {"B=1, T=100"}


def test_the_stream_plot_draws_frames_per_call_on_each_side() -> None:
    panels = plots.stream_panels(analysis.Pivot.of(STREAMS))
    assert list(panels) == [SENDER, RECEIVER]
    assert sorted(panels[SENDER]["fast"]) == [(1, pytest.approx(21.0)), (10, pytest.approx(3.0))]


def drawn_lines(figure: Any) -> list[Line2D]:
    """The series drawn in ``figure``'s panels (the legend's handles aside)."""
    return [line for axis in figure.axes for line in axis.get_lines()]


def styled(line: Line2D) -> tuple[str, str]:
    """(colour, marker) of a drawn series."""
    from matplotlib.colors import to_hex

    return to_hex(line.get_color()), str(line.get_marker())


def first_call_colours(figure: Any) -> dict[str, set[str]]:
    """variant -> the colours of its points in the first calls' figure, by their row."""
    from matplotlib.colors import to_hex

    (axis,) = figure.axes
    names = [text.get_text() for text in axis.get_yticklabels()]
    found: dict[str, set[str]] = {}
    for collection in axis.collections:
        for (_, y), colour in zip(
            collection.get_offsets(), collection.get_facecolors(), strict=True
        ):
            found.setdefault(names[round(y)], set()).add(to_hex(colour))
    return found


def close(figures: dict[str, Any]) -> None:
    import matplotlib.pyplot as plt

    for figure in figures.values():
        plt.close(figure)


def many_variants(count: int) -> list[ResultRecord]:
    """``count`` variants of every role in turn, each timing predict at B=1 and T = 10, 100
    and 1000."""
    roles = list(Role)
    return [
        measured(f"variant_{index}", roles[index % len(roles)], "predict", 1, steps, index + 1.0)
        for index in range(count)
        for steps in (10, 100, 1000)
    ]


def test_thirty_variants_are_drawn_in_thirty_styles() -> None:
    """Matplotlib's ten colours repeat at the eleventh line: no two variants may share their
    (colour, marker), the floors' and the check's greys included, and those four differ in
    their markers."""
    figures = plots.figures(analysis.Pivot.of(many_variants(30)))
    lines = drawn_lines(figures["step_time_vs_T"])
    close(figures)
    assert len(lines) == 30
    assert len({styled(line) for line in lines}) == 30
    greys = {f"variant_{index}" for index, role in enumerate(Role) if role in plots.GREYS}
    markers = {line.get_marker() for line in lines if line.get_label() in greys}
    assert len(greys) == len(markers) == 4  # the floors and the check, by marker too


def test_a_variant_keeps_its_style_in_every_plot_of_a_run() -> None:
    """The second model measures a few of the variants, the last of the run first: each
    keeps the style the run's order gave it, in every plot of both models, its colour in the
    first calls' rows too."""
    records: list[Record] = [*quick_like_records(), *many_variants(12), *STREAMS]
    for index, name in reversed(list(enumerate(LONG_NAMES))):
        for batch, steps in ((1, 100), (1, 1000), (1, 10_000), (256, 1000)):
            us = 1.0 + index
            records.append(
                measured(name, "compiled", "train_step", batch, steps, us, model="other")
            )
    styles: dict[str, set[tuple[str, str]]] = {}
    colours: dict[str, set[str]] = {}
    for model in (None, "other"):
        figures = plots.figures(analysis.Pivot.of(records, model))
        for line in (line for figure in figures.values() for line in drawn_lines(figure)):
            styles.setdefault(str(line.get_label()), set()).add(styled(line))
        for name, seen in first_call_colours(figures["first_call"]).items():
            colours.setdefault(name, set()).update(seen)
        close(figures)
    assert set(LONG_NAMES) | {"fast", "variant_11"} <= set(styles)
    assert {name: len(seen) for name, seen in styles.items()} == dict.fromkeys(styles, 1)
    assert {name: colours[name] for name in LONG_NAMES} == {
        name: {colour for colour, _ in styles[name]} for name in LONG_NAMES
    }


def test_a_series_of_two_points_is_markers_alone() -> None:
    """A line through two points says nothing of the curve between them: quick mode's two T
    and the stream's two chunk lengths are drawn as markers; three T make a line. (The
    stream's variant "fast" adds one point to predict's panel.)"""
    records = [*quick_like_records(), *STREAMS]
    records.append(measured("numba_floor", "floor", "predict", 1, 10_000, 12.0))
    figures = plots.figures(analysis.Pivot.of(records))
    by_steps = drawn_lines(figures["step_time_vs_T"])
    stream = drawn_lines(figures["stream_frame_vs_chunk"])
    close(figures)
    joined = [line for line in by_steps if line.get_linestyle() != "None"]
    steps = [(line.get_label(), np.asarray(line.get_xdata()).tolist()) for line in joined]
    assert steps == [("numba_floor", [100, 1000, 10_000])]
    assert len(by_steps) == 7 and all(line.get_marker() not in ("None", "") for line in by_steps)
    assert len(stream) == 4 and {line.get_linestyle() for line in stream} == {"None"}


def test_a_fourth_operation_is_drawn_with_a_marker_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An operation added to ``bench.records.OPERATIONS`` needs no change to the plots."""
    monkeypatch.setattr(plots, "OPERATIONS", (*OPERATIONS, "encode"))
    records = [*quick_like_records(), measured("numba_floor", "floor", "encode", 1, 100, 1.0)]
    figures = plots.figures(analysis.Pivot.of(records))
    (axis,) = figures["first_call"].axes
    legend = axis.get_legend()
    names = [text.get_text() for text in legend.get_texts()]
    markers = {handle.get_marker() for handle in legend.legend_handles}
    points = sum(len(collection.get_offsets()) for collection in axis.collections)
    close(figures)
    assert names == ["predict", "loss_and_grads", "train step", "encode"] and len(markers) == 4
    assert points == len(LONG_NAMES) * 3 + 1
