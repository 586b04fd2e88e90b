"""``bench.kernels`` counts the kernels of the compiled loops' bodies."""

from __future__ import annotations

import pytest

import frae
from frae.data import multi_sine

SMALL_HLO = """HloModule loop

%body.1 (p: (s32[], f32[2])) -> (s32[], f32[2]) {
  %p = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[2]{0} get-tuple-element(%p), index=1
  %next = s32[] fusion(%i), kind=kLoop, calls=%increment
  %y = f32[2]{0} dot(%x, %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %z = f32[2]{0} copy(%y)
  ROOT %out = (s32[], f32[2]{0}) tuple(%next, %z)
}

%cond.1 (p: (s32[], f32[2])) -> pred[] {
  %p = (s32[], f32[2]{0}) parameter(0)
  ROOT %less = pred[] fusion(%p), kind=kLoop, calls=%compare
}

ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %w = (s32[], f32[2]{0}) while(%init), condition=%cond.1, body=%body.1
  ROOT %r = f32[2]{0} get-tuple-element(%w), index=1
}
"""


def test_loop_kernels_counts_the_work_of_each_loop_body_only() -> None:
    """The body's fusion, dot and copy count; its bookkeeping, the condition and the entry
    computation do not."""
    from collections import Counter

    from bench.kernels import describe, loop_kernels

    loops = loop_kernels(SMALL_HLO)
    assert loops == [Counter({"fusion": 1, "dot": 1, "copy": 1})]
    assert describe(loops, steps_per_iteration=2).endswith("1.5 per time step")


def test_loop_kernels_finds_the_forward_and_backward_loops_of_a_gradient() -> None:
    pytest.importorskip("flax", reason="jax_scan's extra is not installed")
    from bench.kernels import jax_scan_programs, loop_kernels

    programs = jax_scan_programs(frae.FRAEConfig(), multi_sine(batch=1, steps=8))
    assert len(loop_kernels(programs["predict"][0])) == 1
    forward, backward = loop_kernels(programs["loss_and_grads"][0])
    assert sum(forward.values()) > 0 and sum(backward.values()) > 0


def test_a_folded_loop_is_counted_by_its_call_s_attribute() -> None:
    """XLA's loop folding replaces a ``while`` by a call marked ``xla_cpu_small_call``: the
    module above has none; the same loop behind such a call, one."""
    from bench.kernels import FOLDED, folded_loops

    assert folded_loops(SMALL_HLO) == 0
    hoisted = SMALL_HLO.replace(
        "ROOT %r = f32[2]{0} get-tuple-element(%w), index=1",
        f"%c = (s32[], f32[2]{{0}}) call(%init), to_apply=%w, frontend_attributes={{{FOLDED}}}\n"
        "  ROOT %r = f32[2]{0} get-tuple-element(%c), index=1",
    )
    assert folded_loops(hoisted) == 1
