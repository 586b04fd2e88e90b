"""The report's readings cannot mislead (each test feeds records that once did, with a control
that the honest reading stays), and the command line names a bad argument. No timing asserted."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

import frae
from bench.records import DEFAULT_MODEL, Key, Point, Record, RunRecord

pytest.importorskip("matplotlib", reason="the report needs matplotlib: pip install 'frae[bench]'")

from bench import analysis, plots, render, report, tables
from bench.cli import main
from bench.grid import model_label, read_config
from bench.targets import TARGETS_ORIGIN
from bench.verdicts import measured_targets, targets
from tests.bench_cases import measured, run_record


def markdown(records: list[Record]) -> str:
    """The Markdown report of ``records``, without plots."""
    return render.markdown(report.sections(records))


def terminal(records: list[Record]) -> str:
    """What the terminal shows of the report of ``records``."""
    return render.terminal(report.sections(records))


def on_models(models: dict[str, frae.FRAEConfig] | None = None) -> RunRecord:
    """The run's record of ``models`` (the default model alone unless given), predict at
    B=1, T=1000 on each."""
    models = models or {"default": frae.FRAEConfig()}
    return run_record(grid=[Point(label, 1, 1000, ("predict",)) for label in models], models=models)


# The per-call / per-step split -------------------------------------------------------------


def test_no_split_through_two_lengths() -> None:
    """Two T give a line whatever the times: a negative cost per step once came from such a
    line. Now no split, and the report says why."""
    records = [
        measured("keras", "compiled", "predict", 1, 100, 50.0),
        measured("keras", "compiled", "predict", 1, 1000, 4.0),
    ]
    pivot = analysis.Pivot.of(records)
    assert analysis.call_costs(pivot) == [] and tables.call_cost_rows(pivot) == []
    assert "not enough points" in (tables.unsplit_reason(pivot) or "")
    three = [*records, measured("keras", "compiled", "predict", 1, 10_000, 4.0)]
    assert tables.unsplit_reason(analysis.Pivot.of(three)) is None


def test_no_split_where_the_line_misses_a_measurement() -> None:
    """Three T that no line fits within ``FIT_TOLERANCE`` get no figures, only why."""
    records = [
        measured("bent", "compiled", "predict", 1, 100, 10.0),
        measured("bent", "compiled", "predict", 1, 1000, 1.0),
        measured("bent", "compiled", "predict", 1, 10_000, 10.0),
    ]
    (row,) = tables.call_cost_rows(analysis.Pivot.of(records))
    assert row[3].startswith("poor fit") and row[4] == "—"
    straight = [
        measured("line", "compiled", "predict", 1, t, 300 / t + 0.2) for t in (100, 1000, 10_000)
    ]
    (row,) = tables.call_cost_rows(analysis.Pivot.of(straight))
    assert row[3] == "300" and row[4].startswith("0.2")


def test_a_negative_fixed_cost_is_not_printed() -> None:
    """A line that fits but crosses below zero at T = 0 has no fixed cost to show."""
    records = [
        measured("fast", "compiled", "predict", 1, t, 1 - 20 / t) for t in (100, 1000, 10_000)
    ]
    (row,) = tables.call_cost_rows(analysis.Pivot.of(records))
    assert row[3] == "below resolution" and not row[3].startswith("-")


# Flags -------------------------------------------------------------------------------------


def test_a_part_slower_than_its_whole_is_flagged() -> None:
    """keras_rnn's gradient timed slower than its training step, which runs that gradient:
    flagged in the tables and listed, in the report and the terminal."""
    records = [
        on_models(),
        measured("keras_rnn", "compiled", "predict", 1, 1000, 1.0),
        measured("keras_rnn", "compiled", "loss_and_grads", 1, 1000, 17.1),
        measured("keras_rnn", "compiled", "train_step", 1, 1000, 5.82),
        measured("steady", "compiled", "predict", 1, 1000, 1.0),
        measured("steady", "compiled", "loss_and_grads", 1, 1000, 3.0),
        measured("steady", "compiled", "train_step", 1, 1000, 4.0),
    ]
    flagged = analysis.flags(analysis.Pivot.of(records))
    assert list(flagged) == [Key("keras_rnn", "loss_and_grads", DEFAULT_MODEL, 1, 1000)]
    assert (
        "train step, which contains it"
        in flagged[Key("keras_rnn", "loss_and_grads", DEFAULT_MODEL, 1, 1000)][0]
    )
    rows = {row[0]: row for row in tables.summary_rows(analysis.Pivot.of(records))}
    assert rows["keras_rnn"][3].endswith(tables.FLAG) and not rows["steady"][3].endswith("!")
    assert "keras_rnn loss_and_grads B=1 T=1000" in terminal(records)
    assert "## Readings to doubt" in markdown(records)


def test_a_wide_spread_is_flagged_and_a_tight_one_is_not() -> None:
    records = [
        measured("noisy", "compiled", "predict", 1, 1000, 1.0, spread=0.6),
        measured("quiet", "compiled", "predict", 1, 1000, 1.0, spread=0.05),
    ]
    flagged = analysis.flags(analysis.Pivot.of(records))
    assert list(flagged) == [Key("noisy", "predict", DEFAULT_MODEL, 1, 1000)]
    assert "IQR 60%" in flagged[Key("noisy", "predict", DEFAULT_MODEL, 1, 1000)][0]


# Tables say their shapes; the terminal fits 100 columns -------------------------------------

LONG_NAMES = ["numba_floor", "keras_defaults[tensorflow]", "torch_scan[defaults]"]


def quick_like_records() -> list:
    """What a quick run measures: every operation at B=1, T=100 and 1000, predict at B=256,
    figures with many digits."""
    records: list = [on_models()]
    for index, name in enumerate(LONG_NAMES):
        role = "floor" if index == 0 else "baseline"
        for steps in (100, 1000):
            for operation in ("predict", "loss_and_grads", "train_step"):
                us = 12.3456 * (index + 1) * (1 + len(operation) / 10)
                records.append(measured(name, role, operation, 1, steps, us))
        records.append(measured(name, role, "predict", 256, 1000, 12.3456 * (index + 1)))
    return records


def test_the_terminal_summary_fits_100_columns_and_says_its_shape() -> None:
    text = terminal(quick_like_records())
    assert max(len(line) for line in text.splitlines()) <= render.WIDTH
    assert text.startswith("B=1, T=1000:")
    assert "not enough points" in text  # two T: no split


def test_the_terminal_call_costs_and_flags_fit_100_columns() -> None:
    """A full grid's split (three T, one poor fit, one below resolution) and many flags."""
    records = quick_like_records()
    for index, name in enumerate(LONG_NAMES):
        for operation in ("predict", "loss_and_grads", "train_step"):
            us = 12.3456 * (index + 1) ** 2 * (1 + len(operation) / 10)
            records.append(measured(name, "compiled", operation, 1, 10_000, us, spread=0.8))
    text = terminal(records)
    assert "poor fit" in text and "readings to doubt" in text and "more" in text
    assert max(len(line) for line in text.splitlines()) <= render.WIDTH


