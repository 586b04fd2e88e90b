"""The benchmark's report: tables with every figure's ratio to the native floor, the targets
met or missed, and plots, all from the records ``bench.harness`` writes.

``write(records, out)`` writes ``report.md``, ``step_time_vs_T.png``,
``throughput_vs_B.png`` and ``first_call.png`` into ``out`` and returns the summary for the
terminal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Record = dict[str, Any]
Key = tuple[str, str, int, int]
"""(variant, operation, B, T)."""

FLOOR = "numba_floor"
CHECK = "c_forward"
TEXTBOOK = "textbook_fix"
TARGET_SHAPE = (1, 1000)
"""(B, T) at which the per-step targets are judged."""
BATCHED_SHAPE = (256, 1000)
OPERATION_LABELS = {
    "predict": "predict",
    "loss_and_grads": "loss_and_grads",
    "train_step": "train step",
}


@dataclass(frozen=True)
class Target:
    """One target: the statement, the measured figure and whether it is met."""

    statement: str
    measured: str
    verdict: str
    met: bool | None
    """``None``: not measured in this run."""


def results(records: Iterable[Record]) -> dict[Key, Record]:
    """The timed measurements by (variant, operation, B, T)."""
    return {
        (r["variant"], r["operation"], r["batch"], r["steps"]): r
        for r in records
        if r["kind"] == "result" and "median_s" in r
    }


def first_calls(records: Iterable[Record]) -> dict[tuple[str, str], float]:
    """(variant, operation) -> seconds of the operation's first call in its process: at the
    first shape it ran, so the compile is counted once (later shapes may only retrace)."""
    found: dict[tuple[str, str], float] = {}
    for r in records:
        if r["kind"] == "result" and "first_call_s" in r:
            found.setdefault((r["variant"], r["operation"]), r["first_call_s"])
    return found


def roles(records: Iterable[Record]) -> dict[str, str]:
    """Variant name -> role, in the order of the run."""
    return {r["variant"]: r["role"] for r in records if r["kind"] in ("variant", "result")}


def per_step(table: dict[Key, Record], key: Key) -> float | None:
    """µs per time step of one measurement, if it was made."""
    found = table.get(key)
    return None if found is None else float(found["us_per_step"])


def floor_ratio(
    table: dict[Key, Record], key: Key, floor_operation: str | None = None
) -> float | None:
    """A measurement divided by the floor's, same shape (and operation unless given)."""
    _, operation, batch, steps = key
    value = per_step(table, key)
    floor = per_step(table, (FLOOR, floor_operation or operation, batch, steps))
    return None if value is None or floor is None else value / floor


def _verdict(value: float, limit: float, at_most: bool) -> tuple[str, bool]:
    """'met' or 'missed', with the factor to spare or by which it is missed."""
    if at_most:
        met = value <= limit
        factor = limit / value if met else value / limit
    else:
        met = value >= limit
        factor = value / limit if met else limit / value
    return (f"met, {factor:.2f}× to spare" if met else f"missed by {factor:.2f}×"), met


def _judge(
    statement: str,
    values: dict[str, float],
    limit: float,
    at_most: bool,
    every: bool,
    expected: Iterable[str] = (),
) -> Target:
    """A target over ``values`` (name -> figure): each of them (``every``) or the best.

    Names in ``expected`` without a figure are listed; a target over every one of them is
    then not met, only "met by those measured".
    """
    missing = [name for name in expected if name not in values]
    if not values:
        return Target(statement, "not measured in this run", "not measured", None)
    pick = max if at_most == every else min
    name = pick(values, key=lambda n: values[n])
    verdict, passed = _verdict(values[name], limit, at_most)
    met: bool | None = passed
    shown = ", ".join(f"{n} {v:.3g}×" for n, v in values.items())
    subject = "worst" if every else "best"
    if missing:
        shown += f"; not measured: {', '.join(missing)}"
        if every and met:
            verdict, met = verdict.replace("met,", "met by those measured,"), None
    return Target(statement, f"{shown} ({subject}: {name})", verdict, met)


