"""The benchmark's report: tables with every figure's ratio to the native floor, the targets
met or missed, and plots, all from the records ``bench.harness`` writes.

``write(records, out)`` writes ``report.md``, ``step_time_vs_T.png``,
``throughput_vs_B.png`` and ``first_call.png`` into ``out`` and returns the summary for the
terminal. Every table, target and plot reads one ``Pivot`` of the records and finds the
variants it needs by their role (``bench.harness.Variant.role``), never by name.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from bench.records import (
    OPERATIONS,
    DoneRecord,
    EndRecord,
    Record,
    ResultRecord,
    RunRecord,
    VariantRecord,
)

Key = tuple[str, str, int, int]
"""(variant, operation, B, T)."""
Shape = tuple[int, int]
"""(B, T)."""
TARGET_SHAPE: Shape = (1, 1000)
"""Where the per-step targets are judged."""
BATCHED_SHAPE: Shape = (256, 1000)
LABELS = {"predict": "predict", "loss_and_grads": "loss_and_grads", "train_step": "train step"}
TIME, THROUGHPUT = "us_per_step", "sequence_steps_per_s"
"""The figures a target divides: µs per time step, sequence-steps per second."""


@dataclass
class Pivot:
    """One run's records, pivoted once.

    Attributes:
        results: every measurement, timed or not, by (variant, operation, B, T), in the
            order of the run.
        roles: variant -> role, in the order of the run.
        facts: variant -> its facts from its process, or why it did not run.
        walls: variant -> seconds its worker took.
        run: the run's first record (``None`` for records without one, as in tests).
        wall_s: seconds the whole run took.
    """

    results: dict[Key, ResultRecord] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    facts: dict[str, VariantRecord] = field(default_factory=dict)
    walls: dict[str, float] = field(default_factory=dict)
    run: RunRecord | None = None
    wall_s: float | None = None

    @classmethod
    def of(cls, records: Iterable[Record]) -> Pivot:
        """The pivot of ``records``, in the order they were written."""
        pivot = cls()
        for r in records:
            match r:
                case RunRecord():
                    pivot.run = r
                    pivot.roles |= {name: listing.role for name, listing in r.variants.items()}
                case VariantRecord():
                    pivot.facts[r.variant] = r
                case ResultRecord():
                    pivot.results[(r.variant, r.operation, r.batch, r.steps)] = r
                case DoneRecord():
                    pivot.walls[r.variant] = r.wall_s
                case EndRecord():
                    pivot.wall_s = r.wall_s
            if isinstance(r, VariantRecord | ResultRecord):
                pivot.roles.setdefault(r.variant, r.role or "baseline")
        return pivot

    def named(self, role: str) -> list[str]:
        """The variants of ``role``, in the order of the run."""
        return [name for name, found in self.roles.items() if found == role]

    def figure(self, key: Key, metric: str = TIME) -> float | None:
        """``metric`` of one measurement, if it was timed."""
        found = self.results.get(key)
        return None if found is None else getattr(found, metric)

    def floor_ratio(self, key: Key) -> float | None:
        """µs per step of a measurement over the floor's, same operation and shape: at B > 1
        the SIMD floor's (the scalar floor's where it was not measured), at B = 1 the scalar
        floor's, which is the limit there."""
        roles = ("simd_floor", "floor") if key[2] > 1 else ("floor",)
        floors = (self.figure((f, *key[1:])) for role in roles for f in self.named(role))
        floor = next((figure for figure in floors if figure is not None), None)
        value = self.figure(key)
        return None if value is None or floor is None else value / floor

    def first_calls(self) -> dict[tuple[str, str], float]:
        """(variant, operation) -> seconds of its first call in the variant's process, at the
        first shape it ran: the compile, counted once (later shapes may only retrace)."""
        found: dict[tuple[str, str], float] = {}
        for (name, operation, _, _), r in self.results.items():
            if r.first_call_s is not None:
                found.setdefault((name, operation), r.first_call_s)
        return found


