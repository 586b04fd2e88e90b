"""The report judges the targets from records alone: it finds the variants by role, and its
verdicts (met, missed, met by those measured, not measured) follow the figures; a
state-feedback model is judged by its own targets. No timing is asserted.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.analysis import Pivot
from bench.records import Record, ResultRecord, Shape, VariantRecord
from bench.roles import Role
from bench.targets import STATE_TARGETS, TARGETS, Target, targets_of
from bench.verdicts import judge, targets
from tests.bench_cases import STATE_CONFIG, STATE_LABEL, measured, run_record


def named(targets: tuple[Target, ...], name: str) -> Target:
    """The target called ``name``."""
    (found,) = [target for target in targets if target.name == name]
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
    outcomes = targets(Pivot.of(records))
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
        ("a", "compiled", "predict", 1, 1000, 2.0),
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
    outcomes = targets(pivot)
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
        ("a", "compiled", "predict", 1, 1000, 2.0),
    ],
}


@pytest.mark.parametrize(
    ("case", "rows"), STATE_VERDICTS.items(), ids=[key[0] for key in STATE_VERDICTS]
)
def test_a_state_targets_verdict_follows_the_figures(case: tuple, rows: list) -> None:
    _, name, judged, met = case
    outcome = judge(named(STATE_TARGETS, name), Pivot.of(state_run(records_of(rows))))
    assert outcome.met is met and judged in outcome.measured, outcome


# The targets as data --------------------------------------------------------------------------


def test_the_state_targets_are_the_output_ones_over_the_floor_with_their_own_limits() -> None:
    """Each state target is an output target over the floor, its statement prefixed, its limit
    ``STATE_LIMITS``'s where that has one."""
    from bench.targets import STATE, STATE_LIMITS, OverFloor

    over_floor = [t for t in TARGETS if isinstance(t.over, OverFloor) and t.variant is None]
    assert [t.name for t in STATE_TARGETS] == [t.name for t in over_floor]
    assert STATE_LIMITS.keys() <= {t.name for t in over_floor}
    for state, output in zip(STATE_TARGETS, over_floor, strict=True):
        limit = STATE_LIMITS.get(output.name, output.limit)
        assert state == replace(output, statement=STATE + output.statement, limit=limit)


def test_every_target_has_a_name_of_its_own() -> None:
    for table in (TARGETS, STATE_TARGETS):
        names = [target.name for target in table]
        assert len(set(names)) == len(names)


def test_where_the_targets_come_from_is_written_from_their_limits() -> None:
    """The prose states each limit as the targets hold it: a limit changed in the data is
    the limit the prose states."""
    from bench.targets import STATE_TARGETS_ORIGIN, TARGETS_ORIGIN, output_origin, state_origin

    assert "(3× for predict, 1.5× for the best" in TARGETS_ORIGIN
    assert "of which 300× is asked" in TARGETS_ORIGIN and "(1.15×)" in TARGETS_ORIGIN
    assert "(within 10%: 1.25× asked)" in STATE_TARGETS_ORIGIN
    assert "(4× asked, where the output model asks 3×" in STATE_TARGETS_ORIGIN
    changed = tuple(
        replace(t, limit=4.5) if t.name in ("predict_every", "batching") else t for t in TARGETS
    )
    assert "(4.5× for predict," in output_origin(changed)
    assert "**Batching** (4.5× the throughput" in output_origin(changed)
    state = tuple(replace(t, limit=1.75) if t.name == "predict_best" else t for t in STATE_TARGETS)
    assert "(within 10%: 1.75× asked)" in state_origin(state, TARGETS)
    output = tuple(replace(t, limit=3.5) if t.name == "train_best_batched" else t for t in TARGETS)
    assert "where the output model asks 3.5×" in state_origin(STATE_TARGETS, output)


def test_each_divisor_is_a_kind_of_its_own() -> None:
    """Over the floor (its gradient for a training step), over a role, over the variant
    itself at another shape: one field each, no value standing for another kind."""
    from bench.targets import OverFloor, OverItself, OverRole

    by_name = {target.name: target for target in TARGETS}
    assert by_name["predict_every"].over == OverFloor()
    assert by_name["train_every"].over == OverFloor("loss_and_grads")
    assert by_name["predict_textbook"].over == OverRole(Role.TEXTBOOK)
    assert by_name["floor_check"].over == OverRole(Role.CHECK)
    assert by_name["batching"].over == OverItself(Shape(1, 1000))
    assert by_name["linear_B256"].over == OverItself(Shape(256, 1000))
    assert by_name["batching"].text().startswith("batching pays: the best backend's predict")
    assert "at B=256 ≥ 8× its own at B=1" in by_name["batching"].text()


def test_a_target_over_the_floor_must_divide_time_per_step() -> None:
    from bench.analysis import THROUGHPUT
    from bench.targets import OverRole

    with pytest.raises(ValueError, match="metric"):
        Target("bad", "throughput over the floor", 2.0, metric=THROUGHPUT)
    Target("good", "throughput over the fix", 2.0, over=OverRole(Role.TEXTBOOK), metric=THROUGHPUT)


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
