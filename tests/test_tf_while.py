"""TensorFlow-specific promises of ``tf_while``: one trace per shape, a state that is an
input of the compiled program (no retrace, one XLA compilation per chunk length), a quiet
terminal, a gradient loop that copies nothing T long and saves no weights per step, and GRU
weights that Keras' own ``GRUCell`` steps as the reference does; of its twin ``TWIN``: the
tape's gradient is the backward pass written by hand, whose reverse loop carries only the
feedback's gradient."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from frae import gru_layout
from parity_tests.tolerances import assert_close

pytestmark = pytest.mark.backend_specific("tf_while")
pytest.importorskip("tensorflow")
backend = pytest.importorskip("impls.tf_while.backend")
TWIN = "bench.twins.tf_while:TFWhileBPTTBackend"
"""The benchmark's hand-written-backward twin, by import path: also the name of the worker
group its tests share."""
TEXTBOOK = "bench.baselines.textbook_fix:TextbookFixBackend"
"""The benchmark's baseline: ``tf_while``'s functions in graph mode, without XLA."""


def _tracing_counts(jit_compile: bool = True, name: str = "tf_while") -> dict[str, int]:
    cache = backend.hand_written_functions if name == TWIN else backend.compiled_functions
    functions = cache(jit_compile)
    return {name: function.experimental_get_tracing_count() for name, function in functions.items()}


def _exercise(model: frae.Backend, x: np.ndarray) -> None:
    model.predict(x)
    model.decode(model.encode(x))
    model.loss_and_grads(x)
    model.fit(x, epochs=2, optimizer="sgd", learning_rate=0.1)
    model.fit(x, epochs=2, optimizer="adam", learning_rate=0.2)


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("tf_while", frae.FRAEConfig(encoder_units=(7,))),  # configs no other test traces
        ("tf_while", frae.FRAEConfig(encoder_units=(7,), feedback="state", state_dim=6)),
        pytest.param(
            TWIN,
            frae.FRAEConfig(encoder_units=(7,), latent_dim=2),
            marks=pytest.mark.backend_specific(TWIN),
        ),
    ],
)
@pytest.mark.slow
def test_one_trace_per_shape_shared_by_instances(name: str, config: frae.FRAEConfig) -> None:
    """Each model has a config object of its own, equal to the others', and is gone before
    the next one is made (a sweep, the kit): TensorFlow would trace such a config anew."""
    x = frae.data.multi_sine(batch=2, steps=13, seed=1)
    before = _tracing_counts(name=name)
    _exercise(frae.create(name, dataclasses.replace(config)), x)
    first = _tracing_counts(name=name)
    traced = {"start_fit": 2}  # with Adam's slots and without (SGD)
    assert all(first[op] == before[op] + traced.get(op, 1) for op in first), first
    _exercise(frae.create(name, dataclasses.replace(config), seed=1), x)
    _exercise(frae.create(name, dataclasses.replace(config), seed=2), x * 0.5)
    assert _tracing_counts(name=name) == first, "same config and shapes traced again"
    _exercise(frae.create(name, dataclasses.replace(config)), x[:, :11])
    shape_free = {"start_fit": 0}  # optimizer state has the weights' shapes, not the input's
    after = _tracing_counts(name=name)
    assert all(after[op] == first[op] + shape_free.get(op, 1) for op in first), after


def test_textbook_graph_mode_equals_compiled() -> None:
    x = frae.data.multi_sine(batch=3, steps=20, seed=2)
    compiled = frae.create("tf_while", seed=3)
    textbook = frae.create(TEXTBOOK, seed=3)
    assert textbook.name == "textbook_fix"
    assert_close("outputs", textbook.predict(x), compiled.predict(x))
    before = _tracing_counts(jit_compile=False)["predict"]
    textbook.predict(x)
    assert _tracing_counts(jit_compile=False)["predict"] == before


STREAMING = [
    pytest.param("tf_while", id="tf_while"),
    pytest.param(TWIN, id="twin", marks=pytest.mark.backend_specific(TWIN)),
    pytest.param(TEXTBOOK, id="textbook_fix"),
]
OWN_WIDTHS = {"tf_while": (6,), TWIN: (6, 3), TEXTBOOK: (6,)}
"""Encoder widths that only the retrace test traces, by backend: the twin's predict, encode
and decode are ``tf_while``'s functions, so it has widths of its own."""
MODELS = {"output": frae.FRAEConfig(), "state": frae.FRAEConfig(feedback="state", state_dim=3)}
STREAMED = ("predict", "encode", "decode")