@dataclass(frozen=True)
class Target:
    """One target, as data: ``metric`` of the variants of ``role`` for ``operation`` at
    ``shape``, divided by the same figure of the variant of role ``over``, held to ``limit``.

    Attributes:
        statement: its text; ``{limit}``, ``{at}`` ("B=…, T=…"), ``{B}``, ``{T}`` and
            ``{over_B}`` are filled in.
        at_most: the ratio must be ≤ ``limit``, else ≥.
        every: every variant of ``role`` must meet it, else the best one.
        over: the divisor's role; ``None``: the same variant at ``over_shape``.
        over_operation: the divisor's operation, if not ``operation``.
        shape: where it is judged; ``None``: at every shape both were measured.
        fastest: only the variant of ``role`` fastest at ``shape`` is judged.
    """

    statement: str
    limit: float
    operation: str = "predict"
    role: str = "compiled"
    at_most: bool = True
    every: bool = True
    over: str | None = "floor"
    over_operation: str | None = None
    metric: str = TIME
    shape: Shape | None = TARGET_SHAPE
    over_shape: Shape | None = None
    fastest: bool = False

    def text(self) -> str:
        """The statement with its limit and shapes filled in."""
        (b, t), over_b = self.shape or (0, 0), (self.over_shape or (0, 0))[0]
        return self.statement.format(limit=self.limit, at=f"B={b}, T={t}", B=b, T=t, over_B=over_b)


FASTER = "every compiled backend's {} ≥ {{limit:g}}× faster per step than the textbook fix ({{at}})"
TARGETS = (
    Target("every compiled backend's predict ≤ {limit:g}× the floor per step ({at})", 3.0),
    Target("the best compiled predict ≤ {limit:g}× the floor per step ({at})", 1.5, every=False),
    Target(
        "the best training step ≤ {limit:g}× the floor's forward + BPTT per step ({at})",
        3.0,
        "train_step",
        every=False,
        over_operation="loss_and_grads",
    ),
    Target(
        "every compiled backend's training step ≤ {limit:g}× the floor's forward + BPTT ({at})",
        6.0,
        "train_step",
        over_operation="loss_and_grads",
    ),
    # at one shape, a throughput over the textbook fix's is its time over ours
    Target(FASTER.format("predict"), 300.0, at_most=False, over="textbook", metric=THROUGHPUT),
    Target(
        FASTER.format("training step"),
        300.0,
        "train_step",
        at_most=False,
        over="textbook",
        metric=THROUGHPUT,
    ),
    Target(
        "batching pays: the best backend's predict throughput at B={B} ≥ {limit:g}× its own at "
        "B={over_B} (T={T}; best: fastest compiled predict at B={B})",
        8.0,
        at_most=False,
        every=False,
        over=None,
        metric=THROUGHPUT,
        shape=BATCHED_SHAPE,
        over_shape=TARGET_SHAPE,
        fastest=True,
    ),
    Target(
        "the floor is a floor: Numba's forward ≤ {limit:g}× the plain C forward, at every shape",
        1.5,
        role="floor",
        over="check",
        shape=None,
    ),
    *(
        Target(
            "training is linear in T: every compiled backend's training step per step at "
            "T={T} ≤ {limit:g}× its own at T=1000 (B={B})",
            1.15,
            "train_step",
            over=None,
            shape=(batch, 10_000),
            over_shape=(batch, 1000),
        )
        for batch in (1, 256)
    ),
    Target(
        "the best compiled predict ≤ {limit:g}× the SIMD floor per step ({at})",
        2.0,
        every=False,
        over="simd_floor",
        shape=BATCHED_SHAPE,
    ),
    Target(
        "the best training step ≤ {limit:g}× the SIMD floor's forward + BPTT per step ({at})",
        3.0,
        "train_step",
        every=False,
        over="simd_floor",
        over_operation="loss_and_grads",
        shape=BATCHED_SHAPE,
    ),
)


@dataclass(frozen=True)
class Outcome:
    """A target judged: its statement, the figures measured and the verdict."""

    statement: str
    measured: str
    verdict: str
    met: bool | None
    """``None``: not measured in this run, or met only by those measured."""


