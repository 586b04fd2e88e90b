"""The records of a benchmark run, one JSON line each in ``results.jsonl``: the run's facts,
each backend's parity with the reference where ``frae compare`` ran the benchmark, each
variant's facts and measurements (from its worker), a ``done`` / ``end`` line with the
wall time. Every line carries ``kind`` and the fields that are set; a measurement also
carries the figures derived from its median, so the file reads without this module.

A file's format is the run record's ``format`` (``FORMAT``; none: format 1); ``parse`` raises
each format from ``OLDEST`` on to today's by ``UPGRADES`` and refuses an older one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from bench.measuring.machine import Machine

OPERATIONS = ("predict", "loss_and_grads", "train_step")
STREAM = "stream"
"""A sequence sent a chunk at a time, the state carried from call to call
(``bench.measuring.operations.stream``)."""
EVERY_OPERATION = (*OPERATIONS, STREAM)
CODEC, CODER, BYPASSED = "codec", "coder", "bypassed"
"""A quantized model's stream as packets of bytes (``frae.codec.Encoder`` / ``Decoder``), the
entropy coder alone on the same symbols, and the codec with its coder bypassed
(``bench.measuring.operations.codec``): measured wherever the streamed model is quantized
(``bench.grid.with_codec``)."""
CODING = (CODEC, CODER, BYPASSED)
OFFERED = (*EVERY_OPERATION, CODEC)
"""What a variant offers unless it says otherwise (``bench.variant.Variant``)."""
SENDER, RECEIVER = "sender", "receiver"
SIDES = (SENDER, RECEIVER)
"""A stream's two sides: the sender encodes, the receiver decodes."""
FORMAT = 4
"""The results file's format: 2 added every timed call (``ResultRecord.calls_s``), the
threads, the busy cores and the rounds to format 1's medians and quartiles; 3 added the
floors' calls taken in turn with each timed call (``ResultRecord.partners_s``) and what
other processes took of its CPUs (``ResultRecord.others_s``); 4 added the parity lines
(``ParityRecord``), which a reader of format 3 would refuse as a kind it does not know."""
OVER_FLOOR = {"train_step": "loss_and_grads"}
"""What a ratio to the floor divides an operation by, where not the floor's same operation: a
training step by the floor's forward + BPTT, which has no optimizer. The floors a variant is
sampled in turn with (``bench.measuring.turns``) measure this operation beside it."""
DEFAULT_MODEL = "default"
"""The label of the model a run measures unless told otherwise (``bench.grid``)."""


class Shape(NamedTuple):
    """An input shape: B sequences of T time steps."""

    batch: int
    steps: int


class Key(NamedTuple):
    """What one measurement is, whatever its round or its run: it pairs the rounds
    (``bench.comparing.rounds``) and the runs (``bench.comparing.diff``) and indexes a
    ``bench.reporting.analysis.Pivot``."""

    variant: str
    operation: str
    model: str
    batch: int
    steps: int
    side: str | None = None
    """The stream's side (``SIDES``) and frames per call; ``None`` for every other operation."""
    chunk: int | None = None

    @property
    def shape(self) -> Shape:
        return Shape(self.batch, self.steps)

    def of(self, variant: str) -> Key:
        """The same measurement of ``variant``."""
        return self._replace(variant=variant)

    def doing(self, operation: str) -> Key:
        """The same variant, shape, side and chunk length, measuring ``operation``."""
        return self._replace(operation=operation)


class Point(NamedTuple):
    """One model (its label in ``RunRecord.models``) and input shape of the grid, and what is
    measured on it; JSON writes it as a list, ``[model, B, T, operations]``."""

    model: str
    batch: int
    steps: int
    operations: tuple[str, ...]


@dataclass(frozen=True)
class Settings:
    """How long each measurement runs (``bench.measuring.worker``), and which part of the grid a
    slow variant gets."""

    repeats: int = 7
    min_time_s: float = 0.5
    budget_s: float = 6.0
    max_samples: int = 500
    train_steps: int = 5
    long_call_s: float = 20.0
    """A first call longer than this gets one timed call and no warm-up."""
    long_step_s: float = 0.5
    """A training step longer than this (the warm-up's) is timed one per sample, not K."""
    timeout_s: float = 3600.0
    slow_max_steps: int = 1000
    """Longest T a slow variant gets."""
    slow_max_batch: int | None = 32
    """Largest B a slow variant gets (``None``: every B): at B = 256 the slow variants would
    take more than the full grid's budget."""
    slow_operations: tuple[str, ...] | None = None
    """The operations a slow variant gets, of those it offers (``None``: all of them)."""
    wide_roles: tuple[str, ...] | None = None
    """The roles that measure the grid's later models (``Variant.wide``; ``None``: all)."""
    stream_repeats: int | None = None
    """The least timed samples of the stream (``None``: ``repeats``)."""
    threads: int = 1
    """The cores and threads every variant runs on (``bench.measuring.threads``)."""
    rounds: int = 1
    """How many times the run measures every variant, each in a fresh process
    (``bench.comparing.rounds``)."""

    def for_stream(self) -> Settings:
        """These settings with the stream's least number of samples."""
        return replace(self, repeats=self.stream_repeats or self.repeats)


