"""The benchmark's targets, as data, where they come from, and how a run is judged by them.

A target holds a ratio of one figure (``metric`` of ``operation`` at ``shape``) of the
variants of a role to a divisor (``over``): the fastest floor at the same shape
(``OverFloor``), the first variant of another role (``OverRole``), or the same variant at
another shape (``OverItself``). The state-feedback model's targets are the output model's
over the floor, with the limits of ``STATE_LIMITS``; the prose saying where the limits come
from is formatted from the same targets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bench.analysis import BATCHED_SHAPE, TARGET_SHAPE, THROUGHPUT, TIME, Key, Pivot, Shape
from bench.roles import Role


@dataclass(frozen=True)
class OverFloor:
    """The fastest floor measured at the same shape (``Pivot.floor``), µs per step."""

    operation: str | None = None
    """The floor's operation, if not the target's."""


@dataclass(frozen=True)
class OverRole:
    """The first variant of ``role`` measured, same operation and shape."""

    role: Role


@dataclass(frozen=True)
class OverItself:
    """The same variant, same operation, at ``shape``."""

    shape: Shape


Over = OverFloor | OverRole | OverItself
"""What a target's ratio divides by."""


@dataclass(frozen=True)
class Target:
    """One target: ``metric`` of the variants of ``role`` for ``operation`` at ``shape``,
    divided by ``over``'s same figure, held to ``limit``.

    Attributes:
        name: what the target is called in this module (``STATE_LIMITS``, the origins).
        over: what its ratio divides by; over the floor, the metric is µs per step.
        statement: its text; ``{limit}``, ``{at}`` ("B=…, T=…"), ``{B}``, ``{T}`` and
            ``{over_B}`` (``OverItself``'s B) are filled in.
        at_most: the ratio must be ≤ ``limit``, else ≥.
        every: every variant of ``role`` must meet it, else the best one.
        shape: where it is judged; ``None``: at every shape both were measured.
        fastest: only the variant of ``role`` fastest at ``shape`` is judged.
    """

    name: str
    statement: str
    limit: float
    operation: str = "predict"
    role: Role = Role.COMPILED
    over: Over = OverFloor()
    at_most: bool = True
    every: bool = True
    metric: str = TIME
    shape: Shape | None = TARGET_SHAPE
    fastest: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.over, OverFloor) and self.metric != TIME:
            raise ValueError(
                f"a target over the floor divides µs per step, so its metric must be {TIME!r}, "
                f"got {self.metric!r} in {self.name!r}"
            )

    def text(self) -> str:
        """The statement with its limit and shapes filled in."""
        b, t = self.shape or (0, 0)
        over_b = self.over.shape.batch if isinstance(self.over, OverItself) else 0
        return self.statement.format(limit=self.limit, at=f"B={b}, T={t}", B=b, T=t, over_B=over_b)


GRADIENT = OverFloor("loss_and_grads")
"""A training step over the floor's forward + BPTT, which has no optimizer."""
FASTER = "every compiled backend's {} ≥ {{limit:g}}× faster per step than the textbook fix ({{at}})"
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
        for short, operation, label in (
            ("predict", "predict", "predict"),
            ("train", "train_step", "training step"),
        )
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
)
"""The output-feedback model's targets."""


def limit(targets: tuple[Target, ...], name: str) -> str:
    """The limit of the target called ``name``, as its statement prints it."""
    return f"{next(t for t in targets if t.name == name).limit:g}×"


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
    if isinstance(target.over, OverFloor)
)
"""The state-feedback model's targets: the output model's over the floor (predict and a
training step at its two shapes), over the floors with the GRU. The output model's other
targets are not repeated: the textbook fix, batching and length measure the loop, which the
GRU does not change."""


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
    """The targets of the pivot's model: ``STATE_TARGETS`` for a state-feedback model, else
    ``TARGETS``."""
    return STATE_TARGETS if pivot.state_feedback else TARGETS