def targets(records: list[Record]) -> list[Target]:
    """The issue's targets, judged from one run's measurements."""
    table, kinds = results(records), roles(records)
    compiled = [name for name, role in kinds.items() if role == "compiled"]
    batch, steps = TARGET_SHAPE
    at = f"B={batch}, T={steps}"

    def ratios(operation: str, floor_operation: str | None = None) -> dict[str, float]:
        found = {
            name: floor_ratio(table, (name, operation, batch, steps), floor_operation)
            for name in compiled
        }
        return {name: value for name, value in found.items() if value is not None}

    def speedups(operation: str) -> dict[str, float]:
        slow = per_step(table, (TEXTBOOK, operation, batch, steps))
        found = {name: per_step(table, (name, operation, batch, steps)) for name in compiled}
        return {n: slow / v for n, v in found.items() if v is not None and slow is not None}

    predict, training = ratios("predict"), ratios("train_step", "loss_and_grads")
    wide_b, wide_t = BATCHED_SHAPE
    throughput: dict[str, float] = {}
    wide = {n: per_step(table, (n, "predict", wide_b, wide_t)) for n in compiled}
    fastest = [n for n in wide if wide[n] is not None]
    if fastest:
        best = min(fastest, key=lambda n: wide[n] or math.inf)
        narrow, batched = (
            table.get((best, "predict", b, t)) for b, t in (TARGET_SHAPE, BATCHED_SHAPE)
        )
        if narrow and batched:
            throughput[best] = batched["sequence_steps_per_s"] / narrow["sequence_steps_per_s"]
    checks = {}
    for name, operation, b, t in table:
        if name == FLOOR and operation == "predict":
            check = per_step(table, (CHECK, "predict", b, t))
            if check is not None:
                checks[f"B={b}, T={t}"] = table[(name, operation, b, t)]["us_per_step"] / check
    return [
        _judge(
            f"every compiled backend's predict ≤ 3× the floor per step ({at})",
            predict,
            3.0,
            at_most=True,
            every=True,
            expected=compiled,
        ),
        _judge(
            f"the best compiled predict ≤ 1.5× the floor per step ({at})",
            predict,
            1.5,
            at_most=True,
            every=False,
        ),
        _judge(
            f"the best training step ≤ 3× the floor's forward + BPTT per step ({at})",
            training,
            3.0,
            at_most=True,
            every=False,
        ),
        _judge(
            f"every compiled backend's training step ≤ 6× the floor's forward + BPTT ({at})",
            training,
            6.0,
            at_most=True,
            every=True,
            expected=compiled,
        ),
        _judge(
            f"every compiled backend's predict ≥ 300× faster per step than the textbook fix ({at})",
            speedups("predict"),
            300.0,
            at_most=False,
            every=True,
            expected=compiled,
        ),
        _judge(
            f"every compiled backend's training step ≥ 300× faster per step than the textbook "
            f"fix ({at})",
            speedups("train_step"),
            300.0,
            at_most=False,
            every=True,
            expected=compiled,
        ),
        _judge(
            f"batching pays: the best backend's predict throughput at B={wide_b} ≥ 8× its own at "
            f"B={batch} (T={wide_t}; best: fastest compiled predict at B={wide_b})",
            throughput,
            8.0,
            at_most=False,
            every=False,
        ),
        _judge(
            "the floor is a floor: Numba's forward ≤ 1.5× the plain C forward, at every shape",
            checks,
            1.5,
            at_most=True,
            every=True,
        ),
    ]


@dataclass(frozen=True)
class CallCost:
    """A call's time split as ``per_call + per_step·T``, fitted over the T measured at one B."""

    variant: str
    operation: str
    batch: int
    steps: tuple[int, ...]
    per_call_us: float
    per_step_us: float


