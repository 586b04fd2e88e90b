"""``bench.reporting.targets``: the targets as data, and where they come from, written from their
limits."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.records import Shape
from bench.reporting.sections.stream import STREAM_TARGETS
from bench.reporting.sections.summary import STATE_TARGETS, TARGETS
from bench.reporting.targets import Target
from bench.roles import Role


def test_the_state_targets_are_the_output_ones_over_the_floor_with_their_own_limits() -> None:
    """Each state target is an output target over the floor, its statement prefixed, its limit
    ``STATE_LIMITS``'s where that has one."""
    from bench.reporting.sections.summary import STATE, STATE_LIMITS
    from bench.reporting.targets import OverFloor

    over_floor = [t for t in TARGETS if isinstance(t.over, OverFloor) and t.variant is None]
    assert [t.name for t in STATE_TARGETS] == [t.name for t in over_floor]
    assert STATE_LIMITS.keys() <= {t.name for t in over_floor}
    for state, output in zip(STATE_TARGETS, over_floor, strict=True):
        limit = STATE_LIMITS.get(output.name, output.limit)
        assert state == replace(output, statement=STATE + output.statement, limit=limit)


def test_every_target_has_a_name_of_its_own() -> None:
    for table in (TARGETS, STATE_TARGETS):
        names = [target.name for target in table]
        assert len(set(names)) == len(names)


def test_where_the_targets_come_from_is_written_from_their_limits() -> None:
    """The prose states each limit as the targets hold it: a limit changed in the data is
    the limit the prose states."""
    from bench.reporting.sections.summary import (
        STATE_TARGETS_ORIGIN,
        TARGETS_ORIGIN,
        output_origin,
        state_origin,
    )

    assert "(3× for predict, 1.5× for the best" in TARGETS_ORIGIN
    assert "of which 300× is asked" in TARGETS_ORIGIN and "(1.15×)" in TARGETS_ORIGIN
    assert "(within 10%: 1.25× asked)" in STATE_TARGETS_ORIGIN
    assert "(4× asked, where the output model asks 3×" in STATE_TARGETS_ORIGIN
    changed = tuple(
        replace(t, limit=4.5) if t.name in ("predict_every", "batching") else t for t in TARGETS
    )
    assert "(4.5× for predict," in output_origin(changed)
    assert "**Batching** (4.5× the throughput" in output_origin(changed)
    state = tuple(replace(t, limit=1.75) if t.name == "predict_best" else t for t in STATE_TARGETS)
    assert "(within 10%: 1.75× asked)" in state_origin(state, TARGETS)
    output = tuple(replace(t, limit=3.5) if t.name == "train_best_batched" else t for t in TARGETS)
    assert "where the output model asks 3.5×" in state_origin(STATE_TARGETS, output)


def test_where_the_stream_targets_come_from_is_written_from_their_limits() -> None:
    from bench.reporting.sections.stream import STREAM_TARGETS_ORIGIN, stream_origin

    origin = STREAM_TARGETS_ORIGIN
    assert "is asked 10 µs at each side and 2× at each side the floor's frame" in origin
    assert "**every compiled backend** 100 µs at each side" in origin
    assert "In chunks of 10 frames" in origin and "at most 3× at" in origin
    changed = tuple(
        replace(t, limit=12.0) if t.name == "receiver_frame_best" else t for t in STREAM_TARGETS
    )
    assert "10 µs at the sender and 12 µs at the receiver" in stream_origin(changed)


def test_each_divisor_is_a_kind_of_its_own() -> None:
    """Over the floor (its gradient for a training step), over a role, over the variant
    itself at another shape: one field each, no value standing for another kind."""
    from bench.reporting.targets import OverFloor, OverItself, OverRole

    by_name = {target.name: target for target in TARGETS}
    assert by_name["predict_every"].over == OverFloor()
    assert by_name["train_every"].over == OverFloor("loss_and_grads")
    assert by_name["predict_textbook"].over == OverRole(Role.TEXTBOOK)
    assert by_name["floor_check"].over == OverRole(Role.CHECK)
    assert by_name["batching"].over == OverItself(Shape(1, 1000))
    assert by_name["linear_B256"].over == OverItself(Shape(256, 1000))
    assert by_name["batching"].text().startswith("batching pays: the best backend's predict")
    assert "at B=256 ≥ 8× its own at B=1" in by_name["batching"].text()


def test_a_target_over_the_floor_must_divide_time_per_step() -> None:
    from bench.reporting.analysis import THROUGHPUT
    from bench.reporting.targets import OverRole

    with pytest.raises(ValueError, match="metric"):
        Target("bad", "throughput over the floor", 2.0, metric=THROUGHPUT)
    Target("good", "throughput over the fix", 2.0, over=OverRole(Role.TEXTBOOK), metric=THROUGHPUT)