def ratios(target: Target, pivot: Pivot) -> dict[str, float]:
    """The target's ratio for each variant of its role measured (by shape, where the target
    is judged at every shape)."""
    names, operation = pivot.named(target.role), target.operation
    if target.fastest and target.shape:
        shape = target.shape
        timed = {n: v for n in names if (v := pivot.figure((n, operation, *shape))) is not None}
        names = sorted(timed, key=timed.__getitem__)[:1]
    found, over_operation = {}, target.over_operation or operation
    for name in names:
        measured = [key[2:] for key in pivot.results if key[:2] == (name, operation)]
        for over in [name] if target.over is None else pivot.named(target.over)[:1]:
            for b, t in [target.shape] if target.shape else measured:
                value = pivot.figure((name, operation, b, t), target.metric)
                over_shape = target.over_shape or (b, t)
                base = pivot.figure((over, over_operation, *over_shape), target.metric)
                if value is not None and base is not None:
                    found[name if target.shape else f"B={b}, T={t}"] = value / base
    return found


def judge(target: Target, pivot: Pivot) -> Outcome:
    """``target`` over its ratios: the worst of them (``every``) or the best.

    Variants of its role not measured are listed; a target over every one of them is then
    not met, only "met by those measured".
    """
    values, statement = ratios(target, pivot), target.text()
    if not values:
        return Outcome(statement, "not measured in this run", "not measured", None)
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
    """Every one of ``TARGETS``, judged from one run."""
    return [judge(target, pivot) for target in TARGETS]


@dataclass(frozen=True)
class CallCost:
    """A call's time split as ``per_call + per_step·T``, fitted over the T measured at one B."""

    variant: str
    operation: str
    batch: int
    steps: tuple[int, ...]
    per_call_us: float
    per_step_us: float


def call_costs(pivot: Pivot, batch: int = TARGET_SHAPE[0]) -> list[CallCost]:
    """Least-squares lines through each (variant, operation)'s median call time against T at
    ``batch``, where at least two T were measured.

    The intercept is what a call costs whatever its length (dispatch, argument handling,
    launching the compiled program, converting the result); the slope is the loop's own
    cost per time step. A ratio to the floor at one T mixes the two; the split says which
    one a backend would have to shrink.
    """
    times: dict[tuple[str, str], dict[int, float]] = {}
    for (name, operation, b, steps), r in pivot.results.items():
        if b == batch and r.median_s is not None:
            times.setdefault((name, operation), {})[steps] = r.median_s
    costs = []
    for (name, operation), by_steps in times.items():
        if len(by_steps) > 1:
            lengths = sorted(by_steps)
            fit = statistics.linear_regression(lengths, [by_steps[t] for t in lengths])
            per_call, per_step = fit.intercept * 1e6, fit.slope * 1e6
            costs.append(CallCost(name, operation, batch, tuple(lengths), per_call, per_step))
    return costs


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"


def _with_ratio(value: float | None, ratio: float | None) -> str:
    """'figure (ratio×)', or the figure alone."""
    return _fmt(value) + (f" ({_fmt(ratio)}×)" if ratio is not None else "")


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    # the cells are formatted already: no parsing as numbers, no realigning of decimals
    fmt = "github" if markdown else "simple"
    return tabulate(rows, header, tablefmt=fmt, disable_numparse=True)


def call_cost_rows(pivot: Pivot) -> list[list[str]]:
    """One row per fitted (variant, operation), its per-step part also over the floor's."""
    costs, floors = call_costs(pivot), pivot.named("floor")
    floor = {c.operation: c.per_step_us for c in costs if c.variant in floors}
    rows = []
    for c in costs:
        base = floor.get(c.operation)
        per_step = _with_ratio(c.per_step_us, c.per_step_us / base if base else None)
        steps = ", ".join(map(str, c.steps))
        rows.append([c.variant, LABELS[c.operation], steps, _fmt(c.per_call_us), per_step])
    return rows


