"""``bench.reporting.verdicts``: each verdict follows the figures; each model judged by its own
targets."""

from __future__ import annotations

from dataclasses import replace

import pytest

import frae
from bench.grid import model_label
from bench.records import DEFAULT_MODEL, SENDER, Key, Record, ResultRecord, VariantRecord
from bench.reporting.analysis import Pivot
from bench.reporting.sections.stream import STREAM_TARGETS
from bench.reporting.sections.summary import STATE_TARGETS, TARGETS, targets_of
from bench.reporting.sections.wide_layers import ROOFLINE_MODEL, measured_targets, roofline_targets
from bench.reporting.targets import Target
from bench.reporting.verdicts import judge, targets
from tests.bench_cases import (
    STATE_CONFIG,
    STATE_LABEL,
    WIDE,
    kept_calls,
    markdown,
    measured,
    on_models,
    run_record,
    streamed,
    wide_run,
)


def named(table: tuple[Target, ...] | str, name: str = "") -> Target:
    """The target called ``name`` in ``table``; given a name alone, the roofline's target."""
    from bench.reporting.sections.wide_layers import ROOFLINE_TARGETS

    table, name = (ROOFLINE_TARGETS, table) if isinstance(table, str) else (table, name)
    (found,) = [target for target in table if target.name == name]
    return found


def test_targets_find_the_variants_by_role_not_by_name() -> None:
    """A floor, a textbook fix and a compiled backend under names the harness never uses
    are judged: every target over the compiled backends is measured, none is skipped."""
    records = [
        measured("my_floor", "floor", "predict", 1, 1000, 1.0),
        measured("my_floor", "floor", "loss_and_grads", 1, 1000, 2.0),
        measured("my_vector_floor", "simd_floor", "predict", 256, 1000, 10.0),
        measured("my_vector_floor", "simd_floor", "loss_and_grads", 256, 1000, 2.0),
        measured("slow_one", "textbook", "predict", 1, 1000, 1000.0),
        measured("slow_one", "textbook", "train_step", 1, 1000, 1000.0),
        measured("mystery", "compiled", "predict", 1, 1000, 2.0),
        measured("mystery", "compiled", "train_step", 1, 1000, 4.0),
        measured("mystery", "compiled", "predict", 256, 1000, 20.0),
        *(measured("mystery", "compiled", "train_step", b, 10_000, 4.0) for b in (1, 256)),
        measured("mystery", "compiled", "train_step", 256, 1000, 4.0),
        measured("helper", "baseline", "predict", 1, 1000, 0.1),  # not held to the targets
    ]
    outcomes = targets(Pivot.of(records), TARGETS)
    judged = [o for o in outcomes if "compiled" in o.statement or "best" in o.statement]
    assert len(judged) == 11  # the frameworks' own targets name variants not in this run
    for outcome in judged:
        assert "mystery" in outcome.measured and "helper" not in outcome.measured, outcome
        assert outcome.met is not None, outcome


