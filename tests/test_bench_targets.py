"""The report judges the targets from records alone: it finds the variants by role, and its
verdicts (met, missed, met by those measured, not measured) follow the figures; a
state-feedback model is judged by its own targets. No timing is asserted.
"""

from __future__ import annotations

import pytest

from bench.records import Record, ResultRecord, RunRecord, VariantRecord
from tests.bench_cases import STATE_CONFIG, STATE_LABEL, measured


def test_targets_find_the_variants_by_role_not_by_name() -> None:
    """A floor, a textbook fix and a compiled backend under names the harness never uses
    are judged: every target over the compiled backends is measured, none is skipped."""
    from bench.report import Pivot, targets

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
    assert len(judged) == 11
    for outcome in judged:
        assert "mystery" in outcome.measured and "helper" not in outcome.measured, outcome
        assert outcome.met is not None, outcome


# Each case: a target (by its place in TARGETS), records, the verdict and whether it is met.
VERDICTS = {
    "every-missed-by-the-worst": (
        0,
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 1, 1000, 2.0),
            measured("b", "compiled", "predict", 1, 1000, 4.0),
        ],
        "missed by 1.33×",
        False,
    ),
    "best-met-by-the-best": (
        1,
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 1, 1000, 1.2),
            measured("b", "compiled", "predict", 1, 1000, 4.0),
        ],
        "met, 1.25× to spare",
        True,
    ),
    "every-met-only-by-those-measured": (
        0,
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 1, 1000, 2.0),
            VariantRecord("b", "compiled", skipped="not installed"),
        ],
        "met by those measured, 1.50× to spare",
        None,
    ),
    "training-over-the-floor-gradient": (
        3,
        [
            measured("floor", "floor", "loss_and_grads", 1, 1000, 1.0),
            measured("floor", "floor", "train_step", 1, 1000, 100.0),  # not the divisor
            measured("a", "compiled", "train_step", 1, 1000, 8.0),
        ],
        "missed by 1.33×",
        False,
    ),
    "speed-up-over-the-textbook-fix": (
        4,
        [
            measured("fix", "textbook", "predict", 1, 1000, 200.0),
            measured("a", "compiled", "predict", 1, 1000, 1.0),
        ],
        "missed by 1.50×",
        False,
    ),
    "batching-judges-the-fastest-at-the-large-batch": (
        6,
        [
            measured("a", "compiled", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 256, 1000, 64.0),  # 4× its throughput at B=1
            measured("b", "compiled", "predict", 1, 1000, 100.0),
            measured("b", "compiled", "predict", 256, 1000, 100.0),  # 256×, but slower
        ],
        "missed by 2.00×",
        False,
    ),
    "floor-check-at-every-shape": (
        7,
        [
            measured("floor", "floor", "predict", 1, 100, 1.0),
            measured("floor", "floor", "predict", 1, 1000, 2.0),
            measured("c", "check", "predict", 1, 100, 1.0),
            measured("c", "check", "predict", 1, 1000, 1.0),
        ],
        "missed by 1.33×",
        False,
    ),
    "linear-in-T-against-its-own-T=1000": (
        8,
        [
            measured("a", "compiled", "train_step", 1, 1000, 2.0),
            measured("a", "compiled", "train_step", 1, 10_000, 2.2),
            measured("b", "compiled", "train_step", 1, 1000, 1.0),
            measured("b", "compiled", "train_step", 1, 10_000, 1.0),
        ],
        "met, 1.05× to spare",
        True,
    ),
    "linear-in-T-missed-by-the-worst-at-B=256": (
        9,
        [
            measured("a", "compiled", "train_step", 256, 1000, 10.0),
            measured("a", "compiled", "train_step", 256, 10_000, 30.0),
            measured("b", "compiled", "train_step", 256, 1000, 1.0),
            measured("b", "compiled", "train_step", 256, 10_000, 1.0),
        ],
        "missed by 2.61×",
        False,
    ),
    "best-predict-at-B=256-over-the-simd-floor-not-the-scalar": (
        10,
        [
            measured("scalar", "floor", "predict", 256, 1000, 10.0),
            measured("vector", "simd_floor", "predict", 256, 1000, 4.0),
            measured("a", "compiled", "predict", 256, 1000, 9.0),
            measured("b", "compiled", "predict", 256, 1000, 12.0),
        ],
        "missed by 1.12×",
        False,
    ),
    "best-training-at-B=256-over-the-simd-floors-forward-and-bptt": (
        11,
        [
            measured("vector", "simd_floor", "loss_and_grads", 256, 1000, 4.0),
            measured("vector", "simd_floor", "train_step", 256, 1000, 40.0),
            measured("a", "compiled", "train_step", 256, 1000, 11.0),
            measured("b", "compiled", "train_step", 256, 1000, 30.0),
        ],
        "met, 1.09× to spare",
        True,
    ),
    "not-measured-without-a-floor": (
        0,
        [measured("a", "compiled", "predict", 1, 1000, 2.0)],
        "not measured",
        None,
    ),
}


