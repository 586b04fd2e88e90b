"""``bench.reporting.plots``: no panel of one point per variant; first calls as points; the
stream's panel."""

from __future__ import annotations

import pytest

from bench.records import RECEIVER, SENDER
from bench.reporting import analysis, plots
from tests.bench_cases import LONG_NAMES, STREAMS, quick_like_records

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
