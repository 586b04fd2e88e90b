"""``bench.measuring.operations``: every operation a point can name has its module, an
``Operation``; and a made-up one is measured through its one registry line."""

from __future__ import annotations

from functools import partial

import pytest

from bench.grid import STREAM_CHUNKS
from bench.measuring.job import Job, Settings
from bench.measuring.operations import MEASURED, operation
from bench.measuring.operations.base import Operation
from bench.measuring.point import OnPoint, Row, Unit, units
from bench.measuring.timing import Calls, Made, prepare_calls
from bench.measuring.worker import measure_shape
from bench.records import CODING, OFFERED, SIDES, Point

HERE = __name__
POINT = Point("default", 1, 20, ("predict",))


@pytest.mark.parametrize("name", OFFERED)
def test_every_operation_a_variant_offers_has_its_module(name: str) -> None:
    """Its class an ``Operation`` with nothing left abstract, each unit measuring it, its
    records naming it (or, the codec's, each of its runs)."""
    measured = operation(name)
    assert isinstance(measured, Operation)
    assert {unit.operation for unit in measured.units(POINT, name)} == {name}
    assert measured.names(name) in ((name,), CODING)


def test_the_registry_names_every_operation_offered_and_its_records_every_coding_one() -> None:
    named = {each for name in MEASURED for each in operation(name).names(name)}
    assert set(MEASURED) == set(OFFERED) and set(CODING) <= named


class Summed(Operation):
    """A made-up operation: the sum of the point's input, at each side and chunk length."""

    sided = True

    def prepare(self, at: OnPoint, unit: Unit, job: Job, row: Row) -> Made:
        calls = Calls(at.x.sum, at.x.sum, 1)
        return prepare_calls(calls, job.settings, partial(row, unit.operation))


class Unfinished(Operation):
    """A made-up operation that does not say how to prepare its runs."""


def test_a_made_up_operation_is_measured_through_its_registry_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its units at each side and chunk length after the point's other operation's, each
    timed on the point's model and input."""
    monkeypatch.setitem(MEASURED, "summed", f"{HERE}:Summed")
    point = Point("default", 1, 20, ("predict", "summed"))
    expected = [("predict", None, None)]
    expected += [("summed", side, chunk) for side in SIDES for chunk in STREAM_CHUNKS]
    assert [(u.operation, u.side, u.chunk) for u in units([point])] == expected
    job = Job("reference", "reference", Settings(repeats=2, min_time_s=0.0, max_samples=2))
    rows = list(measure_shape(job, point))
    assert [(r.operation, r.side, r.chunk) for r in rows] == expected
    assert all(r.median_s is not None and r.samples == 2 for r in rows), rows


def test_an_operation_that_does_not_prepare_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MEASURED, "unfinished", f"{HERE}:Unfinished")
    with pytest.raises(TypeError, match="prepare"):
        operation("unfinished")
