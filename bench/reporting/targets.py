"""The benchmark's targets, as data, and where they come from (``bench.reporting.verdicts`` judges a
run by them). The prose saying where the limits come from is formatted from the same targets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bench.grid import ROOFLINE_WIDTH, STREAM_FRAMES, roofline_model
from bench.records import RECEIVER, SENDER, SIDES, STREAM, Key, Shape
from bench.reporting.analysis import BATCHED_SHAPE, TARGET_SHAPE, THROUGHPUT, TIME, Pivot
from bench.roles import ROUTES, Role


@dataclass(frozen=True)
class OverFloor:
    """The fastest floor at the same shape (``Pivot.floor_of``), of ``operation`` if given."""

    operation: str | None = None


@dataclass(frozen=True)
class OverRole:
    """The first variant of ``role`` measured, same operation and shape."""

    role: Role


@dataclass(frozen=True)
class OverItself:
    """The same variant, same operation, at ``shape``."""

    shape: Shape


@dataclass(frozen=True)
class InMicroseconds:
    """No divisor: the figure itself, its limit in µs."""


@dataclass(frozen=True)
class OverRoofline:
    """The roofline (``bench.roofline``) at the same shape, on the model labelled ``model``
    alone (``None``: any)."""

    model: str | None = None


Over = OverFloor | OverRole | OverItself | InMicroseconds | OverRoofline
"""What a target's ratio divides by."""


@dataclass(frozen=True)
class Target:
    """One target: ``metric`` of the variants of ``role`` for ``operation`` at ``shape``
    (at ``side`` and ``chunk``, for the stream), divided by ``over``'s same figure, held to
    ``limit``.

    Attributes:
        statement: its text, ``{limit}``, ``{at}`` ("B=…, T=…"), ``{B}``, ``{T}``, ``{over_B}``
            (``OverItself``'s B), ``{side}`` and ``{chunk}`` filled in.
        at_most: the ratio must be ≤ ``limit``, else ≥.
        every: every variant of ``role`` must meet it, else the best one.
        shape: where it is judged; ``None``: at every shape both were measured.
        fastest: only the variant of ``role`` fastest at ``shape`` is judged.
        variant: the one variant judged (a framework's own limit); ``None``: every one.
    """

    name: str
    statement: str
    limit: float
    operation: str = "predict"
    role: Role | tuple[Role, ...] = Role.COMPILED
    over: Over = OverFloor()
    at_most: bool = True
    every: bool = True
    metric: str = TIME
    shape: Shape | None = TARGET_SHAPE
    fastest: bool = False
    side: str | None = None
    chunk: int | None = None
    variant: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.over, OverFloor | InMicroseconds) and self.metric != TIME:
            raise ValueError(
                f"a target over the floor or in µs holds µs per step, so its metric must be "
                f"{TIME!r}, got {self.metric!r} in {self.name!r}"
            )

    @property
    def roles(self) -> tuple[Role, ...]:
        """The roles of the variants judged."""
        return self.role if isinstance(self.role, tuple) else (self.role,)

    def key(self, pivot: Pivot, name: str, shape: Shape) -> Key:
        """Where the target reads variant ``name``'s figure at ``shape`` in ``pivot``."""
        return pivot.key(name, self.operation, shape, self.side, self.chunk)

    def text(self) -> str:
        """The statement with its limit, shapes, side and chunk length filled in."""
        b, t = self.shape or (0, 0)
        over_b = self.over.shape.batch if isinstance(self.over, OverItself) else 0
        at = f"B={b}, T={t}"
        filled = {"B": b, "T": t, "over_B": over_b, "side": self.side, "chunk": self.chunk}
        return self.statement.format(limit=self.limit, at=at, **filled)


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


STREAM_SHAPE = Shape(1, STREAM_FRAMES)
"""Where the stream's targets are judged: one sequence at B = 1."""


def each_side_targets(
    name: str,
    statement: str,
    limit: float,
    role: Role | tuple[Role, ...] = ROUTES,
    over: Over = OverFloor(),
    every: bool = False,
    chunk: int = 1,
) -> tuple[Target, ...]:
    """The stream's target ``name_…`` at each side (``{side}_{name}``), at ``STREAM_SHAPE``."""
    return tuple(
        Target(
            f"{side}_{name}",
            f"{statement} ({{side}}, B=1, a sequence of {STREAM_FRAMES} frames)",
            limit,
            STREAM,
            role,
            over,
            every=every,
            shape=STREAM_SHAPE,
            side=side,
            chunk=chunk,
        )
        for side in SIDES
    )


STREAM_TARGETS = (
    *each_side_targets(
        "frame_best",
        "the best framework route streams a frame in ≤ {limit:g} µs, one frame a call",
        10.0,
        over=InMicroseconds(),
    ),
    *each_side_targets(
        "frame_every",
        "every compiled backend streams a frame in ≤ {limit:g} µs, one frame a call",
        100.0,
        Role.COMPILED,
        InMicroseconds(),
        every=True,
    ),
    *each_side_targets(
        "frame_over_floor",
        "the best framework route's frame ≤ {limit:g}× the floor's, one frame a call",
        2.0,
    ),
    *each_side_targets(
        "chunk_best",
        "the best framework route's µs per frame ≤ {limit:g}× the floor's, in chunks of "
        "{chunk} frames",
        3.0,
        chunk=10,
    ),
)
"""The stream's targets, judged on the run's first model whichever its feedback: each
frame's cost at the sender and at the receiver, one frame a call and in chunks."""