def _streamed_model(name: str, config: frae.FRAEConfig) -> frae.Backend:
    """``name`` holding weights N(0, 0.5), large enough that the state changes every output."""
    rng = np.random.default_rng(8)
    model = frae.create(name, config)
    model.set_weights(
        {k: rng.normal(0.0, 0.5, shape) for k, shape in config.parameter_shapes().items()}
    )
    return model


@pytest.mark.parametrize("name", STREAMING)
@pytest.mark.parametrize("model_kind", MODELS)
def test_a_new_state_value_does_not_retrace(name: str, model_kind: str) -> None:
    """The state is an argument of the ``tf.function``: calls from three states (zeros by
    ``None`` among them) at one shape trace predict, encode and decode once each, another
    instance traces nothing, and another chunk length traces once more."""
    config = dataclasses.replace(MODELS[model_kind], encoder_units=OWN_WIDTHS[name])
    x = frae.data.multi_sine(batch=3, steps=5, seed=9)
    model = _streamed_model(name, config)
    jit_compile = model.jit_compile  # type: ignore[attr-defined]
    zeros = model.initial_state(3)
    states = [None, zeros + 0.5, np.random.default_rng(10).normal(size=zeros.shape)]
    before = _tracing_counts(jit_compile, name)
    for state in states:
        model.predict(x, state=state)
        model.decode(model.encode(x, state=state), state=state)
    frae.create(name, config, seed=11).predict(x, state=states[2])
    after = _tracing_counts(jit_compile, name)
    traced = {op: after[op] - before[op] for op in after}
    assert traced == {op: int(op in STREAMED) for op in after}, traced
    outputs = [model.predict(x, state=state) for state in states]
    assert np.abs(outputs[1] - outputs[0]).max() > 1e-2  # the state reached the program
    model.predict(x[:, :4], state=states[1])
    assert _tracing_counts(jit_compile, name)["predict"] == after["predict"] + 1


@pytest.mark.parametrize("name", STREAMING)
@pytest.mark.parametrize("model_kind", MODELS)
def test_chunks_chained_through_the_state_equal_one_call(name: str, model_kind: str) -> None:
    """predict, encode and decode over chunks of 2 and 5 steps, each from the state the one
    before returned, give the reference's outputs and last state of one call over all 7;
    encode ends in the state decode does."""
    config = MODELS[model_kind]
    x = frae.data.multi_sine(batch=3, steps=7, seed=12)
    model, reference = _streamed_model(name, config), _streamed_model("reference", config)
    start = np.random.default_rng(13).normal(0.0, 0.5, reference.initial_state(3).shape)
    whole, whole_state = reference.predict(x, state=start, return_state=True)
    codes, codes_state = reference.encode(x, state=start, return_state=True)

    def chained(call: Callable[..., Any], sequences: np.ndarray) -> tuple[np.ndarray, Any]:
        head, state = call(sequences[:, :2], state=start, return_state=True)
        tail, state = call(sequences[:, 2:], state=state, return_state=True)
        return np.concatenate([head, tail], axis=1), state

    for call, sequences, expected in [
        (model.predict, x, (whole, whole_state)),
        (model.encode, x, (codes, codes_state)),
        (model.decode, codes.astype(np.float32), (whole, whole_state)),
    ]:
        outputs, state = chained(call, sequences)
        assert_close("outputs", outputs, expected[0], call.__name__)
        assert_close("outputs", state, expected[1], f"{call.__name__}'s state")
    assert np.abs(whole_state - start).max() > 1e-2  # the chunks carried a state that moves


XLA_RUN = """
import numpy as np, frae

model = frae.create("tf_while", frae.FRAEConfig(feedback="state", state_dim=3))
x = np.ones((3, 4, 2), np.float32)
for value in (0.5, -0.25, 2.0):
    model.predict(x, state=np.full((3, 3), value, np.float32))
model.predict(x)  # from zeros
model.predict(x[:, :3], state=np.ones((3, 3), np.float32))
"""