def call_costs(records: Iterable[Record], batch: int = TARGET_SHAPE[0]) -> list[CallCost]:
    """Least-squares lines through each (variant, operation)'s median call time against T at
    ``batch``, where at least two T were measured.

    The intercept is what a call costs whatever its length (dispatch, argument handling,
    launching the compiled program, converting the result); the slope is the loop's own
    cost per time step. A ratio to the floor at one T mixes the two; the split says which
    one a backend would have to shrink.
    """
    times: dict[tuple[str, str], dict[int, float]] = {}
    for (variant, operation, b, steps), record in results(records).items():
        if b == batch:
            times.setdefault((variant, operation), {})[steps] = float(record["median_s"])
    costs = []
    for (variant, operation), by_steps in times.items():
        if len(by_steps) < 2:
            continue
        lengths = sorted(by_steps)
        mean_t = sum(lengths) / len(lengths)
        mean_s = sum(by_steps.values()) / len(lengths)
        slope = sum((t - mean_t) * (by_steps[t] - mean_s) for t in lengths) / sum(
            (t - mean_t) ** 2 for t in lengths
        )
        costs.append(
            CallCost(
                variant,
                operation,
                batch,
                tuple(lengths),
                (mean_s - slope * mean_t) * 1e6,
                slope * 1e6,
            )
        )
    return costs


def call_cost_rows(records: list[Record]) -> list[list[str]]:
    """One row per (variant, operation) with a fitted split, the per-step part also as a
    ratio to the floor's per-step part."""
    costs = call_costs(records)
    floor = {c.operation: c.per_step_us for c in costs if c.variant == FLOOR}
    rows = []
    for cost in costs:
        base = floor.get(cost.operation)
        ratio = f" ({_fmt(cost.per_step_us / base)}×)" if base else ""
        rows.append(
            [
                cost.variant,
                OPERATION_LABELS[cost.operation],
                ", ".join(map(str, cost.steps)),
                _fmt(cost.per_call_us),
                _fmt(cost.per_step_us) + ratio,
            ]
        )
    return rows


CALL_COST_HEADER = ["variant", "operation", "T fitted", "µs per call", "µs per step (× floor)"]
CALL_COST_CAPTION = (
    "Each call's median time fitted as per call + per step × T over the T measured at B=1 "
    "(least squares): the fixed cost of a call apart from the loop's cost per time step. A "
    "negative or noisy intercept means the fixed cost is too small to separate at these T."
)


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"


def _cell(table: dict[Key, Record], key: Key) -> str:
    """'µs/step (×floor)' for one measurement."""
    value = per_step(table, key)
    if value is None:
        return "—"
    ratio = floor_ratio(table, key)
    return f"{_fmt(value)} ({_fmt(ratio)}×)" if ratio is not None else _fmt(value)


def _variant_facts(records: list[Record]) -> dict[str, Record]:
    return {r["variant"]: r for r in records if r["kind"] == "variant"}


def summary_shape(records: list[Record]) -> tuple[int, int]:
    """``TARGET_SHAPE`` if it was measured, else the smallest B at the longest T."""
    shapes = {(k[2], k[3]) for k in results(records)}
    if TARGET_SHAPE in shapes or not shapes:
        return TARGET_SHAPE
    return min(shapes, key=lambda shape: (-shape[1], shape[0]))


def summary_rows(records: list[Record]) -> list[list[str]]:
    """One row per variant at ``summary_shape``: each operation's µs/step (× floor), the first
    call of predict and of a training step, import time and peak memory."""
    table, facts, compiles = results(records), _variant_facts(records), first_calls(records)
    batch, steps = summary_shape(records)
    rows = []
    for name, role in roles(records).items():
        fact = facts.get(name, {})
        if "skipped" in fact or "error" in fact:
            rows.append(
                [name, role, "skipped" if "skipped" in fact else "failed", "", "", "", "", ""]
            )
            continue
        first = [compiles.get((name, op)) for op in ("predict", "train_step")]
        peak = max((r["peak_rss_mb"] for k, r in table.items() if k[0] == name), default=None)
        rows.append(
            [
                name,
                role,
                *(_cell(table, (name, op, batch, steps)) for op in OPERATION_LABELS),
                " / ".join(_fmt(f, 2) for f in first),
                _fmt(fact.get("import_s"), 2),
                _fmt(peak, 4),
            ]
        )
    return rows


SUMMARY_HEADER = [
    "variant",
    "role",
    "predict",
    "loss_and_grads",
    "train step",
    "compile s (predict / train)",
    "import s",
    "peak MB",
]
SUMMARY_CAPTION = (
    "µs per time step, median (× the Numba floor's same operation); compile: the first call "
    "of the operation in the variant's process"
)


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("-" * len(lines[0]))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return lines