# Each case, (id, target by its name in TARGETS, verdict, met): its records, as
# ``measured``'s arguments (variant, role, operation, B, T, µs per step) or a record.
VERDICTS: dict[tuple[str, str, str, bool | None], list] = {
    ("every-missed-by-the-worst", "predict_every", "missed by 1.33×", False): [
        ("floor", "floor", "predict", 1, 1000, 1.0),
        ("a", "compiled", "predict", 1, 1000, 2.0),
        ("b", "compiled", "predict", 1, 1000, 4.0),
    ],
    ("best-met-by-the-best", "predict_best", "met, 1.25× to spare", True): [
        ("floor", "floor", "predict", 1, 1000, 1.0),
        ("a", "compiled", "predict", 1, 1000, 1.2),
        ("b", "compiled", "predict", 1, 1000, 4.0),
    ],
    ("met-by-those-measured", "predict_every", "met by those measured, 1.50× to spare", None): [
        ("floor", "floor", "predict", 1, 1000, 1.0),
        ("a", "compiled", "predict", 1, 1000, 2.0),
        VariantRecord("b", "compiled", skipped="not installed"),
    ],
    ("training-over-the-floor-gradient", "train_every", "missed by 1.33×", False): [
        ("floor", "floor", "loss_and_grads", 1, 1000, 1.0),
        ("floor", "floor", "train_step", 1, 1000, 100.0),  # not the divisor
        ("a", "compiled", "train_step", 1, 1000, 8.0),
    ],
    ("speed-up-over-the-textbook-fix", "predict_textbook", "missed by 1.50×", False): [
        ("fix", "textbook", "predict", 1, 1000, 200.0),
        ("a", "compiled", "predict", 1, 1000, 1.0),
    ],
    ("batching-judges-the-fastest-at-B=256", "batching", "missed by 2.00×", False): [
        ("a", "compiled", "predict", 1, 1000, 1.0),
        ("a", "compiled", "predict", 256, 1000, 64.0),  # 4× its throughput at B=1
        ("b", "compiled", "predict", 1, 1000, 100.0),
        ("b", "compiled", "predict", 256, 1000, 100.0),  # 256×, but slower
    ],
    ("floor-check-at-every-shape", "floor_check", "missed by 1.33×", False): [
        ("floor", "floor", "predict", 1, 100, 1.0),
        ("floor", "floor", "predict", 1, 1000, 2.0),
        ("c", "check", "predict", 1, 100, 1.0),
        ("c", "check", "predict", 1, 1000, 1.0),
    ],
    ("linear-in-T-against-its-own-T=1000", "linear_B1", "met, 1.05× to spare", True): [
        ("a", "compiled", "train_step", 1, 1000, 2.0),
        ("a", "compiled", "train_step", 1, 10_000, 2.2),
        ("b", "compiled", "train_step", 1, 1000, 1.0),
        ("b", "compiled", "train_step", 1, 10_000, 1.0),
    ],
    ("linear-in-T-missed-by-the-worst-at-B=256", "linear_B256", "missed by 2.61×", False): [
        ("a", "compiled", "train_step", 256, 1000, 10.0),
        ("a", "compiled", "train_step", 256, 10_000, 30.0),
        ("b", "compiled", "train_step", 256, 1000, 1.0),
        ("b", "compiled", "train_step", 256, 10_000, 1.0),
    ],
    ("best-predict-B=256-over-the-simd-floor", "predict_best_batched", "missed by 1.12×", False): [
        ("scalar", "floor", "predict", 256, 1000, 10.0),
        ("vector", "simd_floor", "predict", 256, 1000, 4.0),
        ("a", "compiled", "predict", 256, 1000, 9.0),
        ("b", "compiled", "predict", 256, 1000, 12.0),
    ],
    ("best-training-B=256-over-simd-bptt", "train_best_batched", "met, 1.09× to spare", True): [
        ("vector", "simd_floor", "loss_and_grads", 256, 1000, 4.0),
        ("vector", "simd_floor", "train_step", 256, 1000, 40.0),
        ("a", "compiled", "train_step", 256, 1000, 11.0),
        ("b", "compiled", "train_step", 256, 1000, 30.0),
    ],
    ("not-measured-without-a-floor", "predict_every", "not measured", None): [
        ("a", "compiled", "predict", 1, 1000, 2.0)
    ],
}


def records_of(rows: list) -> list[Record]:
    """Each row a record: ``measured``'s arguments made one, a record kept."""
    return [measured(*row) if isinstance(row, tuple) else row for row in rows]


@pytest.mark.parametrize(("case", "rows"), VERDICTS.items(), ids=[key[0] for key in VERDICTS])
def test_a_targets_verdict_follows_the_figures(case: tuple, rows: list) -> None:
    _, name, verdict, met = case
    outcome = judge(named(TARGETS, name), Pivot.of(records_of(rows)))
    assert (outcome.verdict, outcome.met) == (verdict, met), outcome


def state_run(records: list[Record]) -> list[Record]:
    """``records`` made measurements of the state-feedback model, after the run's record."""
    moved = [replace(r, model=STATE_LABEL) if isinstance(r, ResultRecord) else r for r in records]
    return [run_record(models={STATE_LABEL: STATE_CONFIG}), *moved]