CALL_COST_HEADER = ["variant", "operation", "T fitted", "µs per call", "µs per step (× floor)"]
CALL_COST_CAPTION = (
    "Each call's median time fitted as per call + per step × T over the T measured at B=1 "
    "(least squares): the fixed cost of a call apart from the loop's cost per time step. A "
    "negative or noisy intercept means the fixed cost is too small to separate at these T."
)


def summary_shape(pivot: Pivot) -> Shape:
    """``TARGET_SHAPE`` if it was measured, else the smallest B at the longest T."""
    shapes = {(k[2], k[3]) for k, r in pivot.results.items() if r.median_s is not None}
    if TARGET_SHAPE in shapes or not shapes:
        return TARGET_SHAPE
    return min(shapes, key=lambda shape: (-shape[1], shape[0]))


def summary_rows(pivot: Pivot) -> list[list[str]]:
    """One row per variant at ``summary_shape``: each operation's µs/step (× floor), the first
    call of predict and of a training step, import time and peak memory."""
    compiles, shape, rows = pivot.first_calls(), summary_shape(pivot), []
    for name, role in pivot.roles.items():
        fact = pivot.facts.get(name, VariantRecord(name))
        if fact.skipped or fact.error:
            rows.append([name, role, "skipped" if fact.skipped else "failed", *[""] * 5])
            continue
        keys = [(name, operation, *shape) for operation in OPERATIONS]
        cells = [_with_ratio(pivot.figure(key), pivot.floor_ratio(key)) for key in keys]
        first = " / ".join(_fmt(compiles.get((name, op)), 2) for op in ("predict", "train_step"))
        peaks = [r.peak_rss_mb for k, r in pivot.results.items() if k[0] == name and r.peak_rss_mb]
        peak = _fmt(max(peaks, default=None), 4)
        rows.append([name, role, *cells, first, _fmt(fact.import_s, 2), peak])
    return rows


SUMMARY_HEADER = ["variant", "role", *LABELS.values(), "compile s (predict / train)"]
SUMMARY_HEADER += ["import s", "peak MB"]
SUMMARY_CAPTION = (
    "µs per time step, median (× the floor's same operation); compile: the first call "
    "of the operation in the variant's process"
)


HAND_WRITTEN = "_bptt"
"""A backend named ``NAME_bptt`` is ``NAME`` with its backward pass written by hand."""


def autodiff_rows(pivot: Pivot) -> list[list[str]]:
    """Per framework and B at T = 1000: its own autodiff's gradient and training step
    beside the hand-written backward's, and their ratio (above 1: autodiff costs more)."""
    rows = []
    for hand in (name for name in pivot.roles if name.endswith(HAND_WRITTEN)):
        autodiff = hand.removesuffix(HAND_WRITTEN)
        for batch in sorted({k[2] for k in pivot.results if k[0] == hand and k[3] == 1000}):
            cells = []
            for operation in ("loss_and_grads", "train_step"):
                own = pivot.figure((autodiff, operation, batch, 1000))
                by_hand = pivot.figure((hand, operation, batch, 1000))
                price = own / by_hand if own is not None and by_hand else None
                cells += [_fmt(own), _fmt(by_hand), _fmt(price) + ("×" if price else "")]
            rows.append([autodiff, str(batch), *cells])
    return rows


AUTODIFF_HEADER = ["backend", "B", "gradient: autodiff", "by hand", "price"]
AUTODIFF_HEADER += ["training step: autodiff", "by hand", "price"]
AUTODIFF_CAPTION = (
    "µs per time step at T=1000, medians. *By hand*: the same backend with its backward "
    "pass written in the framework (`jax.custom_vjp`, `tf.custom_gradient`, "
    "`torch.autograd.Function`): one reverse loop carrying only the feedback's gradient, "
    "each weight's gradient one product over all steps after it. *Price*: autodiff over by "
    "hand, what the framework's own differentiation costs (below 1: it is the faster)."
)