@dataclass(frozen=True)
class Listing:
    """A variant as the run lists it, whether it ran or not (see ``bench.variant.Variant``)."""

    backend: str
    role: str
    about: str
    env: dict[str, str] = field(default_factory=dict)
    slow: bool = False
    twin_of: str | None = None
    devices: int | None = None
    of: str | None = None
    no_stream: str | None = None
    no_code_step: str | None = None
    no_rate_weight: str | None = None
    beside: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """The first line: when and how the run was started, on what, over which grid."""

    kind: ClassVar[str] = "run"
    started: str
    command: str
    machine: Machine
    grid: list[Point]
    settings: Settings
    variants: dict[str, Listing]
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Label -> the ``FRAEConfig`` fields of each model measured (``to_dict``)."""
    format: int = FORMAT
    roofline: dict[str, Any] | None = None
    """The machine's peaks (``bench.roofline.Peak`` as a dict), or ``{"error": ...}``."""


@dataclass(frozen=True)
class ParityRecord:
    """One backend against the float64 reference on the default model (``frae.compare``),
    written after the run's record by ``frae compare``; ``variant`` is its label, the
    benchmark's variant name where it has one (``keras_rnn[jax]``).

    A backend compared has ``passed``, the quantity nearest its tolerance (``worst``, a key
    of ``errors``) with its difference as a fraction of that tolerance (``used``: within it
    at most 1), each quantity's largest difference (``errors``) and the tolerances it was
    held to (``held_to``: ``"float32"`` or ``"float64"``, ``frae.tolerances``). A comparison
    that raised is ``passed`` False with the error as ``reason``; a backend that cannot run
    here is not judged: ``passed`` None, ``reason`` why.
    """

    kind: ClassVar[str] = "parity"
    variant: str
    passed: bool | None = None
    worst: str | None = None
    used: float | None = None
    errors: dict[str, float] | None = None
    held_to: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class VariantRecord:
    """A variant's facts from its fresh process, or why it did not run (``skipped`` before
    it started, ``error`` when its worker failed)."""

    kind: ClassVar[str] = "variant"
    variant: str
    role: str | None = None
    backend: str | None = None
    import_s: float | None = None
    threads: dict[str, Any] | None = None
    routes: list[str] | None = None
    """The framework settings its backend ran with (``frae.routes``)."""
    peak_rss_mb: float | None = None
    skipped: str | None = None
    error: str | None = None
    round: int | None = None
    """Which of the run's rounds (``bench.comparing.rounds``) it was; ``None``: the only one."""


@dataclass(frozen=True)
class ResultRecord:
    """One operation of one variant at one (B, T): timed (``median_s`` set), or not, with
    the reason (``error`` or ``unsupported``). Times are seconds per optimizer step for a
    training step, per whole sequence of T frames streamed for the stream (one sample, at
    one side and chunk length: ``us_per_step`` is then µs per frame), per call otherwise."""

    kind: ClassVar[str] = "result"
    variant: str
    operation: str
    batch: int
    steps: int
    role: str | None = None
    model: str = DEFAULT_MODEL
    side: str | None = None
    chunk: int | None = None
    create_s: float | None = None
    first_call_s: float | None = None
    """The first call on this shape, which traces and compiles."""
    note: str | None = None
    samples: int | None = None
    steps_per_sample: int | None = None
    median_s: float | None = None
    q1_s: float | None = None
    q3_s: float | None = None
    calls_s: list[float] | None = None
    """Seconds of every timed call, in the order made."""
    others_s: float | None = None
    """CPU seconds other processes took on the worker's CPUs while it timed its calls alone
    (Linux's ``/proc/stat``, to a clock tick): a core it shared (``bench.measuring.threads``)."""
    partners_s: dict[str, list[float]] | None = None
    """Each floor sampled in turn with this measurement (``bench.measuring.turns``): its seconds per
    step of the operation a ratio to the floor divides by (``OVER_FLOOR``), one per timed call of
    ``calls_s``, each taken next to it, in the same order."""
    threads: int | None = None
    cores_busy: float | None = None
    """CPU time over wall time of the timed calls: how many cores worked, on average."""
    peak_rss_mb: float | None = None
    artifact_kib: float | None = None
    """An exported model's size (its ``create_s`` holds the export)."""
    packet_bits: float | None = None
    """The codec sender's mean bits a packet past the stream's opening
    (``bench.measuring.operations.codec``); absent from the files written before it, as from
    every other measurement."""
    information_bits: float | None = None
    """Those packets' symbols' mean information under the prior: ``packet_bits`` less this
    is what a packet spends beyond its symbols."""
    error: str | None = None
    unsupported: str | None = None
    round: int | None = None

    @property
    def key(self) -> Key:
        r = self
        return Key(r.variant, r.operation, r.model, r.batch, r.steps, r.side, r.chunk)

    @property
    def us_per_step(self) -> float | None:
        """µs per time step of the whole batch: median / T (per frame, for the stream)."""
        return None if self.median_s is None else self.median_s / self.steps * 1e6

    @property
    def iqr_us_per_step(self) -> float | None:
        """The interquartile range, per time step, in µs."""
        if self.q1_s is None or self.q3_s is None:
            return None
        return (self.q3_s - self.q1_s) / self.steps * 1e6

    @property
    def sequence_steps_per_s(self) -> float | None:
        """Throughput: B·T / median."""
        return None if self.median_s is None else self.batch * self.steps / self.median_s


