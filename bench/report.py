"""The benchmark's report, from the records a run writes (``bench.records``): one list of
sections (``sections``), drawn in full as Markdown and abridged for the terminal
(``bench.reporting.render``), with the plots (``bench.reporting.plots``).

    python -m bench.report RESULTS.jsonl [--out FOLDER]

writes the report of a results file again (into the file's folder by default).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from bench.measuring.runner import file_name
from bench.records import DEFAULT_MODEL, Point, Record, RunRecord, VariantRecord, read
from bench.reporting import tables
from bench.reporting.analysis import Pivot, models_of, summary_shape
from bench.reporting.plots import plots
from bench.reporting.render import Brief, Layout, Section, markdown, terminal
from bench.reporting.sections import comparisons
from bench.reporting.sections.coding import codec_sections
from bench.reporting.sections.exports import export_sections
from bench.reporting.sections.rounding import is_quantized, rounding_sections
from bench.reporting.targets import (
    EXPORT_TARGETS,
    EXPORT_TARGETS_ORIGIN,
    ROOFLINE_TARGETS_ORIGIN,
    STREAM_TARGETS,
    STREAM_TARGETS_ORIGIN,
    origin_of,
)
from bench.reporting.verdicts import Outcome, measured_targets, roofline_targets, targets
from bench.roles import Role
from bench.roofline import describe, peak_of

ROLES = {
    Role.FLOOR: "scalar loops; a ×floor divides by the fastest floor at its shape",
    Role.SIMD_FLOOR: "the loops vectorised over the batch",
    Role.MATRIX_FLOOR: "matrix products, for models of wide layers",
    Role.CHECK: "the check that the floor is one",
    Role.COMPILED: "the suite's backends, held to the targets",
    Role.BY_HAND: "a compiled backend with its backward pass written by hand, beside its "
    "autodiff twin in the price of autodiff",
    Role.TEXTBOOK: "the speed-up targets are measured against it",
    Role.DEVICES: "a compiled backend's training step split over N devices, beside its own",
    Role.REFERENCE: "the float64 oracle every backend is checked against",
    Role.BASELINE: "for comparison",
    Role.EXPORTED: "an exported artifact run by its runtime alone, held to the export targets",
}
HEAD = """\
# FRAE benchmark

Run {run.started}, `{run.command}`, {wall} s in all; grid (B, T: operations): {grid}.

## Machine and versions

- {m.processor}, {m.cpu_count} CPUs ({m.affinity} usable), {m.platform}, Python {m.python}
- {versions}
- C compiler: {compiler}{roofline}
- thread variables: {thread_variables}{threads}
- {threads_said}: each worker pinned to its CPUs (`os.sched_setaffinity`), its frameworks'
  pools sized to match and read back before it measures (`bench.measuring.threads`); **cores
  busy**, the
  process's CPU time over the wall time of the timed calls, shows how many worked

## How it was measured

- Each variant runs in a fresh process, one after another. Per operation and input shape, on a
  fresh model: the **first call** (trace and compile; for the training step `fit(x, epochs=1)`),
  one untimed warm-up call, then calls timed one by one until at least {s.repeats} and
  {s.min_time_s} s (at most {s.max_samples}; at least 3 once {s.budget_s} s have passed; one
  timed call, no warm-up, where the first call took over {s.long_call_s} s, as the note says).
  Reported: the **median** and the **interquartile range**. Every backend returns NumPy, so the
  work is finished when the clock stops.
