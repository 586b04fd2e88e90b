"""The report's answer, first: whether every backend timed agrees with the float64 reference
(``bench.records.ParityRecord``, written by ``frae compare``), the fastest framework route at
each operation and shape with its ratio to the floor, and how many of the benchmark's own
targets the run met, a missed one being a finding, not a failed run."""

from __future__ import annotations

from bench.grid import BATCHED_SHAPE, TARGET_SHAPE
from bench.records import STREAM, Key, ParityRecord
from bench.reporting import sections as subjects
from bench.reporting.analysis import Pivot, label
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import Rows, fmt, ratio_cell
from bench.roles import ROUTES, Role

HEADER = ["operation", "B", "T", "fastest route", "µs/step", "× floor"]
CAPTION = (
    "The fastest framework route (a backend, its defaults, a twin or an exported artifact: "
    "not a floor, the check nor the reference) at each operation and shape, µs per time step "
    "(per frame for the stream), median, and its ratio to the fastest floor there."
)
EXIT = (
    "A missed target is a finding about a framework on this machine, not a failed run: "
    "`frae compare` exits with status 1 only where a backend fails parity, and "
    "`python -m bench` with status 0 whatever the targets say."
)


def sections(report: Report) -> list[Section]:
    parity, targets = parity_line(report), targets_line(report)
    rows = fastest_rows(report.pivot)
    text = f"- **Parity**: {parity}\n- **Targets**: {targets} {EXIT}"
    return [
        Section("The answer", text=text, brief=Brief(title="THE ANSWER")),
        Section(brief=Brief(caption=f"Parity: {parity}")),
        Section(brief=Brief(caption=f"Targets: {targets} {EXIT}")),
        Section("", CAPTION, HEADER, rows, brief=Brief(caption=CAPTION, rows=_shown(rows))),
    ]


def _shown(rows: Rows) -> Rows:
    """The rows the terminal shows: the stream's, and the others at the targets' shapes
    (every row where none is at one)."""
    shapes = {(str(shape.batch), str(shape.steps)) for shape in (TARGET_SHAPE, BATCHED_SHAPE)}
    shown = [row for row in rows if (row[1], row[2]) in shapes or row[0].startswith(STREAM)]
    return shown if len(shown) > len([r for r in rows if r[0].startswith(STREAM)]) else rows


def parity_line(report: Report) -> str:
    """Whether every backend timed agrees with the reference, each with its worst difference
    as a share of its tolerance; which failed; which were timed without a parity check."""
    checked = {r.variant: r for r in report.records if isinstance(r, ParityRecord)}
    timed = _timed(report.pivot, (Role.COMPILED,))
    if not checked:
        return (
            "not checked in this run (`frae compare` checks every installed backend against "
            "the float64 reference before it times them; `python -m bench` alone does not)."
        )
    judged = {name: r for name, r in checked.items() if r.passed is not None}
    failed = [name for name, r in judged.items() if not r.passed]
    shares = ", ".join(f"{name} {_share(r)}" for name, r in judged.items())
    said = (
        f"**{len(failed)} of {len(judged)} backends failed**: {', '.join(failed)}"
        if failed
        else f"every backend compared passed ({len(judged)})"
    )
    said += f"; the worst difference of each, as a share of its tolerance: {shares}."
    if unchecked := [name for name in timed if name not in judged]:
        said += f" Timed without a parity check: {', '.join(unchecked)}."
    return said


def _share(record: ParityRecord) -> str:
    """'6% adam', or why a comparison failed."""
    if record.used is None:
        return f"({record.reason or 'no figure'})"
    return f"{100 * record.used:.0f}% {record.worst or ''}".rstrip()


def _timed(pivot: Pivot, roles: tuple[Role, ...]) -> list[str]:
    """The variants of ``roles`` with at least one measurement timed, in the run's order."""
    timed = {key.variant for key, r in pivot.results.items() if r.median_s is not None}
    return [name for name, role in pivot.roles.items() if role in roles and name in timed]


def targets_line(report: Report) -> str:
    """How many of the run's targets were met, missed, within the spread, not measured."""
    judged = subjects.outcomes(report)
    measured = [t for t in judged if t.judged]
    met = sum(t.met is True for t in measured)
    missed = sum(t.met is False for t in measured)
    unsure = len(measured) - met - missed
    parts = [f"{met} of {len(measured)} measured met", f"{missed} missed"]
    parts += [f"{unsure} within the spread or met by those measured"] if unsure else []
    parts += [f"{len(judged) - len(measured)} not measured"] if len(judged) > len(measured) else []
    return ", ".join(parts) + " (each with its figures: Targets, below)."


def fastest_rows(pivot: Pivot) -> Rows:
    """Per operation (the stream's at each side and chunk length) and shape, the fastest
    framework route and its ratio to the floor."""
    routes = set(_timed(pivot, (*ROUTES, Role.EXPORTED)))
    best: dict[tuple[str, int, int], Key] = {}
    for key, r in pivot.results.items():
        if key.variant not in routes or r.us_per_step is None:
            continue
        where = (label(key.operation, key.side, key.chunk), key.batch, key.steps)
        if where not in best or r.us_per_step < (pivot.figure(best[where]) or float("inf")):
            best[where] = key
    order = sorted(best, key=lambda w: (best[w].operation == STREAM, w[0], w[1], w[2]))
    return [
        [
            named,
            str(b),
            str(t),
            best[named, b, t].variant,
            fmt(pivot.figure(best[named, b, t])),
            ratio_cell(pivot.floor_ratio(best[named, b, t])),
        ]
        for named, b, t in order
    ]