def detail_rows(records: list[Record]) -> list[list[str]]:
    """Every measurement: µs/step with its IQR, throughput, ratio, first call, memory."""
    table, rows = results(records), []
    for r in records:
        if r["kind"] != "result":
            continue
        key = (r["variant"], r["operation"], r["batch"], r["steps"])
        label = [r["variant"], OPERATION_LABELS[r["operation"]], str(r["batch"]), str(r["steps"])]
        if "median_s" not in r:
            why = r.get("unsupported") or r.get("error", "")
            rows.append([*label, "—", "—", "—", "—", _fmt(r.get("first_call_s"), 3), "", "", why])
            continue
        rows.append(
            [
                *label,
                _fmt(r["us_per_step"]),
                _fmt(r["iqr_us_per_step"], 2),
                f"{r['sequence_steps_per_s']:.3g}",
                _fmt(floor_ratio(table, key)),
                _fmt(r["first_call_s"], 3),
                str(r["samples"]),
                _fmt(r["peak_rss_mb"], 4),
                r.get("note", ""),
            ]
        )
    return rows


DETAIL_HEADER = [
    "variant",
    "operation",
    "B",
    "T",
    "µs/step (median)",
    "IQR µs/step",
    "sequence-steps/s",
    "×floor",
    "first call s",
    "samples",
    "peak MB",
    "note",
]


def _series(
    table: dict[Key, Record], operation: str, fixed: str, value: int, varying: str
) -> dict[str, tuple[list[int], list[float]]]:
    """Per variant, (sizes, records) of ``operation`` with ``fixed`` ("batch" or "steps") at
    ``value``, in order of the ``varying`` size."""
    series: dict[str, list[tuple[int, Record]]] = {}
    for (name, op, batch, steps), record in table.items():
        sizes = {"batch": batch, "steps": steps}
        if op == operation and sizes[fixed] == value:
            series.setdefault(name, []).append((sizes[varying], record))
    metric = "us_per_step" if varying == "steps" else "sequence_steps_per_s"
    return {
        name: (
            [size for size, _ in sorted(points, key=lambda p: p[0])],
            [r[metric] for _, r in sorted(points, key=lambda p: p[0])],
        )
        for name, points in series.items()
    }


LINE_STYLES = {"floor": "-", "check": "--", "compiled": "-", "baseline": ":"}


def _styles(records: list[Record]) -> dict[str, dict[str, Any]]:
    """One colour and line style per variant, the same in every plot."""
    import matplotlib

    tab10 = matplotlib.colormaps["tab10"]
    palette = [tab10(i) for i in range(10) if i != 7]  # tab10 without its grey
    styles: dict[str, dict[str, Any]] = {}
    coloured = 0
    for name, role in roles(records).items():
        colour: Any = {"floor": "black", "check": "dimgray"}.get(role)
        if colour is None:
            colour, coloured = palette[coloured % len(palette)], coloured + 1
        styles[name] = {
            "color": colour,
            "linestyle": LINE_STYLES.get(role, "-"),
            "marker": "o",
            "label": name,
        }
    return styles


def _scaling_plot(records: list[Record], fixed: str, value: int, varying: str, path: Path) -> Path:
    """predict and train step against ``varying`` (T or B) with ``fixed`` at ``value``."""
    import matplotlib.pyplot as plt

    table, styles = results(records), _styles(records)
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True, layout="constrained")
    for axis, operation in zip(axes, ("predict", "train_step"), strict=True):
        for name, (sizes, values) in _series(table, operation, fixed, value, varying).items():
            axis.plot(sizes, values, **styles[name])
        fixed_label = "B" if fixed == "batch" else "T"
        axis.set(
            xscale="log",
            yscale="log",
            title=f"{OPERATION_LABELS[operation]}, {fixed_label}={value}",
        )
        axis.set_xlabel("T (time steps)" if varying == "steps" else "B (sequences per call)")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(
        "µs per time step (median)" if varying == "steps" else "sequence-steps per second"
    )
    handles = {h.get_label(): h for axis in axes for h in axis.get_lines()}
    figure.legend(handles.values(), handles.keys(), loc="outside right center", fontsize=8)
    return _save(figure, path)


