"""``bench.twins.tf_while``: the tape's gradient is the backward pass written by hand."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import frae
from bench.kernels import loop_bodies, loop_carries, time_long_copies
from parity_tests.tolerances import assert_close
from tests import tf_while_checks as checks
from tests.bench_cases import check_streaming

pytestmark = pytest.mark.backend_specific("tf_while")
pytest.importorskip("tensorflow")
backend = pytest.importorskip("impls.tf_while.backend")
tf_model = pytest.importorskip("impls.tf_while.model")
tf_train = pytest.importorskip("impls.tf_while.train")
twin = pytest.importorskip("bench.twins.tf_while")
tf = tf_model.tf
TWIN = "bench.twins.tf_while:TFWhileBPTTBackend"
"""The twin, by import path: also the name of the worker group its tests share."""
TEXTBOOK = "bench.baselines.textbook_fix:TextbookFixBackend"
"""The benchmark's baseline: ``tf_while``'s functions in graph mode, without XLA."""
on_twin = pytest.mark.backend_specific(TWIN)


@on_twin
@pytest.mark.slow
def test_the_twin_traces_once_per_shape_shared_by_instances() -> None:
    checks.one_trace_per_shape(
        TWIN, twin.compiled_by_hand, frae.FRAEConfig(encoder_units=(7,), latent_dim=2)
    )


STREAMING = [
    pytest.param(TWIN, id="twin", marks=on_twin),
    pytest.param(TEXTBOOK, id="textbook_fix"),
]
FUNCTIONS = {TWIN: twin.compiled_by_hand, TEXTBOOK: backend.compiled_functions}
OWN_WIDTHS = {TWIN: (6, 3), TEXTBOOK: (6,)}
"""Encoder widths that only the retrace check traces, by backend: the twin's predict, encode
and decode are ``tf_while``'s functions, so it has widths of its own."""


@pytest.mark.parametrize("name", STREAMING)
@pytest.mark.parametrize("model_kind", checks.MODELS)
def test_a_new_state_value_does_not_retrace(name: str, model_kind: str) -> None:
    config = dataclasses.replace(checks.MODELS[model_kind], encoder_units=OWN_WIDTHS[name])
    checks.a_new_state_value_does_not_retrace(name, FUNCTIONS[name], config)


@pytest.mark.parametrize("name", STREAMING)
@pytest.mark.parametrize("model_kind", checks.MODELS)
def test_chunks_chained_through_the_state_equal_one_call(name: str, model_kind: str) -> None:
    config = checks.MODELS[model_kind]
    check_streaming(frae.create(name, config, seed=3), config)


_BODY_NAME = re.compile(r"^%?([\w.\-]+) \(", re.MULTILINE)


@on_twin
def test_the_tape_calls_the_hand_written_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    """``tf.GradientTape.gradient`` runs the twin's ``backward`` (its loop in the compiled
    program, TensorFlow's own absent): equal gradients, and a changed backward changes them."""
    config = frae.FRAEConfig(encoder_units=(5, 4), decoder_units=(6,))
    x = frae.data.multi_sine(batch=3, steps=17, seed=4)
    y = x[:, ::-1] * 0.5
    by_hand = frae.create(TWIN, config, seed=5)
    loss, grads = by_hand.loss_and_grads(x, y)
    autodiff_loss, autodiff_grads = frae.create("tf_while", config, seed=5).loss_and_grads(x, y)
    assert loss == autodiff_loss  # the same float64 sum inside the forward loop
    for name, grad in autodiff_grads.items():
        assert_close("gradients", grads[name], grad)

    bodies = loop_bodies(checks.gradient_loops(twin.mean_squared_error_by_hand))
    names = [_BODY_NAME.match(body).group(1) for body in bodies]  # type: ignore[union-attr]
    assert len(bodies) == 2, names  # the recorded forward and the reverse loop
    assert 'op_name="hand_written_backward/' in bodies[1], names
    assert not any("_grad" in name for name in names), names
    autodiff_names = [
        _BODY_NAME.match(body).group(1)  # type: ignore[union-attr]
        for body in loop_bodies(checks.gradient_loops())
    ]
    assert any("_grad" in name for name in autodiff_names), autodiff_names

    written = twin.backward
    monkeypatch.setattr(
        twin, "backward", lambda *args: {name: 2.0 * grad for name, grad in written(*args).items()}
    )
    variables = tf_model.create_variables(config)
    for name, value in by_hand.get_weights().items():
        variables[name].assign(value)
    doubled = tf.function(  # a new function: traced now, with the changed backward
        lambda x, y: tf_train.loss_and_grads(
            config, variables, x, y, loss=twin.mean_squared_error_by_hand
        )[1],
        jit_compile=True,
        autograph=False,
    )(tf.constant(x), tf.constant(y))
    for name, grad in grads.items():
        np.testing.assert_allclose(doubled[name].numpy(), 2.0 * grad, rtol=1e-6, atol=1e-9)


@on_twin
def test_the_reverse_loop_carries_only_the_feedback_gradient() -> None:
    """The hand-written loops carry only their counter, the (B, F) feedback or its gradient and
    the loss's sum; TensorFlow's own gradient, summing weights' gradients there, fails."""
    batch, features, steps = 2, 2, 37  # as ``checks.gradient_loops`` runs them
    allowed = {"s32[]", "f64[]", f"f32[{batch},{features}]"}

    def unexpected(hlo: str) -> list[list[str]]:
        return [
            [shape for shape in carries if not shape.startswith(f"f32[{steps},")]
            for carries in loop_carries(hlo)
        ]

    hlo = checks.gradient_loops(twin.mean_squared_error_by_hand)
    assert all(set(shapes) <= allowed for shapes in unexpected(hlo)), unexpected(hlo)
    assert time_long_copies(hlo, 37) == []
    weights = {f"f32[{rows},{cols}]" for rows, cols in [(4, 4), (4, 3), (3, 1), (3, 3), (3, 2)]}
    autodiff = unexpected(checks.gradient_loops())
    assert weights <= {shape for shapes in autodiff for shape in shapes}, autodiff
