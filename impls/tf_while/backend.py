"""``TFWhileBackend``: the contract on ``tf.while_loop``, every call one XLA-compiled function."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from frae.backend import Array, BaseBackend, TrainStep, kept_slot
from frae.params import Weights, from_flat
from impls.tf_while import model, train
from impls.tf_while.model import tf


class _DropRetracingAdvice(logging.Filter):
    """Each backend instance traces its functions once per shape, so TensorFlow's advice
    about frequent retracing (counted over all instances) does not apply; other messages pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "triggered tf.function retracing" not in record.getMessage()


tf.get_logger().addFilter(_DropRetracingAdvice())


@functools.cache
def compiled_functions(jit_compile: bool) -> dict[str, Any]:
    """One ``tf.function`` per operation, shared by every instance.

    Weights and optimizer slots are arguments, not captured, so two instances with the same
    config and input shape share one trace and one XLA executable; the config is a static
    (hashable) argument.
    """
    compile_ = functools.partial(tf.function, jit_compile=jit_compile, autograph=False)
    return {
        "predict": compile_(lambda config, v, x: model.unroll(config, v, x)[0]),
        "encode": compile_(lambda config, v, x: model.unroll(config, v, x)[1]),
        "decode": compile_(lambda config, v, z: model.unroll(config, v, z, codes_given=True)[0]),
        **_training_functions(compile_, train.mean_squared_error),
        "start_fit": compile_(train.start_fit),
    }


def _training_functions(compile_: Any, loss: train.Loss) -> dict[str, Any]:
    """``loss_and_grads`` and the SGD and Adam steps, each taking ``loss``'s gradient from the
    tape; lambdas, because TensorFlow cannot call the concrete function of a function with
    keyword arguments (it takes them for inputs)."""
    return {
        "loss_and_grads": compile_(
            lambda config, v, x, y: train.loss_and_grads(config, v, x, y, loss=loss)
        ),
        "sgd": compile_(lambda config, v, x, y, lr: train.sgd_step(config, v, x, y, lr, loss=loss)),
        "adam": compile_(
            lambda config, v, s, x, y, lr: train.adam_step(config, v, s, x, y, lr, loss=loss)
        ),
    }


@functools.cache
def hand_written_functions(jit_compile: bool) -> dict[str, Any]:
    """``compiled_functions`` with every gradient through ``train.mean_squared_error_by_hand``
    (loss_and_grads and both optimizers' steps); predict, encode, decode and start_fit are
    the same functions, so their traces are shared with ``TFWhileBackend``."""
    compile_ = functools.partial(tf.function, jit_compile=jit_compile, autograph=False)
    return {
        **compiled_functions(jit_compile),
        **_training_functions(compile_, train.mean_squared_error_by_hand),
    }


class TFWhileBackend(BaseBackend):
    """``tf.while_loop`` + ``TensorArray`` under ``tf.function(jit_compile=True)``.

    Each operation is one ``tf.function`` traced once per config and input shape and
    compiled by XLA; a training step (forward, back-propagation through time, update) is
    one of them.
    """

    name = "tf_while"
    jit_compile = True

    def _build(self, weights: Weights) -> None:
        self.variables = model.create_variables(self.config)
        self._write_weights(weights)
        self.compiled = compiled_functions(self.jit_compile)
        self._concrete: dict[tuple[Any, ...], Any] = {}
        self.optimizer_slots = train.create_slots(self.variables)

    def _call(self, operation: str, *args: Any) -> Any:
        """``compiled_functions()[operation](config, variables, *args)``, through the concrete
        function of these argument shapes, looked up once per shape.

        Calling the ``tf.function`` matches every argument against its traces (the config,
        ten variables, the tensors) at each call, about 180 µs; the concrete function skips
        that, leaving TensorFlow's own launch of the XLA program (some 150 µs).
        """
        tensors = [
            tf.convert_to_tensor(arg) if isinstance(arg, np.ndarray) else arg for arg in args
        ]
        key = (operation, *(getattr(t, "shape", None) for t in tensors))
        concrete = self._concrete.get(key)
        if concrete is None:
            concrete = self.compiled[operation].get_concrete_function(
                self.config, self.variables, *tensors
            )
            self._concrete[key] = concrete
        return concrete(self.config, self.variables, *tensors)

    def _read_weights(self) -> Mapping[str, Any]:
        return {name: variable.numpy() for name, variable in self.variables.items()}

    def _write_weights(self, weights: Weights) -> None:
        for name, value in weights.items():
            self.variables[name].assign(value)

    def _predict(self, x: Array) -> Array:
        return self._call("predict", x).numpy()

    def _encode(self, x: Array) -> Array:
        return self._call("encode", x).numpy()

    def _decode(self, z: Array) -> Array:
        return self._call("decode", z).numpy()

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = self._call("loss_and_grads", x, y)
        return float(loss), {name: grad.numpy() for name, grad in grads.items()}

    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        lr = tf.constant(learning_rate, tf.float32)  # a tensor: a new rate does not retrace
        slots = (self.optimizer_slots,) if optimizer == "adam" else ()
        self._after_step = self.compiled["start_fit"](self.variables, *slots).numpy()

        def step(x: Array, y: Array) -> float:
            loss, after = self._call(optimizer, *slots, x, y, lr)
            self._after_step = after.numpy()
            return float(loss)

        return step

    def _keep_weights(self, step: int) -> None:
        """The weights the last step returned (or those at the start): one flat vector."""
        self._kept[kept_slot(step)] = self._after_step  # type: ignore[assignment]

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        return from_flat(self.config, self._kept[kept_slot(step)])

    def _weights_finite(self) -> bool:
        return bool(np.isfinite(self._after_step).all())


class TFWhileBPTTBackend(TFWhileBackend):
    """``TFWhileBackend`` with its backward pass written by hand (``train.backward``): the
    tape's gradient, in ``loss_and_grads`` and in the SGD and Adam steps, goes through
    ``tf.custom_gradient``: one reverse ``tf.while_loop`` carrying only the feedback's
    gradient, each weight's gradient one product over all steps after it."""

    name = "tf_while_bptt"

    def _build(self, weights: Weights) -> None:
        super()._build(weights)
        self.compiled = hand_written_functions(self.jit_compile)
