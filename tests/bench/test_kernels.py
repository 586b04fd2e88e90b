"""``bench.kernels``: the kernels of compiled loops' bodies; T-long copies in gradient loops."""

from __future__ import annotations

import importlib.util

import pytest

import frae
from bench.kernels import time_long_copies
from frae.data import multi_sine
from tests import tf_while_checks as checks

keras = importlib.import_module("keras") if importlib.util.find_spec("keras") else None
KERAS_ON_TENSORFLOW = keras is not None and keras.backend.backend() == "tensorflow"

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


def _loss_through_the_outputs(config, variables, x, y):  # type: ignore[no-untyped-def]
    from impls.tf_while.model import tf, unroll

    return tf.reduce_mean(tf.square(unroll(config, variables, x)[0] - y))


STATE_FEEDBACK = frae.FRAEConfig(feedback="state", state_dim=5)


@pytest.mark.backend_specific("tf_while")
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="no tensorflow")
def test_the_gradient_loop_copies_no_time_long_array() -> None:
    """The loss summed inside the loop: no T-long gradient copied per backward iteration; the
    same check finds the copies when differentiating through the stacked outputs."""
    assert time_long_copies(checks.gradient_loops(), 37) == []
    assert time_long_copies(checks.gradient_loops(_loss_through_the_outputs), 37)
    assert time_long_copies(checks.gradient_loops(config=STATE_FEEDBACK), 37) == []


def _tensorflow_gradient_hlo(through_the_outputs: bool) -> str:
    """The optimized HLO of keras_rnn's gradient on TensorFlow at T = 37 (a length no weight
    has): the backend's, or that of the mean over the autoencoder's stacked outputs."""
    import tensorflow as tf

    from impls.keras_rnn import model as keras_model
    from impls.keras_rnn import train as keras_train

    config = frae.FRAEConfig()
    x = tf.constant(frae.data.multi_sine(batch=2, steps=37))
    autoencoder, _, _ = keras_model.build_models(config)
    if through_the_outputs:

        @tf.function(jit_compile=True, autograph=False)
        def gradients(x, y):  # type: ignore[no-untyped-def]
            with tf.GradientTape() as tape:
                outputs, _ = autoencoder([x, tf.zeros((2, config.feedback_dim))])
                loss = tf.reduce_mean(tf.square(outputs - y))
            return loss, tape.gradient(loss, autoencoder.trainable_variables)

    else:
        training = keras_train.squared_error_model(config, autoencoder.get_layer("frae_rnn").cell)
        gradients = keras_train.gradient_function(training, jit_compile=True)
    return gradients.experimental_get_compiler_ir(x, x)(stage="optimized_hlo")


@pytest.mark.backend_specific("keras_rnn")
@pytest.mark.skipif(not KERAS_ON_TENSORFLOW, reason="the HLO of Keras on TensorFlow")
def test_the_gradient_loop_copies_no_time_long_array_on_tensorflow() -> None:
    """The error summed in the cell's state: no T-long gradient copied per backward step; the
    same check finds the copies when differentiating through the stacked outputs."""
    assert time_long_copies(_tensorflow_gradient_hlo(through_the_outputs=False), 37) == []
    assert time_long_copies(_tensorflow_gradient_hlo(through_the_outputs=True), 37)
