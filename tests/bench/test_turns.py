"""``bench.turns``: a variant's samples and the floors' taken in turn, one of each a round; the
floors' kept beside the variant's calls, each the operation a ratio to the floor divides by."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.job import Settings
from bench.records import OVER_FLOOR, STREAM, Point, Record, ResultRecord
from bench.roles import Role
from bench.runner import env_of, job_of
from bench.turns import Partner, Worker, in_turn, measure
from bench.variant import Variant
from bench.worker import Rule, Unit, units


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
    floors = [Partner(Scripted(name, asked), []) for name in ("floor_a", "floor_b")]
    taken = in_turn(Scripted("variant", asked), floors, Rule(4, 0.0, 60.0, 4))
    assert taken == 4
    once, back = ["variant", "floor_a", "floor_b"], ["floor_b", "floor_a", "variant"]
    assert asked == [*once, *back, *once, *back]
    assert all(len(floor.taken) == 4 for floor in floors)


def test_a_variant_that_fails_a_sample_ends_its_turns() -> None:
    asked: list[str] = []
    floor = Partner(Scripted("floor", asked), [])
    assert in_turn(Scripted("variant", asked, fails_at=2), [floor], Rule(9, 0.0, 60.0, 9)) == 2


def test_a_floor_measures_beside_a_unit_what_the_ratio_divides_by() -> None:
    point = Point("default", 1, 20, ("predict", "loss_and_grads", "train_step", STREAM))
    floor = Partner(Scripted("floor", []), [point])
    for unit in units([point]):
        beside = floor.unit_for(unit)
        assert beside == unit._replace(operation=OVER_FLOOR.get(unit.operation, unit.operation))
    elsewhere = Unit(Point("default", 256, 20, ("predict",)), "predict")
    assert floor.unit_for(elsewhere) is None, "the floor does not measure this shape"


REFERENCE = Variant("reference", "reference", Role.REFERENCE, "the oracle", slow=True)
QUICK = Settings(repeats=3, min_time_s=0.0, budget_s=0.0, max_samples=3, timeout_s=120)


@pytest.mark.slow
def test_real_workers_take_their_calls_in_turn(tmp_path: Path) -> None:
    """Two workers (the reference as a variant and as its floor) through the protocol: each
    timed record carries the floor's seconds per step, one per call; a unit that cannot be
    timed comes back with why, and the floor's own records are not kept."""
    point = Point("default", 1, 20, ("predict", "train_step", STREAM))
    job, env = job_of(REFERENCE, {}, QUICK), env_of(REFERENCE, QUICK)
    with (tmp_path / "log").open("w") as log:
        worker, floor = (Worker.start(name, job, env, log) for name in ("reference", "floor"))
        kept: list[Record] = []
        try:
            for started in (worker, floor):
                assert started.answer(kept.append) is not None
            facts = len(kept)
            partner = Partner(
                floor, [point._replace(operations=("predict", "loss_and_grads", STREAM))]
            )
            for unit in units([point]):
                measure(worker, unit, [partner], kept.append)
        finally:
            assert worker.close() == 0 and floor.close() == 0, (tmp_path / "log").read_text()
    results = [r for r in kept[facts:] if isinstance(r, ResultRecord)]
    assert len(results) == len(units([point])) and all(r.variant == "reference" for r in results)
    for r in results:
        assert r.calls_s is not None and r.partners_s is not None, r
        assert len(r.partners_s["floor"]) == len(r.calls_s) == 3
    train = next(r for r in results if r.operation == "train_step")
    assert train.steps_per_sample == QUICK.train_steps