def test_a_wide_models_section_fits_100_columns_too() -> None:
    label = model_label(WIDE)
    records = quick_like_records()
    records[0] = on_models({"default": frae.FRAEConfig(), label: WIDE})
    for index, name in enumerate(LONG_NAMES):
        for batch in (1, 256):
            for operation in ("predict", "train_step"):
                us = 123.456 * (index + 1) * batch
                records.append(measured(name, "compiled", operation, batch, 1000, us, model=label))
    text = terminal(records)
    assert f"model {label}:" in text and "train step B=256" in text
    assert max(len(line) for line in text.splitlines()) <= render.WIDTH


def test_the_markdown_report_says_where_targets_come_from_and_every_shape() -> None:
    text = markdown(quick_like_records())
    assert TARGETS_ORIGIN in text
    assert "## Summary at B=1, T=1000" in text
    assert "not enough points" in text and "## Cost per call and per step (B=1)" in text


# Plots -------------------------------------------------------------------------------------


def test_a_panel_of_one_point_per_variant_is_left_out() -> None:
    """Quick mode times the training step at one B: its throughput panel is gone, predict's
    (two B) stays."""
    pivot = analysis.Pivot.of(quick_like_records())
    panels = plots.scaling_panels(pivot, by_steps=False, value=1000)
    assert list(panels) == ["predict"]
    by_steps = plots.scaling_panels(pivot, by_steps=True, value=1)
    assert list(by_steps) == ["predict", "train_step"]


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


# Models ------------------------------------------------------------------------------------

WIDE = frae.FRAEConfig(encoder_units=(64,), latent_dim=16, decoder_units=(64,))


def test_models_are_labelled_by_their_widths() -> None:
    assert model_label(frae.FRAEConfig()) == "default"
    assert model_label(WIDE) == "2-64-16-64-2"
    tanh = frae.FRAEConfig(activation="tanh", output_activation="sigmoid")
    assert model_label(tanh) == "2-4-3-1-3-2 tanh/sigmoid"