def detail_rows(pivot: Pivot) -> list[list[str]]:
    """Every measurement: µs/step with its IQR, throughput, ratio, first call, memory."""
    rows = []
    for key, r in pivot.results.items():
        label = [r.variant, LABELS[r.operation], str(r.batch), str(r.steps)]
        first = _fmt(r.first_call_s, 3)
        if r.median_s is None:
            why = r.unsupported or r.error or ""
            rows.append([*label, "—", "—", "—", "—", first, "", "", why])
            continue
        timing = [_fmt(r.us_per_step), _fmt(r.iqr_us_per_step, 2), f"{r.sequence_steps_per_s:.3g}"]
        memory = [str(r.samples), _fmt(r.peak_rss_mb, 4), r.note or ""]
        rows.append([*label, *timing, _fmt(pivot.floor_ratio(key)), first, *memory])
    return rows


DETAIL_HEADER = ["variant", "operation", "B", "T", "µs/step (median)", "IQR µs/step"]
DETAIL_HEADER += ["sequence-steps/s", "×floor", "first call s", "samples", "peak MB", "note"]
LINES = {
    "floor": "-",
    "check": "--",
    "compiled": "-",
    "by_hand": "--",
    "textbook": "-.",
    "baseline": ":",
}
COLOURS = {"floor": "black", "simd_floor": "darkgray", "check": "dimgray"}
"""The floors and the check in greys; every other variant gets a colour of its own."""


def _scaling_plot(pivot: Pivot, by_steps: bool, value: int, path: Path) -> Path:
    """predict and a training step: µs per step against T at B = ``value`` (``by_steps``), or
    throughput against B at T = ``value``."""
    import matplotlib
    import matplotlib.pyplot as plt

    tab10 = matplotlib.colormaps["tab10"]
    palette = itertools.cycle(tab10(i) for i in range(10) if i != 7)  # its grey is the check's
    colours = {n: COLOURS.get(role) or next(palette) for n, role in pivot.roles.items()}
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True, layout="constrained")
    for axis, operation in zip(axes, ("predict", "train_step"), strict=True):
        lines: dict[str, list[tuple[int, float | None]]] = {}
        for (name, op, b, t), r in pivot.results.items():
            if op == operation and (b if by_steps else t) == value and r.median_s is not None:
                point = (t, r.us_per_step) if by_steps else (b, r.sequence_steps_per_s)
                lines.setdefault(name, []).append(point)
        for name, points in lines.items():
            style = {"color": colours[name], "linestyle": LINES.get(pivot.roles[name], "-")}
            axis.plot(*zip(*sorted(points), strict=True), marker="o", label=name, **style)
        title = f"{LABELS[operation]}, {'B' if by_steps else 'T'}={value}"
        axis.set(xscale="log", yscale="log", title=title)
        axis.set_xlabel("T (time steps)" if by_steps else "B (sequences per call)")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs per time step (median)" if by_steps else "sequence-steps per second")
    handles = {h.get_label(): h for axis in axes for h in axis.get_lines()}
    figure.legend(handles.values(), handles.keys(), loc="outside right center", fontsize=8)
    return _save(figure, path)


def plots(pivot: Pivot, out: Path) -> list[Path]:
    """Time per step against T (B=1), throughput against B (at T=1000, where every variant
    runs, if measured at several B; else at the T with the most B), and each operation's
    first call per variant (``Pivot.first_calls``), as PNGs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = [_scaling_plot(pivot, True, 1, out / "step_time_vs_T.png")]
    batches_at: dict[int, set[int]] = {}
    for _, _, b, t in pivot.results:
        batches_at.setdefault(t, set()).add(b)
    wide_t = BATCHED_SHAPE[1]
    if len(batches_at.get(wide_t, ())) < 2:  # else the T with the most B, the longest of those
        wide_t = max(batches_at, key=lambda t: (len(batches_at[t]), t), default=0)
    written.append(_scaling_plot(pivot, False, wide_t, out / "throughput_vs_B.png"))

    compiles = pivot.first_calls()
    names = list(dict.fromkeys(name for name, _ in compiles))
    figure, axis = plt.subplots(figsize=(10, 0.45 * len(names) + 1.5), layout="constrained")
    height = 0.8 / len(OPERATIONS)
    for index, operation in enumerate(OPERATIONS):
        seconds = [compiles.get((name, operation), 0.0) for name in names]
        at = [i + index * height for i in range(len(names))]
        axis.barh(at, seconds, height=height, label=LABELS[operation])
    axis.set_yticks([i + height for i in range(len(names))], names)
    axis.invert_yaxis()
    title = "first call of each operation in a fresh process (trace and compile)"
    axis.set(xscale="log" if compiles else "linear", xlabel="seconds", title=title)
    axis.grid(True, axis="x", which="both", alpha=0.3)
    axis.legend(fontsize=8)
    return [*written, _save(figure, out / "first_call.png")]


def _save(figure: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


ROLES = {
    "floor": "every ×floor at B = 1 divides by it, and at B > 1 without a SIMD floor",
    "simd_floor": "every ×floor at B > 1 divides by it",
    "check": "the check that the floor is one",
    "compiled": "the suite's backends, held to the targets",
    "by_hand": "a compiled backend with its backward pass written by hand, beside its "
    "autodiff twin in the price of autodiff",
    "textbook": "the speed-up targets are measured against it",
    "baseline": "for comparison",
}
HEAD = """\
# FRAE benchmark

