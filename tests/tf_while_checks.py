"""What the tests of ``tf_while`` and of the benchmark's variants of it (its twin, the
textbook baseline) check alike, each check given the backend's name and the cache of the
``tf.function``s its instances share (``impls.tf_while.backend.compiled_functions`` or a
variant's); and the optimized HLO of a gradient through the tape."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

import frae

Functions = Callable[[bool], dict[str, Any]]
"""``jit_compile -> {operation: tf.function}``."""
MODELS = {"output": frae.FRAEConfig(), "state": frae.FRAEConfig(feedback="state", state_dim=3)}
STREAMED = ("predict", "encode", "decode")


def tracing_counts(functions: Functions, jit_compile: bool = True) -> dict[str, int]:
    return {
        name: function.experimental_get_tracing_count()
        for name, function in functions(jit_compile).items()
    }


def _exercise(model: frae.Backend, x: np.ndarray) -> None:
    model.predict(x)
    model.decode(model.encode(x))
    model.loss_and_grads(x)
    model.fit(x, epochs=2, optimizer="sgd", learning_rate=0.1)
    model.fit(x, epochs=2, optimizer="adam", learning_rate=0.2)


def one_trace_per_shape(name: str, functions: Functions, config: frae.FRAEConfig) -> None:
    """Each model has a config object of its own, equal to the others', and is gone before
    the next one is made (a sweep, the kit): TensorFlow would trace such a config anew."""
    x = frae.data.multi_sine(batch=2, steps=13, seed=1)
    before = tracing_counts(functions)
    _exercise(frae.create(name, dataclasses.replace(config)), x)
    first = tracing_counts(functions)
    traced = {"start_fit": 2}  # with Adam's slots and without (SGD)
    assert all(first[op] == before[op] + traced.get(op, 1) for op in first), first
    _exercise(frae.create(name, dataclasses.replace(config), seed=1), x)
    _exercise(frae.create(name, dataclasses.replace(config), seed=2), x * 0.5)
    assert tracing_counts(functions) == first, "same config and shapes traced again"
    _exercise(frae.create(name, dataclasses.replace(config)), x[:, :11])
    shape_free = {"start_fit": 0}  # optimizer state has the weights' shapes, not the input's
    after = tracing_counts(functions)
    assert all(after[op] == first[op] + shape_free.get(op, 1) for op in first), after


def a_new_state_value_does_not_retrace(
    name: str, functions: Functions, config: frae.FRAEConfig
) -> None:
    """Three states (zeros among them) at one shape trace each call once, another instance
    nothing, another chunk length once more; ``config``'s widths are this check's alone."""
    x = frae.data.multi_sine(batch=3, steps=5, seed=9)
    # weights N(0, 0.5), large enough that the state changes every output
    rng = np.random.default_rng(8)
    model = frae.create(name, config)
    model.set_weights({k: rng.normal(0.0, 0.5, s) for k, s in config.parameter_shapes().items()})
    jit_compile = model.jit_compile  # type: ignore[attr-defined]
    zeros = model.initial_state(3)
    states = [None, zeros + 0.5, np.random.default_rng(10).normal(size=zeros.shape)]
    before = tracing_counts(functions, jit_compile)
    for state in states:
        model.predict(x, state=state)
        model.decode(model.encode(x, state=state), state=state)
    frae.create(name, config, seed=11).predict(x, state=states[2])
    after = tracing_counts(functions, jit_compile)
    traced = {op: after[op] - before[op] for op in after}
    assert traced == {op: int(op in STREAMED) for op in after}, traced
    outputs = [model.predict(x, state=state) for state in states]
    assert np.abs(outputs[1] - outputs[0]).max() > 1e-2  # the state reached the program
    model.predict(x[:, :4], state=states[1])
    assert tracing_counts(functions, jit_compile)["predict"] == after["predict"] + 1


def gradient_loops(loss: object = None, config: frae.FRAEConfig | None = None) -> str:
    """The optimized HLO of tf_while's ``loss_and_grads`` at T=37 (a length no weight has) and
    B=2, for ``config`` (by default the default model), with ``train.distortion_and_rate``
    replaced by ``loss`` if given."""
    from impls.tf_while import model as tf_model
    from impls.tf_while import train as tf_train
    from impls.tf_while.model import tf

    config, steps = config or frae.FRAEConfig(), 37
    x = tf.constant(frae.data.multi_sine(batch=2, steps=steps))
    variables = tf_model.create_variables(config)

    def loss_and_grads(x: tf.Tensor) -> object:
        with tf.GradientTape() as tape:
            value = (loss or tf_train.distortion_and_rate)(config, variables, x, x)
        return value, tape.gradient(value, variables)

    function = tf.function(loss_and_grads, jit_compile=True, autograph=False)
    return function.experimental_get_compiler_ir(x)(stage="optimized_hlo")