def test_a_second_model_gets_its_own_section_and_targets() -> None:
    """Each model's measurements are pivoted apart: the default's table never shows the wide
    model's figures, and the wide model's targets are judged on its own floor."""
    label = model_label(WIDE)
    records = [on_models({"default": frae.FRAEConfig(), label: WIDE})]
    for model, scale in (("default", 1.0), (label, 10.0)):
        records += [
            measured("floor", "floor", "predict", 1, 1000, scale, model=model),
            measured("fast", "compiled", "predict", 1, 1000, 2 * scale, model=model),
        ]
    default, wide = analysis.Pivot.of(records), analysis.Pivot.of(records, label)
    assert default.figure(Key("fast", "predict", DEFAULT_MODEL, 1, 1000)) == pytest.approx(2.0)
    assert wide.figure(Key("fast", "predict", label, 1, 1000)) == pytest.approx(20.0)
    text = markdown(records)
    assert f"## Model {label}" in text and "encoder_units=[64]" in text
    judged = measured_targets(wide)
    assert judged and all("not measured" not in t.verdict for t in judged)
    wide_batch = [measured("fast", "compiled", "predict", 256, 1000, 200.0, model=label)]
    judged = measured_targets(analysis.Pivot.of([*records, *wide_batch], label))
    assert not [t for t in judged if t.statement.startswith("batching")]
    assert [t for t in targets(default) if t.statement.startswith("batching")]
    wide_train = [
        measured("floor", "floor", "loss_and_grads", 1, 1000, 10.0, model=label),
        measured("tf_while", "compiled", "train_step", 1, 1000, 20.0, model=label),
    ]
    judged = measured_targets(analysis.Pivot.of([*records, *wide_train], label))
    assert [t for t in judged if "training step" in t.statement]  # the general ones, judged
    assert not [t for t in judged if t.statement.startswith("tf_while's")]  # its own: default's


def test_config_reads_json_or_a_file(tmp_path: Path) -> None:
    fields = {"encoder_units": [64], "latent_dim": 16, "decoder_units": [64]}
    assert read_config(json.dumps(fields)) == WIDE
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(fields))
    assert read_config(str(path)) == WIDE


# The command line --------------------------------------------------------------------------

BAD_ARGUMENTS = {
    "steps-zero": (["--steps", "0"], "--steps"),
    "batch-negative": (["--batch", "-1"], "--batch"),
    "repeats-zero": (["--repeats", "0"], "--repeats"),
    "train-steps-few": (["--train-steps", "2"], "--train-steps"),
    "config-not-json": (["--config", "{latent: 16}"], "--config"),
    "config-no-file": (["--config", "no_such_file.json"], "--config"),
    "config-bad-field": (["--config", '{"latent_dim": 0}'], "latent_dim"),
    "config-unknown-field": (["--config", '{"width": 64}'], "width"),
    "variant-unknown": (["--variants", "no_such_variant"], "no_such_variant"),
    "port-not-importable": (["--variants", "no_such_module:Port"], "no_such_module"),
}


@pytest.mark.parametrize(("argv", "named"), BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS)
def test_bad_arguments_exit_2_naming_the_argument(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit status 2 before anything runs, the message naming what is wrong (once: exit 0
    with a report of failed cells)."""
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--out", str(tmp_path / "report"), "--no-progress"])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"frae {importlib.metadata.version('frae')}"


def test_a_figure_far_below_the_floor_is_flagged() -> None:
    """At width 64 a framework's matrix product ran 8× under the loop floor: the floor does
    not bound it there, and the reading says so rather than 'met, 25× to spare' alone."""
    records = [
        measured("floor", "floor", "predict", 1, 1000, 10.0),
        measured("blas", "compiled", "predict", 1, 1000, 1.2),
        measured("close", "compiled", "predict", 1, 1000, 9.0),
    ]
    flagged = analysis.flags(analysis.Pivot.of(records))
    assert list(flagged) == [Key("blas", "predict", DEFAULT_MODEL, 1, 1000)]
    assert "does not bound" in flagged[Key("blas", "predict", DEFAULT_MODEL, 1, 1000)][0]


@pytest.mark.parametrize(("long_step_s", "per_sample"), [(0.0, 1), (100.0, 5)])
def test_a_long_training_step_is_timed_one_per_sample(long_step_s: float, per_sample: int) -> None:
    """K = 5 steps a sample spread a fit call's own cost; a step longer than ``long_step_s``
    has none to spread, and is timed alone, which the note says."""
    from bench.job import Job, Settings
    from bench.records import Point
    from bench.worker import measure_shape

    settings = Settings(
        train_steps=5,
        long_call_s=100.0,
        long_step_s=long_step_s,
        repeats=3,
        min_time_s=0.0,
        budget_s=0.0,
        max_samples=3,
    )
    job = Job(variant="reference", backend="reference", settings=settings)
    (row,) = measure_shape(job, Point("default", 1, 20, ("train_step",)))
    assert row.steps_per_sample == per_sample and row.median_s is not None
    assert ("fit(x, epochs=1) a sample" in (row.note or "")) == (per_sample == 1)


def test_every_option_has_help_that_matches(capsys: pytest.CaptureFixture[str]) -> None:
    """Each option of ``frae bench --help`` says what it does (``--no-progress`` did not);
    --quick names the grid it runs."""
    import re

    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    text = capsys.readouterr().out
    blocks = re.split(r"\n(?=  -)", text[text.index("options:") :])[1:]
    described = {}
    for block in blocks:
        invocation, _, rest = block.strip().partition("  ")  # argparse: two spaces, or a line
        invocation, _, below = invocation.partition("\n")
        described[invocation.split()[0].rstrip(",")] = " ".join((rest + below).split())
    assert "--no-progress" in described and "--config" in described
    assert {option for option, words in described.items() if not words} == set()
    assert "predict at B=1, T=100" in described["--quick"]