- **training step** = `fit(x, epochs={s.train_steps})` / {s.train_steps} (`fit(x, epochs=1)` where
  the warm-up's step took over {s.long_step_s} s, as the note says): forward, BPTT and one
  Adam update on the whole batch, through the public `fit` (its loss is read back every step).
- **stream**: one sequence of T frames at B = 1 sent a chunk at a time, each call given the
  state the one before returned: the sender through `encode(chunk, state=s,
  return_state=True)`, the receiver through `decode` on the codes of one whole `encode` made
  first; a sample is the whole sequence streamed at one chunk length, at least
  {stream_repeats} of them, with no warm-up (the first sample's calls after its first are
  warm), reported per frame.
- **µs/step**: call time / T, for the whole batch (for the stream, µs per frame);
  **sequence-steps/s**: B·T / call time; **×floor**: over the floor's figure for the same
  operation and shape, and side and chunk length (below 1: faster; at B > 1 the SIMD
  floor's).
- **peak MB**: the peak resident memory of the variant's process after the measurement, its
  imports and every shape before included (`getrusage` `ru_maxrss`; on Linux `VmHWM`, the same
  for this process image alone: Linux carries the parent's `ru_maxrss` into the child).
  **import s**: importing the backend and its framework in a fresh process, after NumPy and
  the core.
- Every **×floor** divides by the fastest of the native floors measured for the same
  operation, model and shape: the tightest bound the run has. The floors, each the same
  forward and back-propagation through time without a framework (the scalar and SIMD
  floors' loops serial whatever the run's threads; the matrix floor's large products split
  over them with OpenMP):
  - the **scalar floor** ({floor}): plain loops compiled by Numba (float32, fastmath off, batch
    innermost, no allocation in the loop); the **check** is its forward in plain C. Both
    evaluate exp one lane at a time;
  - the **SIMD floor** ({simd}): the same loops in C vectorised over the batch and compiled
    for this machine with `-O3 -march=native -ffast-math`, which allows it what the
    frameworks do not: sums reassociated, approximate vector exp and tanh (glibc's libmvec),
    no NaN or infinity semantics;
  - the **matrix floor** ({matrix}): each layer a matrix product in C (same flags), for
    models of wide layers, where loops one multiply-add at a time are no limit.
- **Capped** to {cap}, because they interpret every time step: {slow}. Skipped or failed
  variants are listed below with why.
- Roles: {roles}.
"""
"""The report's head: the run, the machine and how it was measured."""


def _settings(facts: VariantRecord) -> str:
    """A variant's threads and the framework settings its backend ran with, or ``""``."""
    said = [f"threads {facts.threads}"] if facts.threads else []
    if facts.routes:
        said.append(f"settings {'; '.join(facts.routes)}")
    return ", ".join(said)


def head(pivot: Pivot, run: RunRecord) -> str:
    """``HEAD`` filled in: the run, the machine, the settings, the floors and the roles."""
    m, s = run.machine, run.settings
    threads = [f"\n- {n}: {facts}" for n, f in pivot.facts.items() if (facts := _settings(f))]
    roles = [f"**{r}** ({why}): {', '.join(pivot.named(r)) or 'none'}" for r, why in ROLES.items()]

    def named(role: Role) -> str:
        return ", ".join(f"`{name}`" for name in pivot.named(role)) or "none in this run"

    batch = s.slow_max_batch
    peaks = None if run.roofline is None else describe(peak_of(run), run.roofline.get("error"))
    return HEAD.format(
        run=run,
        wall=tables.fmt(pivot.wall_s, 3),
        grid="; ".join(_point(point) for point in run.grid),
        m=m,
        versions=", ".join(f"{k} {v}" for k, v in m.versions.items()),
        compiler=m.c_compiler or "none",
        roofline=f"\n- roofline peaks: {peaks}" if peaks else "",
        thread_variables=m.thread_variables or "none set (framework defaults)",
        threads="".join(threads),
        threads_said=threads_said(pivot),
        s=s,
        floor=named(Role.FLOOR),
        simd=named(Role.SIMD_FLOOR),
        matrix=named(Role.MATRIX_FLOOR),
        cap=f"T ≤ {s.slow_max_steps}" + (f", B ≤ {batch}" if batch else ""),
        stream_repeats=s.stream_repeats or s.repeats,
        slow=", ".join(n for n, listing in run.variants.items() if listing.slow) or "none",
        roles="; ".join(roles),
    ).rstrip("\n")


def _point(point: Point) -> str:
    """A point of the grid: "(MODEL, B=…, T=…: operations)", the default model unnamed."""
    on = "" if point.model == DEFAULT_MODEL else point.model + ", "
    return f"({on}B={point.batch}, T={point.steps}: {', '.join(point.operations)})"


TARGET_HEADER = ["target", "measured (ratios)", "result"]
TERMINAL_FLAGS = 8
"""Readings to doubt the terminal names; the report lists every one."""
TERMINAL_SUMMARY = (0, 2, 3, 4, 5)
"""The summary's columns in the terminal: variant, the three operations, compile."""


def summary_section(pivot: Pivot) -> Section:
    """Every variant at the summary's shape (``summary_shape``)."""
    batch, steps = summary_shape(pivot)
    shown = [tables.SUMMARY_HEADER[i] for i in TERMINAL_SUMMARY[:-1]] + ["compile s"]
    return Section(
        f"Summary at B={batch}, T={steps}{pivot.on}",
        tables.SUMMARY_CAPTION + ".",
        tables.SUMMARY_HEADER,
        tables.summary_rows(pivot),
        brief=Brief(
            caption=f"B={batch}, T={steps}{pivot.on}: {tables.SUMMARY_CAPTION}",
            columns=TERMINAL_SUMMARY,
            header=shown,
        ),
    )


def target_rows(judged: Iterable[Outcome]) -> list[list[str]]:
    return [[t.statement, t.measured, t.verdict] for t in judged]


def targets_section(pivot: Pivot) -> Section:
    """Every target judged, after where they come from; the terminal lists those measured."""
    roofline = roofline_targets(pivot)
    judged = targets(pivot) + targets(pivot, STREAM_TARGETS + EXPORT_TARGETS) + roofline
    unmeasured = sum(not t.judged for t in judged)
    more = f"({unmeasured} more not measured in this run: report.md lists them)"
    brief = Brief(
        caption="targets (where they come from: report.md):",
        layout=Layout.OUTLINE,
        rows=target_rows(t for t in judged if t.judged),
        footnote=more if unmeasured else "",
    )
    origin = f"{origin_of(pivot)}\n\n{STREAM_TARGETS_ORIGIN}\n\n{EXPORT_TARGETS_ORIGIN}"
    origin += f"\n\n{ROOFLINE_TARGETS_ORIGIN}" if roofline else ""
    return Section("Targets", origin, TARGET_HEADER, target_rows(judged), brief=brief)


def stream_sections(pivot: Pivot) -> list[Section]:
    """The stream, where the run streamed: µs per frame, each call split into per call and
    per frame, and what did not stream."""
    if not (rows := tables.stream_rows(pivot)):
        return []
    header = tables.stream_header(pivot)
    unstreamed = "\n".join(tables.unstreamed(pivot))
    text = f"Not streamed:\n\n{unstreamed}" if unstreamed else ""
    shown = ["variant", *(f"{side} {chunk}" for side, chunk in tables.stream_columns(pivot))]
    caption = "stream, B=1: µs per frame (× the floor's) at each side, by frames per call"
    brief = Brief(caption=caption, columns=(0, *range(2, len(header))), header=shown, wrapping=(0,))
    found = [Section("Streaming", tables.STREAM_CAPTION, header, rows, text, brief)]
    if cost_rows := tables.stream_cost_rows(pivot):
        cost_brief = Brief(caption="stream: µs per call and per frame", columns=(0, 1, 3, 4))
        cost_header = tables.STREAM_COST_HEADER
        found.append(
            Section("", tables.STREAM_COST_CAPTION, cost_header, cost_rows, brief=cost_brief)
        )
    return found


def call_cost_section(pivot: Pivot) -> Section:
    """Each call split into per call and per step at B=1, or why it is not."""
    title = "Cost per call and per step (B=1)"
    if rows := tables.call_cost_rows(pivot):
        caption = "B=1: each call fitted as µs per call + µs per step × T (T fitted: report.md)"
        shown = Brief(caption=caption, columns=(0, 1, 3, 4))
        return Section(title, tables.CALL_COST_CAPTION, tables.CALL_COST_HEADER, rows, brief=shown)
    reason = tables.unsplit_reason(pivot)
    brief = Brief(caption=reason) if reason else None
    return Section(title, text=reason or "No variant was timed at B=1.", brief=brief)


def autodiff_sections(pivot: Pivot) -> list[Section]:
    """The price of autodiff, where a backend ran beside its hand-written twin."""
    if not (rows := comparisons.autodiff_rows(pivot)):
        return []
    title = f"The price of autodiff (T={comparisons.AUTODIFF_STEPS})"
    return [Section(title, comparisons.AUTODIFF_CAPTION, comparisons.AUTODIFF_HEADER, rows)]


def routes_sections(pivot: Pivot) -> list[Section]:
    """Each route beside its framework's defaults, where both ran."""
    if not (rows := comparisons.routes_rows(pivot)):
        return []
    title = "What each route's settings buy"
    return [Section(title, comparisons.ROUTES_CAPTION, comparisons.ROUTES_HEADER, rows)]


def devices_sections(pivot: Pivot) -> list[Section]:
    """The devices axis, where a variant trained data-parallel."""
    if not (rows := comparisons.devices_rows(pivot)):
        return []
    cores = pivot.run.machine.cpu_count if pivot.run else "?"
    title = "Data-parallel training: the devices axis"
    caption = comparisons.DEVICES_CAPTION.format(cores=cores)
    shown = "data-parallel training step, µs per step (on a CPU: the engine's cost):"
    return [Section(title, caption, comparisons.DEVICES_HEADER, rows, brief=Brief(caption=shown))]


def model_sections(pivot: Pivot) -> list[Section]:
    """A model measured beside the run's first: its config, its table and its targets."""
    header, rows = tables.model_table(pivot)
    shown, shown_rows = tables.model_table(pivot, brief=True)
    caption = tables.model_caption(pivot)
    judged = measured_targets(pivot)
    origin = ROOFLINE_TARGETS_ORIGIN if any(t in judged for t in roofline_targets(pivot)) else ""
    brief = Brief(
        title=f"model {pivot.model}:", caption=caption, header=shown, rows=shown_rows, wrapping=(0,)
    )
    return [
        Section(f"Model {pivot.model}", caption, header, rows, brief=brief),
        Section("", origin, TARGET_HEADER, target_rows(judged), brief=Brief(layout=Layout.OUTLINE)),
    ]


def flag_sections(pivot: Pivot) -> list[Section]:
    """The readings to doubt, if any: every one with why; the terminal names the first."""
    if not (rows := tables.flag_rows(pivot)):
        return []
    where = [[f"{name} {operation} B={b} T={t}"] for name, operation, b, t, _ in rows]
    caption = f"{len(rows)} readings to doubt ({tables.FLAG} in the tables; why: report.md):"
    brief = Brief(caption=caption, layout=Layout.LIST, rows=where, limit=TERMINAL_FLAGS)
    return [
        Section("Readings to doubt", tables.FLAG_CAPTION, tables.FLAG_HEADER, rows, brief=brief)
    ]


def variants_section(pivot: Pivot, run: RunRecord) -> Section:
    """Every variant the run listed: what it is, how long it took, why it did not run."""
    lines = []
    for name, listing in run.variants.items():
        fact, wall = pivot.facts.get(name, VariantRecord(name)), pivot.walls.get(name)
        status = f", {wall:.0f} s" if wall is not None else ""
        status += f" — **skipped**: {fact.skipped}" if fact.skipped else ""
        status += f" — **failed**: {fact.error}" if fact.error else ""
        lines.append(f"- `{name}` ({listing.role}): {listing.about}; `{listing.backend}`{status}")
    return Section("Variants", text="\n".join(lines))


def sections(
    records: Iterable[Record], images: Sequence[Path] = (), preamble: str = ""
) -> list[Section]:
    """The report's sections, in order, ``preamble`` (Markdown) after the head and the plots
    ``images`` last; ``ValueError`` where ``records`` hold no run record."""
    records = list(records)
    pivot = Pivot.of(records)
    if (run := pivot.run) is None:
        raise ValueError("records must begin with the run's record (kind 'run'), got none")
    found = [Section(text=head(pivot, run))]
    found += [Section(text=preamble.rstrip())] if preamble.strip() else []
    found += [summary_section(pivot), targets_section(pivot), call_cost_section(pivot)]
    found += stream_sections(pivot) + export_sections(pivot)
    found += routes_sections(pivot) + autodiff_sections(pivot) + devices_sections(pivot)
    for other in models_of(records)[1:]:
        if not is_quantized(records, other):
            found += model_sections(Pivot.of(records, other))
    found += rounding_sections(records) + codec_sections(records)
    found += flag_sections(pivot)
    found.append(variants_section(pivot, run))
    detail = tables.detail_rows(pivot)
    found.append(
        Section(
            "Every measurement",
            caption=tables.DETAIL_CAPTION,
            header=tables.DETAIL_HEADER,
            rows=detail,
        )
    )
    said = threads_said(pivot)
    found = [with_threads(section, said) for section in found]
    images_text = "\n".join(f"![{path.stem}]({path.name})" for path in images)
    return [*found, Section("Plots", text=images_text)]


def threads_said(pivot: Pivot) -> str:
    """The threads the measurements ran on, as a caption says them."""
    counts = {r.variant: r.threads for r in pivot.results.values() if r.median_s is not None}
    if not counts:
        return "Threads: none timed"
    if len(set(counts.values())) == 1:
        threads = next(iter(counts.values()))
        plural = "s" if threads != 1 else ""
        return f"Every variant on {threads} thread{plural}, pinned to as many cores"
    by_variant = ", ".join(f"{name} {threads}" for name, threads in counts.items())
    return f"Threads differ by variant: {by_variant}"


def with_threads(section: Section, said: str) -> Section:
    """``section`` with ``said`` after its caption, and its brief's, where it has a table."""
    if not section.header:
        return section
    caption = f"{section.caption} {said}.".lstrip()
    brief = section.brief
    if brief is not None and brief.caption:
        text, colon = brief.caption.removesuffix(":"), ":" * brief.caption.endswith(":")
        brief = replace(brief, caption=f"{text} ({said[0].lower()}{said[1:]}){colon}")
    return replace(section, caption=caption, brief=brief)


def write(records: Iterable[Record], out: Path, preamble: str = "") -> str:
    """Write ``report.md`` (with ``preamble``, Markdown, before the summary) and the plots
    of every model but the quantized ones (their section is their figure) into ``out``;
    return the summary for the terminal."""
    records = list(records)
    images = plots(Pivot.of(records), out)
    for other in models_of(records)[1:]:
        if not is_quantized(records, other):
            images += plots(Pivot.of(records, other), out, f"_{file_name(other)}")
    drawn = sections(records, images, preamble)
    (out / "report.md").write_text(markdown(drawn))
    return terminal(drawn)


def main(argv: list[str] | None = None) -> int:
    """The command line: write the report of a results file again; print its summary."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.report", description="write the report of a benchmark's results"
    )
    parser.add_argument("results", type=Path, help="a results.jsonl")
    parser.add_argument("--out", type=Path, help="report folder (default: the results' folder)")
    args = parser.parse_args(argv)
    if not args.results.is_file():
        parser.error(f"results must be a results.jsonl file, got {args.results}")
    out = args.out or args.results.parent
    out.mkdir(parents=True, exist_ok=True)
    print(write(read(args.results), out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