@pytest.mark.slow
def test_one_xla_compilation_per_chunk_length_whatever_the_state(tmp_path: Path) -> None:
    """XLA dumps each program it compiles: predict from four states (zeros among them) at
    4 steps and from one at 3 compiles two programs, one per chunk length."""
    flags = f"--xla_dump_to={tmp_path} --xla_dump_hlo_module_re=.*predict.*"
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}"}
    subprocess.run([sys.executable, "-c", XLA_RUN], env=env, timeout=600, check=True)
    programs = sorted(path.name for path in tmp_path.glob("*.before_optimizations.txt"))
    assert len(programs) == 2, programs


QUIET_RUN = """
import numpy as np, frae

for steps in range(3, 10):  # many shapes and instances: TensorFlow's retracing advice
    model = frae.create("tf_while")
    x = np.full((2, steps, 2), 0.5, np.float32)
    model.predict(x)
    model.fit(x, epochs=1)
print("ran")
"""


@pytest.mark.slow
def test_tensorflow_start_up_and_tracing_say_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-c", QUIET_RUN], capture_output=True, text=True, timeout=600, check=True
    )
    assert result.stdout == "ran\n"
    assert result.stderr == ""


STATE_FEEDBACK = frae.FRAEConfig(feedback="state", state_dim=5)


def _gradient_loops(loss: object = None, config: frae.FRAEConfig | None = None) -> str:
    """The optimized HLO of tf_while's ``loss_and_grads`` at T=37 (a length no weight has) and
    B=2, for ``config`` (by default the default model), with ``train.mean_squared_error``
    replaced by ``loss`` if given."""
    from impls.tf_while import model as tf_model
    from impls.tf_while import train as tf_train
    from impls.tf_while.model import tf

    config, steps = config or frae.FRAEConfig(), 37
    x = tf.constant(frae.data.multi_sine(batch=2, steps=steps))
    variables = tf_model.create_variables(config)

    def loss_and_grads(x: tf.Tensor) -> object:
        with tf.GradientTape() as tape:
            value = (loss or tf_train.mean_squared_error)(config, variables, x, x)
        return value, tape.gradient(value, variables)

    function = tf.function(loss_and_grads, jit_compile=True, autograph=False)
    return function.experimental_get_compiler_ir(x)(stage="optimized_hlo")


def _loss_through_the_outputs(config, variables, x, y):  # type: ignore[no-untyped-def]
    from impls.tf_while import model as tf_model
    from impls.tf_while.model import tf

    return tf.reduce_mean(tf.square(tf_model.unroll(config, variables, x)[0] - y))


def _t_long_copies_in_loops(hlo: str) -> list[str]:
    from bench.kernels import time_long_copies

    return time_long_copies(hlo, 37)


def test_the_gradient_loop_copies_no_time_long_array() -> None:
    """Summing the loss inside the loop keeps each backward step's cost independent of T.

    Differentiated through the stacked outputs instead, XLA copies the T-long gradient
    arrays of the outputs and codes at every backward iteration (a step then costs time
    proportional to T): the same check finds those copies there.
    """
    assert _t_long_copies_in_loops(_gradient_loops()) == []
    assert _t_long_copies_in_loops(_gradient_loops(_loss_through_the_outputs))
    assert _t_long_copies_in_loops(_gradient_loops(config=STATE_FEEDBACK)) == []


@pytest.mark.parametrize("config", [frae.FRAEConfig(), STATE_FEEDBACK], ids=["output", "state"])
def test_no_copy_of_a_kernel_is_saved_per_time_step(config: frae.FRAEConfig) -> None:
    """The weights are read outside the loop: no (T, in, out) stack of a kernel exists.

    Read inside the body, each read is a new tensor per iteration, which the gradient saves.
    """
    hlo = _gradient_loops(config=config)
    kernels = [shape for shape in config.parameter_shapes().values() if len(shape) == 2]
    saved = [shape for shape in kernels if f"f32[37,{shape[0]},{shape[1]}]" in hlo]
    assert saved == []


def _loss_by_hand(config, variables, x, y):  # type: ignore[no-untyped-def]
    from impls.tf_while import train as tf_train

    return tf_train.mean_squared_error_by_hand(config, variables, x, y)


_BODY_NAME = re.compile(r"^%?([\w.\-]+) \(", re.MULTILINE)


