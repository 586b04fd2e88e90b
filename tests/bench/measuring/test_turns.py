"""``bench.measuring.turns`` and the runner's groups: the samples of the variants compared directly
and of the floors taken in turn, one of each a round; each one's kept beside the others' calls, a
floor's the operation a ratio to the floor divides by."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.catalogue import VARIANTS
from bench.measuring.job import Settings
from bench.measuring.point import Unit, units
from bench.measuring.runner import Planned, env_of, groups, job_of, shared
from bench.measuring.timing import Rule
from bench.measuring.turns import Floor, Turn, Worker, in_turn, measure, with_partners
from bench.records import OVER_FLOOR, STREAM, Point, Record, ResultRecord
from bench.roles import Role
from bench.variant import Variant


class Scripted(Worker):
    """A worker that answers each sample at once, writing down who was asked, in order."""

    def __init__(self, name: str, asked: list[str], fails_at: int | None = None) -> None:
        self.name, self.alive, self.asked, self.fails_at = name, True, asked, fails_at

    def send(self, command: object) -> None:
        self.asked.append(self.name)

    def answer(self, keep: Any) -> dict[str, Any] | None:
        failed = self.fails_at is not None and self.asked.count(self.name) > self.fails_at
        return {"kind": "sample", **({"error": "boom"} if failed else {"seconds": [1e-3]})}


def test_samples_are_taken_in_turn_the_order_reversed_every_other_round() -> None:
    asked: list[str] = []
    names = ("variant", "floor_a", "floor_b")
    turns = [Turn(Scripted(name, asked), member=name == "variant") for name in names]
    assert in_turn(turns, Rule(4, 0.0, 60.0, 4)) == 4
    once, back = list(names), list(names[::-1])
    assert asked == [*once, *back, *once, *back]
    assert all(len(turn.taken) == 4 for turn in turns)


def test_the_turns_end_when_no_member_is_left() -> None:
    """A member that fails drops out; the floors alone are not measured on."""
    asked: list[str] = []
    turns = [Turn(Scripted("variant", asked, fails_at=2), True), Turn(Scripted("f", asked), False)]
    assert in_turn(turns, Rule(9, 0.0, 60.0, 9)) == 3
    assert len(turns[0].taken) == 2 and turns[0].failed


def test_a_floor_measures_beside_a_unit_what_the_ratio_divides_by() -> None:
    point = Point("default", 1, 20, ("predict", "loss_and_grads", "train_step", STREAM))
    floor = Floor(Scripted("floor", []), [point])
    for unit in units([point]):
        beside = floor.unit_for(unit)
        assert beside == unit.doing(OVER_FLOOR.get(unit.operation, unit.operation))
    elsewhere = Unit(Point("default", 256, 20, ("predict",)), "predict")
    assert floor.unit_for(elsewhere) is None, "the floor does not measure this shape"


def test_a_route_its_defaults_its_twin_and_its_devices_are_measured_together() -> None:
    by_name = {v.name: v for v in VARIANTS}
    names = ["numba_floor", "tf_while[defaults]", "tf_while", "tf_while_bptt", "jax_scan"]
    names += ["tf_while on 2 devices"]
    found = groups([Planned(by_name[name], [], None) for name in names])
    grouped = [[p.variant.name for p in group] for group in found]
    together = ["tf_while", "tf_while[defaults]", "tf_while_bptt", "tf_while on 2 devices"]
    assert grouped == [["numba_floor"], together, ["jax_scan"]]
    alone = groups([Planned(by_name["tf_while[defaults]"], [], None)])
    assert [[p.variant.name for p in group] for group in alone] == [["tf_while[defaults]"]]


def test_the_measurements_two_workers_share_are_made_together() -> None:
    one, other = Scripted("one", []), Scripted("other", [])
    both = Point("default", 1, 20, ("predict", "train_step"))
    shared_units = shared(
        [
            (one, units([both])),
            (other, units([both._replace(operations=("train_step", "loss_and_grads"))])),
        ]
    )
    made = [[(worker.name, unit.operation) for worker, unit in members] for members in shared_units]
    assert made == [
        [("one", "predict")],
        [("one", "train_step"), ("other", "train_step")],
        [("other", "loss_and_grads")],
    ]


REFERENCE = Variant("reference", "reference", Role.REFERENCE, "the oracle", slow=True)
QUICK = Settings(repeats=3, min_time_s=0.0, budget_s=0.0, max_samples=3, timeout_s=120)


@pytest.mark.slow
def test_real_workers_take_their_calls_in_turn(tmp_path: Path) -> None:
    """Three workers of the reference through the protocol, two as variants compared with
    each other and one as their floor: each timed record carries the others' seconds per
    step, one per call; the floor's own records are not kept."""
    point = Point("default", 1, 20, ("predict", "train_step", STREAM))
    job, env = job_of(REFERENCE, {}, QUICK), env_of(REFERENCE, QUICK)
    kept: list[Record] = []
    with (tmp_path / "log").open("w") as log:
        workers = [Worker.start(name, job, env, log) for name in ("reference", "twin", "floor")]
        try:
            for started in workers:
                assert started.answer(kept.append) is not None
            facts = len(kept)
            floor_points = [point._replace(operations=("predict", "loss_and_grads", STREAM))]
            floor = Floor(workers[2], floor_points)
            for members in shared([(worker, units([point])) for worker in workers[:2]]):
                measure(members, [floor], kept.append)
        finally:
            codes = [worker.close() for worker in workers]
            assert codes == [0, 0, 0], (tmp_path / "log").read_text()
    results = [r for r in kept[facts:] if isinstance(r, ResultRecord)]
    assert len(results) == 2 * len(units([point]))
    assert {r.variant for r in results} == {"reference"}, "both workers run the reference"
    for r in results:
        assert r.calls_s is not None and r.partners_s is not None, r
        assert set(r.partners_s) == {"floor", "twin"} or set(r.partners_s) == {"floor", "reference"}
        assert all(len(calls) == len(r.calls_s) == 3 for calls in r.partners_s.values())


def test_only_the_fastest_floor_on_its_own_takes_its_turn() -> None:
    """The floors' own measurements name the fastest at each; a floor not the fastest there
    sits out, and where none measured on its own, every floor that can takes its turn."""
    point = Point("default", 1, 20, ("predict", "loss_and_grads"))
    fastest: dict[tuple[Any, ...], tuple[float, str]] = {}
    slow, fast = (Floor(Scripted(name, []), [point], fastest) for name in ("slow", "fast"))
    predict = Unit(point, "predict")
    assert slow.unit_for(predict) and fast.unit_for(predict)
    for floor, median in ((slow, 2.0), (fast, 1.0)):
        floor.note(ResultRecord(floor.worker.name, "predict", 1, 20, median_s=median))
    assert slow.unit_for(predict) is None and fast.unit_for(predict) == predict
    assert slow.unit_for(Unit(point, "train_step")) is not None, "its gradient: none on its own"


def test_partners_taken_in_other_processes_join_those_taken_in_its_own() -> None:
    """A rated model's calls of the model without it, taken in its own process, stay beside
    the group's and the floors'."""
    kept: list[Record] = []
    own = {"default Δ=2^-6": [0.5, 1.0]}
    record = ResultRecord("v", "train_step", 1, 10, median_s=1.0, calls_s=[1.0, 2.0])
    with_partners(kept.append, {"floor": [0.1, 0.2]}, replace(record, partners_s=own))
    (found,) = kept
    assert isinstance(found, ResultRecord)
    assert found.partners_s == {**own, "floor": [0.1, 0.2]}