@dataclass(frozen=True)
class DoneRecord:
    """A variant's worker has finished, after ``wall_s`` seconds."""

    kind: ClassVar[str] = "done"
    variant: str
    wall_s: float
    round: int | None = None


@dataclass(frozen=True)
class EndRecord:
    """The last line: the whole run took ``wall_s`` seconds."""

    kind: ClassVar[str] = "end"
    wall_s: float


Record = RunRecord | ParityRecord | VariantRecord | ResultRecord | DoneRecord | EndRecord
KINDS: dict[str, type[Record]] = {
    kind.kind: kind
    for kind in (RunRecord, ParityRecord, VariantRecord, ResultRecord, DoneRecord, EndRecord)
}
DERIVED = ("us_per_step", "iqr_us_per_step", "sequence_steps_per_s")
"""A result's figures written with it for readers of the file, recomputed when read."""


def to_json(record: Record) -> str:
    """One line: ``kind``, every field that is set and, for a result, its derived figures."""
    data = {"kind": record.kind, **{k: v for k, v in asdict(record).items() if v is not None}}
    if isinstance(record, ResultRecord):
        data |= {name: value for name in DERIVED if (value := getattr(record, name)) is not None}
    return json.dumps(data)


def from_json(line: str) -> Record:
    """The record on one line of today's format; unknown keys (a derived figure) are ignored."""
    return _record(json.loads(line))


def _record(data: dict[str, Any]) -> Record:
    data = dict(data)
    kind = KINDS.get(data.pop("kind", None))
    if kind is None:
        raise ValueError(f"a record's kind must be among {list(KINDS)}, got {str(data)[:80]!r}")
    if kind is RunRecord:  # JSON has no tuples and no dataclasses
        data["grid"] = [Point(model, b, t, tuple(ops)) for model, b, t, ops in data["grid"]]
        data["variants"] = {name: Listing(**v) for name, v in data["variants"].items()}
        data["machine"] = _typed(Machine, data["machine"])
        data["settings"] = _typed(Settings, data["settings"])
    known = {f.name for f in fields(kind)}
    return kind(**{k: v for k, v in data.items() if k in known})


def _typed[T: (Machine, Settings)](kind: type[T], data: dict[str, Any]) -> T:
    """A record within the run's from JSON: unknown keys ignored, lists made tuples again."""
    known = {f.name for f in fields(kind)}
    values: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known
    }
    return kind(**values)


def parse(lines: Iterable[str]) -> list[Record]:
    """The records of a results file's lines, of any format from ``OLDEST`` to ``FORMAT`` (the
    run's line, the first, gives it; ``ValueError`` for any other)."""
    raw = [json.loads(line) for line in lines if line.strip()]
    version = raw[0].get("format", 1) if raw and raw[0].get("kind") == "run" else FORMAT
    if not isinstance(version, int) or not OLDEST <= version <= FORMAT:
        older = isinstance(version, int) and version < OLDEST
        why = f": {OLDER}, which no upgrade fills in; measure it again" if older else ""
        raise ValueError(
            f"a results file's format must be {OLDEST} to {FORMAT}, got {version!r}{why}"
        )
    for upgrade in UPGRADES[version - OLDEST :]:
        raw = [upgrade(data) for data in raw]
    return [_record(data) for data in raw]


def read(path: Path) -> list[Record]:
    """Every record of a ``results.jsonl``, of any format read (``parse``)."""
    return parse(path.read_text().splitlines())


OLDEST = 2
"""The oldest format read."""
OLDER = "format 1 kept no timed calls (a comparison's rank test needs them) and set no threads"
"""What the formats before ``OLDEST`` lack (``ResultRecord.calls_s`` and ``threads``)."""


def _to_format_3(data: dict[str, Any]) -> dict[str, Any]:
    """Format 2 to 3: the run's format; a measurement of format 2 had no floor in turn."""
    return data | {"format": 3} if data.get("kind") == "run" else data


def _to_format_4(data: dict[str, Any]) -> dict[str, Any]:
    """Format 3 to 4: the run's format; a file of format 3 has no parity lines."""
    return data | {"format": 4} if data.get("kind") == "run" else data


UPGRADES: tuple[Callable[[dict[str, Any]], dict[str, Any]], ...] = (_to_format_3, _to_format_4)
"""``UPGRADES[v - OLDEST]`` raises a line of format v to format v + 1."""


def file_name(name: str) -> str:
    """A variant's or a model's name as a file name (an import path's ``:`` and ``/``, a
    label's spaces, replaced)."""
    return "".join(c if c.isalnum() or c in "._-[]" else "_" for c in name)