@pytest.mark.backend_specific(TWIN)
def test_the_tape_calls_the_hand_written_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    """``tf.GradientTape.gradient`` runs ``train.backward``: the backend's gradients equal the
    autodiff's, the compiled program holds the loop named ``hand_written_backward`` and none
    that TensorFlow's gradient of a loop builds, and a changed ``backward`` changes them."""
    from bench.kernels import loop_bodies
    from impls.tf_while import model as tf_model
    from impls.tf_while import train as tf_train
    from impls.tf_while.model import tf

    config = frae.FRAEConfig(encoder_units=(5, 4), decoder_units=(6,))
    x = frae.data.multi_sine(batch=3, steps=17, seed=4)
    y = x[:, ::-1] * 0.5
    by_hand = frae.create(TWIN, config, seed=5)
    loss, grads = by_hand.loss_and_grads(x, y)
    autodiff_loss, autodiff_grads = frae.create("tf_while", config, seed=5).loss_and_grads(x, y)
    assert loss == autodiff_loss  # the same float64 sum inside the forward loop
    for name, grad in autodiff_grads.items():
        assert_close("gradients", grads[name], grad)

    bodies = loop_bodies(_gradient_loops(_loss_by_hand))
    names = [_BODY_NAME.match(body).group(1) for body in bodies]  # type: ignore[union-attr]
    assert len(bodies) == 2, names  # the recorded forward and the reverse loop
    assert 'op_name="hand_written_backward/' in bodies[1], names
    assert not any("_grad" in name for name in names), names
    autodiff_names = [
        _BODY_NAME.match(body).group(1)  # type: ignore[union-attr]
        for body in loop_bodies(_gradient_loops())
    ]
    assert any("_grad" in name for name in autodiff_names), autodiff_names

    written = tf_train.backward
    monkeypatch.setattr(
        tf_train,
        "backward",
        lambda *args: {name: 2.0 * grad for name, grad in written(*args).items()},
    )
    variables = tf_model.create_variables(config)
    for name, value in by_hand.get_weights().items():
        variables[name].assign(value)
    doubled = tf.function(  # a new function: traced now, with the changed backward
        lambda x, y: tf_train.loss_and_grads(config, variables, x, y, loss=_loss_by_hand)[1],
        jit_compile=True,
        autograph=False,
    )(tf.constant(x), tf.constant(y))
    for name, grad in grads.items():
        np.testing.assert_allclose(doubled[name].numpy(), 2.0 * grad, rtol=1e-6, atol=1e-9)


