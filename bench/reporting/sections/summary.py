"""Every variant at the summary's shape: its three operations' µs per step
(× the floor's), its first calls, import time and peak memory."""

from __future__ import annotations

from dataclasses import replace

from bench.grid import BATCHED_SHAPE, TARGET_SHAPE
from bench.records import (
    OPERATIONS,
    Shape,
    VariantRecord,
)
from bench.reporting.analysis import LABELS, THROUGHPUT, Pivot, flags, summary_shape
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import (
    Rows,
    figures,
    fmt,
)
from bench.reporting.targets import (
    OverFloor,
    OverItself,
    OverRole,
    Target,
    limit,
)
from bench.reporting.verdicts import Outcome, targets
from bench.roles import Role

SUMMARY_HEADER = ["variant", "role", *(LABELS[op] for op in OPERATIONS)]


SUMMARY_HEADER += ["compile s (predict / train)", "import s", "peak MB"]


SUMMARY_CAPTION = (
    "µs per time step, median (× the floor's same operation); compile: the first call "
    "of the operation in the variant's process"
)


def summary_rows(pivot: Pivot) -> Rows:
    """One row per variant at ``summary_shape``."""
    compiles, shape, rows, doubted = pivot.first_calls(), summary_shape(pivot), [], flags(pivot)
    for name, role in pivot.roles.items():
        fact = pivot.facts.get(name, VariantRecord(name))
        if fact.skipped or fact.error:
            rows.append([name, str(role), "skipped" if fact.skipped else "failed", *[""] * 5])
            continue
        keys = [pivot.key(name, operation, shape) for operation in OPERATIONS]
        cells = figures(pivot, keys, doubted)
        first = " / ".join(
            fmt(compiles[name, op].seconds if (name, op) in compiles else None, 2)
            for op in ("predict", "train_step")
        )
        peaks = [r.peak_rss_mb for k, r in pivot.results.items() if k.variant == name]
        peak = fmt(max(filter(None, peaks), default=None), 4)
        rows.append([name, str(role), *cells, first, fmt(fact.import_s, 2), peak])
    return rows


TERMINAL_SUMMARY = (0, 2, 3, 4, 5)
"""The summary's columns in the terminal: variant, the three operations, compile."""


def sections(report: Report) -> list[Section]:
    """Every variant at the summary's shape (``summary_shape``)."""
    pivot = report.pivot
    batch, steps = summary_shape(pivot)
    shown = [SUMMARY_HEADER[i] for i in TERMINAL_SUMMARY[:-1]] + ["compile s"]
    summary = Section(
        f"Summary at B={batch}, T={steps}{pivot.on}",
        SUMMARY_CAPTION + ".",
        SUMMARY_HEADER,
        summary_rows(pivot),
        brief=Brief(
            caption=f"B={batch}, T={steps}{pivot.on}: {SUMMARY_CAPTION}",
            columns=TERMINAL_SUMMARY,
            header=shown,
        ),
    )
    return [summary]


ROUTE_LIMITS = {
    "jax_scan": 2.5,
    "tf_while": 5.0,
    "keras_rnn[jax]": 4.0,
    "keras_rnn[tensorflow]": 6.0,
    "torch_scan": 60.0,
}
"""Each framework's training step on its best route (``frae.routes``) over the floor at
B = 1, T = 1000, set from what it measured (docs/performance.md, "The settings that matter")."""


GRADIENT = OverFloor("loss_and_grads")
"""A training step over the floor's forward + BPTT, which has no optimizer."""


FASTER = "every compiled backend's {} ≥ {{limit:g}}× faster per step than the textbook fix ({{at}})"


NAMED_OPERATIONS = (("predict", "predict", "predict"), ("train", "train_step", "training step"))
"""(name prefix, operation, as a statement says it): the operations a pair of targets judges."""


TARGETS = (
    Target(
        "predict_every",
        "every compiled backend's predict ≤ {limit:g}× the floor per step ({at})",
        3.0,
    ),
    Target(
        "predict_best",
        "the best compiled predict ≤ {limit:g}× the floor per step ({at})",
        1.5,
        every=False,
    ),
    Target(
        "train_best",
        "the best training step ≤ {limit:g}× the floor's forward + BPTT per step ({at})",
        3.0,
        "train_step",
        over=GRADIENT,
        every=False,
    ),
    Target(
        "train_every",
        "every compiled backend's training step ≤ {limit:g}× the floor's forward + BPTT ({at})",
        6.0,
        "train_step",
        over=GRADIENT,
    ),
    # at one shape, a throughput over the textbook fix's is its time over ours
    *(
        Target(
            f"{short}_textbook",
            FASTER.format(label),
            300.0,
            operation,
            over=OverRole(Role.TEXTBOOK),
            at_most=False,
            metric=THROUGHPUT,
        )
        for short, operation, label in NAMED_OPERATIONS
    ),
    Target(
        "batching",
        "batching pays: the best backend's predict throughput at B={B} ≥ {limit:g}× its own at "
        "B={over_B} (T={T}; best: fastest compiled predict at B={B})",
        8.0,
        over=OverItself(TARGET_SHAPE),
        at_most=False,
        every=False,
        metric=THROUGHPUT,
        shape=BATCHED_SHAPE,
        fastest=True,
    ),
    Target(
        "floor_check",
        "the floor is a floor: Numba's forward ≤ {limit:g}× the plain C forward, at every shape",
        1.5,
        role=Role.FLOOR,
        over=OverRole(Role.CHECK),
        shape=None,
    ),
    *(
        Target(
            f"linear_B{batch}",
            "training is linear in T: every compiled backend's training step per step at "
            "T={T} ≤ {limit:g}× its own at T=1000 (B={B})",
            1.15,
            "train_step",
            over=OverItself(Shape(batch, 1000)),
            shape=Shape(batch, 10_000),
        )
        for batch in (1, 256)
    ),
    Target(
        "predict_best_batched",
        "the best compiled predict ≤ {limit:g}× the floor per step ({at})",
        2.0,
        every=False,
        shape=BATCHED_SHAPE,
    ),
    Target(
        "train_best_batched",
        "the best training step ≤ {limit:g}× the floor's forward + BPTT per step ({at})",
        3.0,
        "train_step",
        over=GRADIENT,
        every=False,
        shape=BATCHED_SHAPE,
    ),
    *(
        Target(
            f"train_{variant}",
            f"{variant}'s training step ≤ {{limit:g}}× the floor's forward + BPTT per step "
            "({at})",
            limit,
            "train_step",
            over=GRADIENT,
            variant=variant,
        )
        for variant, limit in ROUTE_LIMITS.items()
    ),
)
"""The output-feedback model's targets."""