Run {run.started}, `{run.command}`, {wall} s in all; grid (B, T: operations): {grid}.

## Machine and versions

- {m[processor]}, {m[cpu_count]} CPUs ({m[affinity]} usable), {m[platform]}, Python {m[python]}
- {versions}
- C compiler: {compiler}
- thread variables: {thread_variables}{threads}

## How it was measured

- Each variant runs in a fresh process, one after another. Per operation and input shape, on a
  fresh model: the **first call** (trace and compile; for the training step `fit(x, epochs=1)`),
  one untimed warm-up call, then calls timed one by one until at least {s[repeats]} and
  {s[min_time_s]} s (at most {s[max_samples]}; at least 3 once {s[budget_s]} s have passed; one
  timed call, no warm-up, where the first call took over {s[long_call_s]} s, as the note says).
  Reported: the **median** and the **interquartile range**. Every backend returns NumPy, so the
  work is finished when the clock stops.
- **training step** = `fit(x, epochs={s[train_steps]})` / {s[train_steps]}: forward, BPTT and one
  Adam update on the whole batch, through the public `fit` (its loss is read back every step).
- **µs/step**: call time / T, for the whole batch; **sequence-steps/s**: B·T / call time;
  **×floor**: over the floor's figure for the same operation and shape (below 1: faster; at
  B > 1 the SIMD floor's).