def _changed_carries(body: str) -> list[str]:
    """Shapes of the loop-carried values that an iteration of ``body`` changes: the elements
    of its root tuple other than the parameter's own element passed through."""
    definitions = dict(re.findall(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*)$", body, re.MULTILINE))
    root = re.search(r"ROOT %[\w.\-]+ = \((.*?)\) tuple\(([^)]*)\)", body)
    assert root is not None, body[:500]
    shapes = re.findall(r"[a-z]+\d+\[[\d,]*\]", root.group(1))
    operands = re.findall(r"%([\w.\-]+)", root.group(2))
    assert len(shapes) == len(operands), root.group(0)[:500]
    return [
        shape
        for index, (shape, operand) in enumerate(zip(shapes, operands, strict=True))
        if not re.match(rf"\S+ get-tuple-element\(\S+\), index={index}\b", definitions[operand])
    ]


@pytest.mark.backend_specific(TWIN)
def test_the_reverse_loop_carries_only_the_feedback_gradient() -> None:
    """Each iteration of the hand-written program's loops changes only its counter, the
    (B, F) feedback (forward) or its gradient (backward), the loss's float64 sum, and the
    T-long arrays it writes one step of in place; no weight's gradient is accumulated in a
    loop and nothing T long is copied.

    TensorFlow's own gradient of the loop carries a running sum of every weight's gradient
    (f32[4,4] ...) from iteration to iteration: the same check finds those there.
    """
    from bench.kernels import loop_bodies

    batch, features, steps = 2, 2, 37  # as ``_gradient_loops`` runs them
    allowed = {"s32[]", "f64[]", f"f32[{batch},{features}]"}

    def unexpected(hlo: str) -> list[list[str]]:
        return [
            [shape for shape in _changed_carries(body) if not shape.startswith(f"f32[{steps},")]
            for body in loop_bodies(hlo)
        ]

    hlo = _gradient_loops(_loss_by_hand)
    assert all(set(shapes) <= allowed for shapes in unexpected(hlo)), unexpected(hlo)
    assert _t_long_copies_in_loops(hlo) == []
    weights = {f"f32[{rows},{cols}]" for rows, cols in [(4, 4), (4, 3), (3, 1), (3, 3), (3, 2)]}
    autodiff = unexpected(_gradient_loops())
    assert weights <= {shape for shapes in autodiff for shape in shapes}, autodiff


def _random_gru(seed: int) -> tuple[frae.config.GRU, dict[str, np.ndarray]]:
    """A GRU of L=3 inputs and H=5 units with canonical weights N(0, 0.5): every block and
    bias different, so a swapped gate changes the state."""
    gru = frae.FRAEConfig(latent_dim=3, feedback="state", state_dim=5).gru
    assert gru is not None
    rng = np.random.default_rng(seed)
    weights = {
        name: rng.normal(0.0, 0.5, size=shape).astype(np.float32)
        for name, shape in gru.parameter_shapes().items()
    }
    return gru, weights


def _swap_reset_and_update(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``weights`` with the reset and update column blocks exchanged (a mapping's likely slip)."""
    swapped = {}
    for name, array in weights.items():
        reset, update, candidate = np.split(array, 3, axis=-1)
        swapped[name] = np.concatenate([update, reset, candidate], axis=-1)
    return swapped


def _keras_states(
    gru: frae.config.GRU, canonical: dict[str, np.ndarray], codes: np.ndarray
) -> np.ndarray:
    """The states s_1..s_T of ``tf.keras.layers.GRUCell(reset_after=True)`` holding
    ``canonical`` through ``gru_layout.to_keras``, stepped from s_0 = 0 over ``codes`` (B, T, L)."""
    from impls.tf_while.model import tf

    cell = tf.keras.layers.GRUCell(gru.state_dim, reset_after=True)
    cell.build((None, gru.input_dim))
    cell.set_weights(gru_layout.to_keras(gru, canonical))
    state = np.zeros((codes.shape[0], gru.state_dim), np.float32)
    states = []
    for t in range(codes.shape[1]):
        state, _ = cell(codes[:, t], state)
        states.append(np.asarray(state))
    return np.stack(states, axis=1)


def _reference_states(
    gru: frae.config.GRU, canonical: dict[str, np.ndarray], codes: np.ndarray
) -> np.ndarray:
    """The float64 reference's ``gru_step`` over ``codes`` from s_0 = 0, states (B, T, H)."""
    from impls.reference.model import gru_step

    params = {name: array.astype(np.float64) for name, array in canonical.items()}
    state = np.zeros((codes.shape[0], gru.state_dim))
    states = []
    for t in range(codes.shape[1]):
        state, _ = gru_step(params, gru, codes[:, t].astype(np.float64), state)
        states.append(state)
    return np.stack(states, axis=1)


def test_keras_gru_cell_steps_the_canonical_gru_through_the_mapping() -> None:
    """Canonical GRU weights, loaded by ``gru_layout.to_keras`` into Keras' stock
    ``GRUCell``, step as the reference's ``gru_step`` does (B=4, T=6, L=3, H=5); with the
    reset and update blocks swapped the same comparison misses by far more than the
    tolerance, so the check would catch a mapping that swaps them; and the mapping's
    inverse recovers the weights."""
    gru, canonical = _random_gru(seed=6)
    codes = np.random.default_rng(7).normal(0.0, 1.0, size=(4, 6, 3)).astype(np.float32)
    expected = _reference_states(gru, canonical, codes)
    assert_close("outputs", _keras_states(gru, canonical, codes), expected)

    swapped = _keras_states(gru, _swap_reset_and_update(canonical), codes)
    assert np.abs(swapped - expected).max() > 1e-2  # 10⁴ times the tolerance's atol

    round_trip = gru_layout.from_keras(gru, gru_layout.to_keras(gru, canonical))
    assert round_trip.keys() == canonical.keys()
    for name, array in canonical.items():
        np.testing.assert_array_equal(round_trip[name], array, err_msg=name)