STATE = "state feedback: "
"""The state-feedback model's targets begin so: each ratio is over the floors that run the
GRU (``numba_floor``, ``simd_floor``)."""


STATE_LIMITS = {"predict_best": 1.25, "train_best": 2.5, "train_best_batched": 4.0}
"""The state-feedback model's limits where they are not the output model's, set from this
machine's measurements (``STATE_TARGETS_ORIGIN``)."""


STATE_TARGETS = tuple(
    replace(
        target,
        statement=STATE + target.statement,
        limit=STATE_LIMITS.get(target.name, target.limit),
    )
    for target in TARGETS
    if isinstance(target.over, OverFloor) and target.variant is None
)
"""The state-feedback model's targets: the output model's over the floor, over the floors with
the GRU (the textbook fix, batching and length measure the loop, which the GRU leaves as is)."""


def output_origin(t: tuple[Target, ...]) -> str:
    """Where the output model's targets ``t`` come from, with their limits."""
    return (
        "Where the targets come from: the **floor** is the limit, the same model compiled "
        "natively without a framework (the fastest of the floors at each shape); a "
        f"compiled backend within a small factor of it ({limit(t, 'predict_every')} for "
        f"predict, {limit(t, 'predict_best')} for the best; a training step "
        f"{limit(t, 'train_every')}, or {limit(t, 'train_best')} for the best, over the "
        "floor's forward + BPTT, which has no optimizer) pays little for its framework. The "
        "**textbook fix**, the same `tf.while_loop` in graph mode without XLA (the answer the "
        "original question got), sets the speed-ups: compiling that loop made it about a "
        f"thousand times faster per step at B = 1, of which {limit(t, 'predict_textbook')} is "
        f"asked. **Batching** ({limit(t, 'batching')} the throughput at B = 256 over B = 1) "
        "asks a backend to use the lanes a batch offers; **linear in T** "
        f"({limit(t, 'linear_B1')}) that a step's cost not grow with the sequence (no T-long "
        "copy in the backward loop). The limits are this benchmark's own, set from those "
        "floors and that fix, not a framework's promise."
    )


def state_origin(t: tuple[Target, ...], output: tuple[Target, ...]) -> str:
    """Where the state model's targets ``t`` come from, with their limits and, where they
    differ, the output model's (``output``)."""
    return (
        "Where the state-feedback model's targets come from: the **floor** runs the GRU too "
        "(`numba_floor`, and `simd_floor`, which vectorises the GRU over its 3H columns at "
        "B = 1 and over the batch above; the matrix floor and the C check have no GRU and are "
        "left out), so a ratio says what a framework pays beyond the GRU's own arithmetic. "
        "The limits come from this benchmark's runs of the model with H = 8 on a 2-core "
        'machine (docs/performance.md, "State feedback: the GRU\'s cost"): at B = 1 the best '
        f"predict was at the floor (within 10%: {limit(t, 'predict_best')} asked) and the "
        f"best training step 1.4–1.9× ({limit(t, 'train_best')} asked); at B = 256 the best "
        f"predict 1.35–1.7× ({limit(t, 'predict_best_batched')} asked) and the best training "
        f"step 3.1–3.6× ({limit(t, 'train_best_batched')} asked, where the output model asks "
        f"{limit(output, 'train_best_batched')}: the frameworks' GRU backward at B = 256 "
        "costs them 2.5× what it costs the floor). The targets over every compiled backend "
        f"keep the output model's limits ({limit(t, 'predict_every')} predict, "
        f"{limit(t, 'train_every')} training), which the state model's slowest backends miss "
        "as the output model's do."
    )


TARGETS_ORIGIN = output_origin(TARGETS)


STATE_TARGETS_ORIGIN = state_origin(STATE_TARGETS, TARGETS)


def targets_of(pivot: Pivot) -> tuple[Target, ...]:
    """The targets of the pivot's model, by its feedback."""
    return STATE_TARGETS if pivot.state_feedback else TARGETS


def origin_of(pivot: Pivot) -> str:
    """Where the targets of the pivot's model come from."""
    return STATE_TARGETS_ORIGIN if pivot.state_feedback else TARGETS_ORIGIN


def outcomes(report: Report) -> list[Outcome]:
    """The targets of the run's first model's time per step, judged."""
    return targets(report.pivot, targets_of(report.pivot))