- **peak MB**: the peak resident memory of the variant's process after the measurement, its
  imports and every shape before included (`getrusage` `ru_maxrss`; on Linux `VmHWM`, the same
  for this process image alone: Linux carries the parent's `ru_maxrss` into the child).
  **import s**: importing the backend and its framework in a fresh process, after NumPy and
  the core.
- The **floor** ({floor}): the same forward and back-propagation through time as plain loops
  compiled by Numba (float32, fastmath off, one thread, batch innermost, no allocation in the
  loop); the **check** is its forward in plain C. Both evaluate exp one lane at a time, so where
  a framework's compiler vectorizes exp (large B) it can go below the floor.
- At B > 1 every ×floor divides instead by the **SIMD floor** ({simd}; the scalar floor where
  it was not measured), the same loops in C vectorised over the batch and compiled for this
  machine with `-O3 -march=native -ffast-math`, which allows it what the frameworks do not:
  sums reassociated, approximate vector exp and tanh (glibc's libmvec), no NaN or infinity
  semantics.
- **Capped** to {cap}, because they interpret every time step: {slow}. Skipped or failed
  variants are listed below with why.
- Roles: {roles}.
"""
"""The report's head: the run, the machine and how it was measured."""


def markdown(pivot: Pivot, images: list[Path], preamble: str = "") -> str:
    """The whole report; ``preamble`` (Markdown) goes before the summary."""
    run = pivot.run
    if run is None:
        raise ValueError("records must begin with the run's record (kind 'run'), got none")
    m, s, (batch, steps) = run.machine, run.settings, summary_shape(pivot)
    threads = [f"\n- {n}: threads {f.threads}" for n, f in pivot.facts.items() if f.threads]
    roles = [f"**{r}** ({why}): {', '.join(pivot.named(r)) or 'none'}" for r, why in ROLES.items()]
    head = HEAD.format(
        run=run,
        wall=_fmt(pivot.wall_s, 3),
        grid="; ".join(f"({b}, {t}: {', '.join(ops)})" for b, t, ops in run.grid),
        m=m,
        versions=", ".join(f"{k} {v}" for k, v in m["versions"].items()),
        compiler=m["c_compiler"] or "none",
        thread_variables=m["thread_variables"] or "none set (framework defaults)",
        threads="".join(threads),
        s=s,
        floor=", ".join(f"`{name}`" for name in pivot.named("floor")) or "none in this run",
        simd=", ".join(f"`{name}`" for name in pivot.named("simd_floor")) or "none in this run",
        cap=f"T ≤ {s['slow_max_steps']}" + (f", B ≤ {b}" if (b := s["slow_max_batch"]) else ""),
        slow=", ".join(n for n, listing in run.variants.items() if listing.slow) or "none",
        roles="; ".join(roles),
    )
    judged = [[t.statement, t.measured, t.verdict] for t in targets(pivot)]
    lines = [head, *([preamble.rstrip(), ""] if preamble else [])]
    lines += [f"## Summary at B={batch}, T={steps}", "", SUMMARY_CAPTION + ".", ""]
    lines += [_table(SUMMARY_HEADER, summary_rows(pivot), markdown=True), "", "## Targets", ""]
    lines += [_table(["target", "measured (ratios)", "result"], judged, markdown=True)]
    if costs := call_cost_rows(pivot):
        lines += ["", "## Cost per call and per step (B=1)", "", CALL_COST_CAPTION, ""]
        lines += [_table(CALL_COST_HEADER, costs, markdown=True)]
    if price := autodiff_rows(pivot):
        lines += ["", "## The price of autodiff", "", AUTODIFF_CAPTION, ""]
        lines += [_table(AUTODIFF_HEADER, price, markdown=True)]
    lines += ["", "## Variants", ""]
    for name, listing in run.variants.items():
        fact, wall = pivot.facts.get(name, VariantRecord(name)), pivot.walls.get(name)
        status = f", {wall:.0f} s" if wall is not None else ""
        status += f" — **skipped**: {fact.skipped}" if fact.skipped else ""
        status += f" — **failed**: {fact.error}" if fact.error else ""
        lines.append(f"- `{name}` ({listing.role}): {listing.about}; `{listing.backend}`{status}")
    lines += ["", "## Every measurement", ""]
    lines += [_table(DETAIL_HEADER, detail_rows(pivot), markdown=True), "", "## Plots", ""]
    lines += [f"![{path.stem}]({path.name})" for path in images]
    return "\n".join(lines) + "\n"


def summary(pivot: Pivot) -> str:
    """The summary table, the call-cost split and the targets, for the terminal."""
    batch, steps = summary_shape(pivot)
    lines = [f"B={batch}, T={steps}: {SUMMARY_CAPTION}", ""]
    lines += [_table(SUMMARY_HEADER, summary_rows(pivot), markdown=False)]
    if costs := call_cost_rows(pivot):
        lines += ["", "B=1: each call fitted as µs per call + µs per step × T", ""]
        lines += [_table(CALL_COST_HEADER, costs, markdown=False)]
    lines += ["", "targets:"]
    for target in targets(pivot):
        lines += [f"  {target.statement}", f"    {target.measured}", f"    -> {target.verdict}"]
    return "\n".join(lines)


def write(records: Iterable[Record], out: Path, preamble: str = "") -> str:
    """Write ``report.md`` (with ``preamble``, Markdown, before the summary) and the plots
    into ``out``; return the summary for the terminal."""
    pivot = Pivot.of(records)
    images = plots(pivot, out)
    (out / "report.md").write_text(markdown(pivot, images, preamble))
    return summary(pivot)
