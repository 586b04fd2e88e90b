"""Each route beside its framework's defaults, where both ran."""

from __future__ import annotations

from bench.reporting.analysis import (
    Pivot,
    label,
)
from bench.reporting.render import Section
from bench.reporting.sections import Report
from bench.reporting.tables import (
    Rows,
    fmt,
    in_turn_cell,
)

ROUTES_HEADER = ["route", "defaults", "operation", "B", "T", "route µs", "defaults µs"]


ROUTES_HEADER += ["defaults / route"]


ROUTES_CAPTION = (
    "µs per time step, medians: each route (`frae.routes`) beside its framework's defaults "
    "or Keras' own calls, the two measured together; defaults / route: the median of each "
    "call's ratio to the route's call taken in turn with it, with its spread (above 1: the "
    "route's settings buy that much)."
)


def routes_rows(pivot: Pivot) -> Rows:
    """Per route and its defaults (``Pivot.defaults``): each measurement both made, the
    two figures, and the defaults' calls over the route's in turn."""
    rows = []
    for route, defaults in pivot.defaults():
        for key in pivot.results:
            if key.variant != defaults or pivot.figure(key) is None:
                continue
            own = pivot.figure(key.of(route))
            in_turn = pivot.in_turn(key, route)
            cells = [fmt(own), fmt(pivot.figure(key)), in_turn_cell(in_turn)]
            where = [label(key.operation, key.side, key.chunk), str(key.batch), str(key.steps)]
            rows.append([route, defaults, *where, *cells])
    return rows


def sections(report: Report) -> list[Section]:
    """Each route beside its framework's defaults, where both ran."""
    pivot = report.pivot
    if not (rows := routes_rows(pivot)):
        return []
    title = "What each route's settings buy"
    return [Section(title, ROUTES_CAPTION, ROUTES_HEADER, rows)]