def plots(records: list[Record], out: Path) -> list[Path]:
    """Time per step against T (B=1), throughput against B (at T=1000, where every variant
    runs, if measured at several B; else at the T with the most B), and each operation's
    first call per variant (``first_calls``), as PNGs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = results(records)
    written = [_scaling_plot(records, "batch", 1, "steps", out / "step_time_vs_T.png")]
    batches_at = {t: {k[2] for k in table if k[3] == t} for t in {k[3] for k in table}}
    wide_t = BATCHED_SHAPE[1]
    if len(batches_at.get(wide_t, ())) < 2:  # else the T with the most B, the longest of those
        wide_t = max(batches_at, key=lambda t: (len(batches_at[t]), t), default=0)
    written.append(_scaling_plot(records, "steps", wide_t, "batch", out / "throughput_vs_B.png"))

    compiles = first_calls(records)
    names = list(dict.fromkeys(name for name, _ in compiles))
    figure, axis = plt.subplots(figsize=(10, 0.45 * len(names) + 1.5))
    height = 0.8 / len(OPERATION_LABELS)
    for index, operation in enumerate(OPERATION_LABELS):
        axis.barh(
            [i + index * height for i in range(len(names))],
            [compiles.get((name, operation), 0.0) for name in names],
            height=height,
            label=OPERATION_LABELS[operation],
        )
    axis.set_yticks([i + height for i in range(len(names))], names)
    axis.invert_yaxis()
    axis.set(
        xscale="log" if compiles else "linear",
        xlabel="seconds",
        title="first call of each operation in a fresh process (trace and compile)",
    )
    axis.grid(True, axis="x", which="both", alpha=0.3)
    axis.legend(fontsize=8)
    written.append(_save(figure, out / "first_call.png"))
    return written


def _save(figure: Any, path: Path) -> Path:
    if figure.get_layout_engine() is None:
        figure.tight_layout()
    figure.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(figure)
    return path


def _notes(records: list[Record]) -> list[str]:
    run = records[0]
    settings = run["settings"]
    slow = [name for name, facts in run["variants"].items() if facts.get("slow")]
    cap = f"T ≤ {settings['slow_max_steps']}" + (
        f", B ≤ {settings['slow_max_batch']}" if settings["slow_max_batch"] else ""
    )
    return [
        "- Each variant runs in a fresh process, one after another. Per operation and input "
        "shape, on a fresh model: the **first call** (trace and compile; for the training step "
        "`fit(x, epochs=1)`), one untimed warm-up call, then calls timed one by one until at "
        f"least {settings['repeats']} and {settings['min_time_s']} s (at most "
        f"{settings['max_samples']}; at least 3 once {settings['budget_s']} s have passed; "
        f"one timed call, no warm-up, where the first call took over "
        f"{settings.get('long_call_s', '—')} s, as the note says). "
        "Reported: the **median** and the **interquartile range**. Every backend returns NumPy, "
        "so the work is finished when the clock stops.",
        f"- **training step** = `fit(x, epochs={settings['train_steps']})` / "
        f"{settings['train_steps']}: forward, BPTT and one Adam update on the whole batch, "
        "through the public `fit` (its loss is read back at every step).",
        "- **µs/step** is per time step of the whole batch (call time / T); **sequence-steps/s** "
        "is B·T / call time. **×floor** divides by the Numba floor's figure for the same "
        "operation and shape (below 1: faster than the floor).",
        "- **peak MB** is the peak resident memory of the variant's process after the "
        "measurement: the peak so far, over its imports and every shape measured before "
        "(`getrusage` `ru_maxrss`; on Linux `VmHWM`, the same figure for this process image "
        "alone, because Linux carries the parent's `ru_maxrss` into the child).",
        "- **import s** is the import of the backend's module and framework in a fresh process "
        "(after NumPy and the core).",
        "- The **floor** (`numba_floor`) is the same forward and back-propagation through time "
        "written as plain loops and compiled by Numba (float32, fastmath off, one thread, "
        "batch innermost, no allocation in the loop); `c_forward` is its forward in plain C, "
        "the check that the floor is one. Both evaluate exp one lane at a time, so where a "
        "framework's compiler vectorizes exp (large B) it can go below the floor.",
        f"- **Capped** to {cap}, because they interpret every time step: "
        + (", ".join(slow) if slow else "none")
        + ". Skipped or failed variants are listed below with the reason.",
        "- The compiled backends held to the targets: those with role `compiled`; Keras' "
        "defaults, the textbook fix, PyTorch eager and the reference are baselines.",
    ]


def markdown(records: list[Record], images: list[Path], preamble: str = "") -> str:
    """The whole report; ``preamble`` (Markdown) goes before the summary."""
    run, facts = records[0], _variant_facts(records)
    machine = run["machine"]
    end = next((r for r in records if r["kind"] == "end"), {})
    lines = [
        "# FRAE benchmark",
        "",
        f"Run {run['started']}, `{run['command']}`, {_fmt(end.get('wall_s'), 3)} s in all; "
        "grid (B, T: operations): "
        + "; ".join(f"({b}, {t}: {', '.join(ops)})" for b, t, ops in run["grid"])
        + ".",
        "",
        "## Machine and versions",
        "",
        f"- {machine['processor']}, {machine['cpu_count']} CPUs ({machine['affinity']} usable), "
        f"{machine['platform']}, Python {machine['python']}",
        "- " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items()),
        f"- C compiler: {machine['c_compiler'] or 'none'}",
        f"- thread variables: {machine['thread_variables'] or 'none set (framework defaults)'}",
    ]
    for name, fact in facts.items():
        if "threads" in fact:
            lines.append(f"- {name}: threads {fact['threads']}")
    lines += ["", "## How it was measured", "", *_notes(records), ""]
    if preamble:
        lines += [preamble.rstrip(), ""]
    batch, steps = summary_shape(records)
    lines += [f"## Summary at B={batch}, T={steps}", "", SUMMARY_CAPTION + ".", ""]
    lines += _markdown_table(SUMMARY_HEADER, summary_rows(records))
    lines += ["", "## Targets", "", "| target | measured (ratios) | result |", "|---|---|---|"]
    lines += [f"| {t.statement} | {t.measured} | {t.verdict} |" for t in targets(records)]
    costs = call_cost_rows(records)
    if costs:
        lines += ["", "## Cost per call and per step (B=1)", "", CALL_COST_CAPTION, ""]
        lines += _markdown_table(CALL_COST_HEADER, costs)
    lines += ["", "## Variants", ""]
    walls = {r["variant"]: r["wall_s"] for r in records if r["kind"] == "done"}
    for name, about in run["variants"].items():
        fact = facts.get(name, {})
        status = (
            f" — **skipped**: {fact['skipped']}"
            if "skipped" in fact
            else f" — **failed**: {fact['error']}"
            if "error" in fact
            else ""
        )
        wall = walls.get(name)
        took = f", {wall:.0f} s" if wall is not None else ""
        lines.append(
            f"- `{name}` ({about['role']}): {about['about']}; `{about['backend']}`{took}{status}"
        )
    lines += ["", "## Every measurement", ""]
    lines += _markdown_table(DETAIL_HEADER, detail_rows(records))
    lines += ["", "## Plots", ""]
    lines += [f"![{path.stem}]({path.name})" for path in images]
    return "\n".join(lines) + "\n"


def summary(records: list[Record]) -> str:
    """The summary table and the targets, for the terminal."""
    batch, steps = summary_shape(records)
    lines = [f"B={batch}, T={steps}: {SUMMARY_CAPTION}", ""]
    lines += _text_table(SUMMARY_HEADER, summary_rows(records))
    costs = call_cost_rows(records)
    if costs:
        lines += ["", "B=1: each call fitted as µs per call + µs per step × T", ""]
        lines += _text_table(CALL_COST_HEADER, costs)
    lines += ["", "targets:"]
    for target in targets(records):
        lines += [f"  {target.statement}", f"    {target.measured}", f"    -> {target.verdict}"]
    return "\n".join(lines)


def write(records: list[Record], out: Path, preamble: str = "") -> str:
    """Write ``report.md`` (with ``preamble``, Markdown, before the summary) and the plots
    into ``out``; return ``summary(records)``."""
    images = plots(records, out)
    (out / "report.md").write_text(markdown(records, images, preamble))
    return summary(records)
