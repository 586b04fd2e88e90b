"""``Variant``: one backend run one way, what the catalogue (``bench.catalogue``) lists."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.records import CODEC, OFFERED, STREAM, Shape
from bench.roles import Role


@dataclass(frozen=True)
class Variant:
    """One backend run one way, in a process of its own.

    Attributes:
        name: its label in the results.
        backend: a registered name or ``"module:attribute"`` for ``frae.create``.
        role: what it is to the report (``bench.roles.Role``).
        about: one line for the report.
        env: environment variables of its process.
        needs: modules that must be importable beyond what the registry checks.
        needs_compiler: it compiles C when the model is created.
        slow: it interprets every time step, so it gets only part of the grid
            (``Settings.slow_max_steps``, ``slow_max_batch``).
        operations: what it offers; one that leaves out the stream says why in ``no_stream``;
            the codec (``CODEC``) streams, so it comes with the stream.
        optional: it runs only when named in ``--variants``.
        quick: it runs in ``--quick``.
        only_shapes: the (B, T) it runs, of the grid's (``None``: every one).
        wide: the operations it runs on the width axis (``wide_models``): none for the loop
            floors, one multiply-add at a time, which bound nothing there.
        no_state_feedback: why it cannot run a state-feedback model (``None``: it can).
        no_code_step: why it cannot run a quantized model (``FRAEConfig.code_step``;
            ``None``: it can).
        no_rate_weight: why it cannot train a model for its rate
            (``FRAEConfig.rate_weight``; ``None``: it can).
        twin_of: the registered backend whose backward this one writes by hand.
        devices: data-parallel on this many devices (``create(..., devices=N)``).
        of: the variant this one is, on one device (role ``DEVICES``).
        no_stream: why it does not stream, exactly when ``operations`` leave the stream out.
        exported_from: the registered backend whose artifact it runs (``frae export`` in a
            child process), so it runs only where that backend can.
        beside: the variant it is compared with directly, besides ``twin_of`` and ``of``
            (a route's framework defaults beside the route).
    """

    name: str
    backend: str
    role: Role
    about: str
    env: dict[str, str] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    needs_compiler: bool = False
    slow: bool = False
    operations: tuple[str, ...] = OFFERED
    optional: bool = False
    quick: bool = True
    only_shapes: tuple[Shape, ...] | None = None
    wide: tuple[str, ...] = ()
    no_state_feedback: str | None = None
    no_code_step: str | None = None
    no_rate_weight: str | None = None
    twin_of: str | None = None
    devices: int | None = None
    of: str | None = None
    no_stream: str | None = None
    exported_from: str | None = None
    beside: str | None = None

    @property
    def compared_with(self) -> str | None:
        """The variant it is compared with directly, measured in turn with it where both
        run (``bench.measuring.turns``): its route, its autodiff twin, itself on one device."""
        return self.beside or self.twin_of or self.of

    def __post_init__(self) -> None:
        if (STREAM in self.operations) == (self.no_stream is not None):
            raise ValueError(
                f"variant {self.name!r} must give no_stream exactly when its operations leave "
                f"out {STREAM!r}, got operations {self.operations} and no_stream "
                f"{self.no_stream!r}"
            )
        if CODEC in self.operations and STREAM not in self.operations:
            raise ValueError(
                f"variant {self.name!r} offers {CODEC!r}, which streams, without {STREAM!r}"
            )
