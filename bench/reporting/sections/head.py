"""The report's head: the machine, the versions and how the run measured."""

from __future__ import annotations

from bench.reporting.render import Section
from bench.reporting.sections import Report
from bench.reporting.sections.threads import threads_said
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
## Machine and versions

- {m.processor}, {m.cpu_count} CPUs ({m.affinity} usable), {m.platform}, Python {m.python}
- {versions}
- C compiler: {compiler}{roofline}
- thread variables: {thread_variables}
- {threads_said}: each worker pinned to its CPUs (`os.sched_setaffinity`), its frameworks'
  pools sized to match and read back before it measures (`bench.measuring.threads`);
  **cores busy**, the process's CPU time over the wall time of the timed calls, shows how
  many worked (each
  variant's threads and settings: "Threads and settings", below)

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


def sections(report: Report) -> list[Section]:
    """``HEAD`` filled in: the machine, the settings, the floors and the roles."""
    pivot, run = report.pivot, report.run
    m, s = run.machine, run.settings
    roles = [f"**{r}** ({why}): {', '.join(pivot.named(r)) or 'none'}" for r, why in ROLES.items()]

    def named(role: Role) -> str:
        return ", ".join(f"`{name}`" for name in pivot.named(role)) or "none in this run"

    batch = s.slow_max_batch
    peaks = None if run.roofline is None else describe(peak_of(run), run.roofline.get("error"))
    text = HEAD.format(
        m=m,
        versions=", ".join(f"{k} {v}" for k, v in m.versions.items()),
        compiler=m.c_compiler or "none",
        roofline=f"\n- roofline peaks: {peaks}" if peaks else "",
        thread_variables=m.thread_variables or "none set (framework defaults)",
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
    return [Section(text=text)]