def test_a_state_feedback_model_is_judged_by_its_own_targets() -> None:
    """The state model's targets over the floor that runs the GRU, at B=1 and B=256; an
    output-feedback run keeps ``TARGETS``."""
    records = state_run(
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("floor", "floor", "loss_and_grads", 1, 1000, 2.0),
            measured("vector", "simd_floor", "predict", 256, 1000, 10.0),
            measured("vector", "simd_floor", "loss_and_grads", 256, 1000, 20.0),
            measured("a", "compiled", "predict", 1, 1000, 2.0),
            measured("a", "compiled", "train_step", 1, 1000, 4.0),
            measured("a", "compiled", "predict", 256, 1000, 15.0),
            measured("a", "compiled", "train_step", 256, 1000, 40.0),
        ]
    )
    pivot = Pivot.of(records)
    assert pivot.state_feedback and targets_of(pivot) == STATE_TARGETS
    outcomes = targets(pivot, targets_of(pivot))
    assert len(outcomes) == len(STATE_TARGETS)
    assert all(o.statement.startswith("state feedback: ") for o in outcomes)
    assert all(o.met is not None and "a " in o.measured for o in outcomes), outcomes
    output = Pivot.of([run_record(), *records[1:]])
    assert not output.state_feedback and targets_of(output) == TARGETS


# Each case, (id, state target by its name in STATE_TARGETS, the ratio it judges (the worst
# or the best), met): its records, as in ``VERDICTS``.
STATE_VERDICTS: dict[tuple[str, str, str, bool | None], list] = {
    ("every-predict-missed-by-the-worst", "predict_every", "b 10×", False): [
        ("floor", "floor", "predict", 1, 1000, 1.0),
        ("a", "compiled", "predict", 1, 1000, 2.0),
        ("b", "compiled", "predict", 1, 1000, 10.0),
    ],
    ("best-training-over-the-simd-floors-gradient", "train_best_batched", "a 1.1×", True): [
        ("scalar", "floor", "loss_and_grads", 256, 1000, 100.0),
        ("vector", "simd_floor", "loss_and_grads", 256, 1000, 10.0),
        ("a", "compiled", "train_step", 256, 1000, 11.0),
        ("b", "compiled", "train_step", 256, 1000, 90.0),
    ],
    ("not-measured-without-a-floor", "predict_best", "not measured in this run", None): [
        ("a", "compiled", "predict", 1, 1000, 2.0)
    ],
}


@pytest.mark.parametrize(
    ("case", "rows"), STATE_VERDICTS.items(), ids=[key[0] for key in STATE_VERDICTS]
)
def test_a_state_targets_verdict_follows_the_figures(case: tuple, rows: list) -> None:
    _, name, judged, met = case
    outcome = judge(named(STATE_TARGETS, name), Pivot.of(state_run(records_of(rows))))
    assert outcome.met is met and judged in outcome.measured, outcome


def test_a_framework_s_own_target_judges_that_variant_alone() -> None:
    """``train_tf_while`` reads tf_while's training step over the floor's gradient and no
    other compiled backend's; unmeasured, it is not measured, whatever the others did."""
    target = named(TARGETS, "train_tf_while")
    records = [
        measured("numba_floor", "floor", "loss_and_grads", 1, 1000, 1.0),
        measured("tf_while", "compiled", "train_step", 1, 1000, 4.0),
        measured("jax_scan", "compiled", "train_step", 1, 1000, 9.0),
    ]
    outcome = judge(target, Pivot.of(records))
    assert outcome.measured.startswith("tf_while 4×") and "jax_scan" not in outcome.measured
    assert outcome.met is True
    assert judge(target, Pivot.of([records[0], records[2]])).verdict == "not measured"


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
    default, wide = Pivot.of(records), Pivot.of(records, label)
    assert default.figure(Key("fast", "predict", DEFAULT_MODEL, 1, 1000)) == pytest.approx(2.0)
    assert wide.figure(Key("fast", "predict", label, 1, 1000)) == pytest.approx(20.0)
    text = markdown(records)
    assert f"## Model {label}" in text and "encoder_units=[64]" in text
    judged = measured_targets(wide)
    assert judged and all("not measured" not in t.verdict for t in judged)
    wide_batch = [measured("fast", "compiled", "predict", 256, 1000, 200.0, model=label)]
    judged = measured_targets(Pivot.of([*records, *wide_batch], label))
    assert not [t for t in judged if t.statement.startswith("batching")]
    assert [t for t in targets(default, TARGETS) if t.statement.startswith("batching")]
    wide_train = [
        measured("floor", "floor", "loss_and_grads", 1, 1000, 10.0, model=label),
        measured("tf_while", "compiled", "train_step", 1, 1000, 20.0, model=label),
    ]
    judged = measured_targets(Pivot.of([*records, *wide_train], label))
    assert [t for t in judged if "training step" in t.statement]  # the general ones, judged
    assert not [t for t in judged if t.statement.startswith("tf_while's")]  # its own: default's