@pytest.mark.parametrize(("index", "records", "verdict", "met"), VERDICTS.values(), ids=VERDICTS)
def test_a_targets_verdict_follows_the_figures(
    index: int, records: list[Record], verdict: str, met: bool | None
) -> None:
    from bench.report import TARGETS, Pivot, judge

    outcome = judge(TARGETS[index], Pivot.of(records))
    assert (outcome.verdict, outcome.met) == (verdict, met), outcome


def state_run(records: list[Record]) -> list[Record]:
    """``records``, their measurements of the state-feedback model, after the run's record of
    that model."""
    import dataclasses

    run = RunRecord(
        "now", "python -m bench", {}, [], {}, {}, models={STATE_LABEL: STATE_CONFIG.to_dict()}
    )
    return [
        run,
        *(
            dataclasses.replace(r, model=STATE_LABEL) if isinstance(r, ResultRecord) else r
            for r in records
        ),
    ]


def test_a_state_feedback_model_is_judged_by_its_own_targets() -> None:
    """The state model's targets over the floor that runs the GRU, at B=1 and B=256; an
    output-feedback run keeps ``TARGETS``."""
    from bench.report import STATE_TARGETS, TARGETS, Pivot, targets, targets_of

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
    output = Pivot.of([RunRecord("now", "python -m bench", {}, [], {}, {}), *records[1:]])
    assert not output.state_feedback and targets_of(output) == TARGETS


# Each case: a state target (by its place in STATE_TARGETS), records, the ratio it judges (the
# worst or the best) and whether it is met.
STATE_VERDICTS = {
    "every-predict-missed-by-the-worst": (
        0,
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 1, 1000, 2.0),
            measured("b", "compiled", "predict", 1, 1000, 10.0),
        ],
        "b 10×",
        False,
    ),
    "best-training-over-the-simd-floors-gradient-at-B=256": (
        5,
        [
            measured("scalar", "floor", "loss_and_grads", 256, 1000, 100.0),
            measured("vector", "simd_floor", "loss_and_grads", 256, 1000, 10.0),
            measured("a", "compiled", "train_step", 256, 1000, 11.0),
            measured("b", "compiled", "train_step", 256, 1000, 90.0),
        ],
        "a 1.1×",
        True,
    ),
    "not-measured-without-a-floor": (
        1,
        [measured("a", "compiled", "predict", 1, 1000, 2.0)],
        "not measured in this run",
        None,
    ),
}


@pytest.mark.parametrize(
    ("index", "records", "judged", "met"), STATE_VERDICTS.values(), ids=STATE_VERDICTS
)
def test_a_state_targets_verdict_follows_the_figures(
    index: int, records: list[Record], judged: str, met: bool | None
) -> None:
    from bench.report import STATE_TARGETS, Pivot, judge

    outcome = judge(STATE_TARGETS[index], Pivot.of(state_run(records)))
    assert outcome.met is met and judged in outcome.measured, outcome