def each_side(t: tuple[Target, ...], name: str, unit: str) -> str:
    """The limit of the stream's target ``name`` at each side: "10 µs at each side", or
    each side's where they differ."""
    sender, receiver = (limit(t, f"{side}_{name}").removesuffix("×") for side in SIDES)
    if sender == receiver:
        return f"{sender}{unit} at each side"
    return f"{sender}{unit} at the {SENDER} and {receiver}{unit} at the {RECEIVER}"


def stream_origin(t: tuple[Target, ...]) -> str:
    """Where the stream's targets ``t`` come from, with their limits."""
    chunk = next(target.chunk for target in t if target.name.endswith("_chunk_best"))
    return (
        "Where the stream's targets come from: a feedback codec runs online, the sender "
        "encoding each frame as it arrives and the receiver decoding each code as it comes, "
        "so a frame a call at B = 1 is the model's own use, and there a call's fixed cost "
        "(dispatch, checking the arguments and the state, launching the compiled loop, "
        "converting the outputs and the state) is nearly all a frame costs: a floor's step "
        "is a fraction of a µs. The **best framework route** (any variant on a framework: "
        f"not a floor, the check nor the reference) is asked {each_side(t, 'frame_best', ' µs')}"
        f" and {each_side(t, 'frame_over_floor', '×')} the floor's frame (the floor's frame "
        "passes through the same `encode` and `decode` checks), one frame a call, and "
        "**every compiled backend** "
        f"{each_side(t, 'frame_every', ' µs')}: the cheapest way each framework offers to "
        "call a small compiled function with a state from Python, not the first way a new "
        f"user finds. In chunks of {chunk} frames, where a call's cost is spread over its "
        "frames, the best route's µs per frame over the fastest floor's is asked to be at "
        f"most {each_side(t, 'chunk_best', '×')}, the floors streaming through the same "
        "`encode` and `decode` calls and their checks. The limits are this benchmark's own, "
        "not a framework's promise."
    )


STREAM_TARGETS_ORIGIN = stream_origin(STREAM_TARGETS)


EXPORT_TARGETS = (
    *each_side_targets(
        "frame_exported",
        "the fastest exported artifact streams a frame in ≤ {limit:g} µs, one frame a call",
        5.0,
        Role.EXPORTED,
        InMicroseconds(),
    ),
    *each_side_targets(
        "frame_exported_over_floor",
        "the fastest exported artifact's frame ≤ {limit:g}× the floor's, one frame a call",
        2.0,
        Role.EXPORTED,
    ),
    Target(
        "predict_exported",
        "the fastest exported artifact's predict ≤ {limit:g}× the floor per step ({at})",
        1.5,
        role=Role.EXPORTED,
        every=False,
    ),
)
"""Judged where the run ran an artifact (``Role.EXPORTED``); not measured otherwise."""
EXPORT_TARGETS_ORIGIN = (
    "Where the export targets come from: a codec ships as an artifact run by a deployment "
    "runtime (LiteRT, ONNX Runtime, a serialized StableHLO program), without the "
    "framework's Python layers, so the fastest artifact is asked what a compiled call "
    f"should cost there: a frame in at most {each_side(EXPORT_TARGETS, 'frame_exported', ' µs')}"
    ", one frame a call, and within "
    f"{limit(EXPORT_TARGETS, 'sender_frame_exported_over_floor')} the floor's frame, and "
    f"predict at B = 1, T = 1000 within {limit(EXPORT_TARGETS, 'predict_exported')} the "
    "fastest floor per step. Each artifact runs in its own process behind "
    "`frae.load_exported`, with the contract's checks of its inputs and state, as the "
    "backends' calls have theirs. The limits are this benchmark's own."
)


ROOFLINE_MODEL = roofline_model()[0]
ROOFLINE_TARGETS = tuple(
    Target(
        f"{short}_roofline",
        f"the best framework route's {named} ≤ {{limit:g}}× the roofline per step (model "
        f"{ROOFLINE_MODEL}, {{at}})",
        3.0,
        operation,
        ROUTES,
        OverRoofline(ROOFLINE_MODEL),
        every=False,
        shape=BATCHED_SHAPE,
    )
    for short, operation, named in NAMED_OPERATIONS
)
"""The roofline's targets, judged on ``ROOFLINE_MODEL`` alone, where the floors bound nothing."""


ROOFLINE_TARGETS_ORIGIN = (
    "Where the roofline's targets come from: at wide layers and a large batch the "
    "frameworks' tuned matrix products beat every floor, so a ratio to the floor says "
    "nothing there. The **roofline** is the least time the step's arithmetic allows, "
    "max(FLOPs / peak, bytes / bandwidth), from the float32 matrix product's peak and "
    "the memory's bandwidth measured at the run's start on the variants' threads and "
    "the step's FLOPs and bytes counted from the layer table (`bench.roofline`). The "
    f"best framework route at width {ROOFLINE_WIDTH}, B = 256, is asked to predict "
    f"within {limit(ROOFLINE_TARGETS, 'predict_roofline')} and to train within "
    f"{limit(ROOFLINE_TARGETS, 'train_roofline')} of it: a time step of {ROOFLINE_WIDTH}-wide "
    "layers is products of 256 rows, smaller than those the peak is measured on, and the "
    "loop runs them one step after another. The limits are this benchmark's own."
)