@pytest.mark.parametrize(
    ("name", "verdict", "met"),
    [
        ("predict_roofline", "met, 1.50× to spare", True),
        ("train_roofline", "missed by 1.33×", False),
    ],
)
def test_the_best_route_is_judged_on_the_wide_model(name: str, verdict: str, met: bool) -> None:
    """The best framework route is judged, every route's ratio shown, the floors' not."""
    outcome = judge(named(name), Pivot.of(wide_run(), ROOFLINE_MODEL))
    assert outcome.verdict == verdict and outcome.met is met
    assert "jax" in outcome.measured and "torch" in outcome.measured
    assert "matrix" not in outcome.measured


def test_the_roofline_targets_are_not_judged_on_another_model() -> None:
    default = Pivot.of(wide_run())  # the run's first model, the default
    assert not roofline_targets(default)
    assert not judge(named("predict_roofline"), default).judged
    assert not judge(named("predict_roofline"), Pivot.of(wide_run(None), ROOFLINE_MODEL)).judged


ROUTES = [
    streamed("floor", "floor", SENDER, 1, 0.5),
    streamed("floor", "floor", SENDER, 10, 1.0),
    streamed("oracle", "reference", SENDER, 1, 1.0),  # no framework route
    streamed("oracle", "reference", SENDER, 10, 1.0),
    streamed("a", "compiled", SENDER, 1, 12.0),
    streamed("a", "compiled", SENDER, 10, 2.5),
    streamed("b", "compiled", SENDER, 1, 150.0),
    streamed("b", "compiled", SENDER, 10, 50.0),
    streamed("route", "baseline", SENDER, 1, 40.0),
    streamed("route", "baseline", SENDER, 10, 4.0),
]
EAGER = [*ROUTES, streamed("eager", "baseline", SENDER, 1, 8.0)]
# Each case: (id, target, records, verdict, met, what the measured column shows).
STREAM_VERDICTS = [
    ("best-not-floor-nor-oracle", "sender_frame_best", ROUTES, "missed by 1.20×", False, "a 12 µs"),
    ("best-of-all", "sender_frame_best", EAGER, "met, 1.25× to spare", True, "(best: eager)"),
    ("every-missed-by-worst", "sender_frame_every", ROUTES, "missed by 1.50×", False, "(worst: b)"),
    ("chunks-over-floor", "sender_chunk_best", ROUTES, "met, 1.20× to spare", True, "a 2.5×"),
    ("receiver-apart", "receiver_frame_best", ROUTES, "not measured", None, "not measured"),
]


@pytest.mark.parametrize(
    ("case", "name", "records", "verdict", "met", "shown"),
    STREAM_VERDICTS,
    ids=[case[0] for case in STREAM_VERDICTS],
)
def test_a_stream_targets_verdict_follows_the_figures(
    case: str, name: str, records: list[Record], verdict: str, met: bool | None, shown: str
) -> None:
    outcome = judge(named(STREAM_TARGETS, name), Pivot.of(records))
    assert (outcome.verdict, outcome.met) == (verdict, met), outcome
    assert shown in outcome.measured and "oracle" not in outcome.measured, outcome


@pytest.mark.parametrize(
    ("variant_s", "verdict", "met"),
    [
        ([2.0, 2.2, 2.4, 2.6], "met, 1.30× to spare", True),
        ([2.0, 2.8, 3.2, 3.6], "within the spread: 2.6–3.3 against 3", None),
        ([3.4, 3.6, 3.8, 4.0], "missed by 1.23×", False),
    ],
)
def test_a_target_is_met_or_missed_only_where_its_spread_is_on_one_side(
    variant_s: list[float], verdict: str, met: bool | None
) -> None:
    """The ratio to the floor from the calls in turn with it: its quartiles crossing the
    limit leave the verdict to the spread."""
    floor = {"numba_floor": [1.0] * 4}
    record = kept_calls(variant_s, "jax_scan", "predict", 1, 1000, role="compiled")
    records = [measured("numba_floor", "floor", "predict", 1, 1000, 1.0)]
    records.append(replace(record, partners_s=floor))
    outcome = judge(named(TARGETS, "predict_every"), Pivot.of(records))
    assert (outcome.verdict, outcome.met) == (verdict, met), outcome
    assert "jax_scan" in outcome.measured and "(" in outcome.measured, "the spread is shown"