def origin_of(pivot: Pivot) -> str:
    """Where the targets of the pivot's model come from."""
    return STATE_TARGETS_ORIGIN if pivot.state_feedback else TARGETS_ORIGIN


NOT_MEASURED = "not measured"
"""The verdict on a target this run did not measure."""


@dataclass(frozen=True)
class Outcome:
    """A target judged: its statement, the figures measured and the verdict."""

    statement: str
    measured: str
    verdict: str
    met: bool | None
    """``None``: not measured in this run, or met only by those measured."""

    @property
    def judged(self) -> bool:
        """Whether this run measured what the target needs."""
        return self.verdict != NOT_MEASURED


def divisor(target: Target, pivot: Pivot, name: str, shape: Shape) -> float | None:
    """What the ratio of variant ``name`` at ``shape`` divides by (``Target.over``)."""
    match target.over:
        case OverFloor(operation):
            return pivot.floor(operation or target.operation, shape)
        case OverRole(role):
            first = pivot.named(role)[:1]
            key = Key(first[0], target.operation, *shape) if first else None
            return None if key is None else pivot.figure(key, target.metric)
        case OverItself(over_shape):
            return pivot.figure(Key(name, target.operation, *over_shape), target.metric)


def ratios(target: Target, pivot: Pivot) -> dict[str, float]:
    """The target's ratio for each variant of its role measured (by shape, where the target
    is judged at every shape)."""
    names, operation = pivot.named(target.role), target.operation
    if target.fastest and target.shape:
        shape = target.shape
        timed = {n: v for n in names if (v := pivot.figure(Key(n, operation, *shape))) is not None}
        names = sorted(timed, key=timed.__getitem__)[:1]
    found = {}
    for name in names:
        measured = [k.shape for k in pivot.results if (k.variant, k.operation) == (name, operation)]
        for shape in [target.shape] if target.shape else measured:
            value = pivot.figure(Key(name, operation, *shape), target.metric)
            base = divisor(target, pivot, name, shape)
            if value is not None and base is not None:
                found[name if target.shape else f"B={shape.batch}, T={shape.steps}"] = value / base
    return found


def judge(target: Target, pivot: Pivot) -> Outcome:
    """``target`` over its ratios: the worst of them (``every``) or the best.

    Variants of its role not measured are listed; a target over every one of them is then
    not met, only "met by those measured".
    """
    values, statement = ratios(target, pivot), target.text()
    if not values:
        return Outcome(statement, "not measured in this run", NOT_MEASURED, None)
    expected = pivot.named(target.role) if target.every and target.shape else []
    missing = [name for name in expected if name not in values]
    name = (max if target.at_most == target.every else min)(values, key=values.__getitem__)
    value, limit = values[name], target.limit
    met: bool | None = value <= limit if target.at_most else value >= limit
    factor = max(value / limit, limit / value)
    verdict = f"met, {factor:.2f}× to spare" if met else f"missed by {factor:.2f}×"
    shown = ", ".join(f"{n} {v:.3g}×" for n, v in values.items())
    if missing:
        shown += f"; not measured: {', '.join(missing)}"
        if target.every and met:
            verdict, met = verdict.replace("met,", "met by those measured,"), None
    subject = "worst" if target.every else "best"
    return Outcome(statement, f"{shown} ({subject}: {name})", verdict, met)


def targets(pivot: Pivot) -> list[Outcome]:
    """Every one of the model's targets (``targets_of``), judged from one run."""
    return [judge(target, pivot) for target in targets_of(pivot)]


def measured_targets(pivot: Pivot) -> list[Outcome]:
    """For a model beside the run's first: the targets over the floor that its measurements
    judge. Batching is not judged there: at width 256 a step is enough work that the floor
    itself gains 1.5×, not 8×, from B = 1 to 256."""
    judged = [judge(t, pivot) for t in targets_of(pivot) if isinstance(t.over, OverFloor)]
    return [outcome for outcome in judged if outcome.judged]
