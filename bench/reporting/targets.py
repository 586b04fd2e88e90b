"""What a target is, as data: its statement, the figure it reads, what that figure is divided
by and its limit (``bench.reporting.verdicts`` judges a run by them; each section of the report
holds its own, ``bench.reporting.sections``). The prose saying where a section's limits come
from is formatted from the same targets (``limit``, ``each_side``).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.grid import STREAM_FRAMES, TARGET_SHAPE
from bench.records import RECEIVER, SENDER, SIDES, STREAM, Key, Shape
from bench.reporting.analysis import TIME, Pivot
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


def limit(targets: tuple[Target, ...], name: str) -> str:
    """The limit of the target called ``name``, as its statement prints it."""
    return f"{next(t for t in targets if t.name == name).limit:g}×"


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


def each_side(t: tuple[Target, ...], name: str, unit: str) -> str:
    """The limit of the stream's target ``name`` at each side: "10 µs at each side", or
    each side's where they differ."""
    sender, receiver = (limit(t, f"{side}_{name}").removesuffix("×") for side in SIDES)
    if sender == receiver:
        return f"{sender}{unit} at each side"
    return f"{sender}{unit} at the {SENDER} and {receiver}{unit} at the {RECEIVER}"
