"""``TFWhileBackend``: the contract on ``tf.while_loop``, every call one XLA-compiled function;
with ``devices=N``, data-parallel training through ``tf.distribute``."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from frae.backend import Array, BaseBackend, Moments, TrainStep, kept_slot
from frae.config import FRAEConfig
from frae.devices import tensorflow_strategy
from frae.export import made_where_installed
from frae.params import Weights, from_flat
from frae.routes import Setting
from frae.training_state import TrainingState, is_fresh
from impls.tf_while import export, model, train
from impls.tf_while.model import tf

# TensorFlow's retracing advice, dropped: each instance traces once per shape
tf.get_logger().addFilter(
    lambda record: "triggered tf.function retracing" not in record.getMessage()
)


Streamed = tuple[tf.Tensor, tf.Tensor]
"""A call's outputs and the feedback after its last step."""


def streamed(name: str, kept: int, codes_given: bool) -> Callable[..., Streamed]:
    """The function ``name``: ``model.unroll`` of x (or of the codes z) from the feedback
    ``state`` ``(B, S)``, an input of the traced program; its output ``kept`` (0: x̂, 1: z)
    and x̂_T (or s_T)."""

    def run(
        config: FRAEConfig, variables: model.Variables, sequences: tf.Tensor, state: tf.Tensor
    ) -> Streamed:
        results = model.unroll(config, variables, sequences, codes_given=codes_given, state=state)
        return results[kept], results[2]

    run.__name__ = name  # XLA names its program after the function (its dumps, the tests')
    return run


_TRACED_CONFIGS: dict[FRAEConfig, FRAEConfig] = {}


def traced_config(config: FRAEConfig) -> FRAEConfig:
    """The one object of ``config``'s value that the shared functions are called with:
    TensorFlow traces a config by a weak reference to the object, so an equal config in
    another object would trace and compile anew."""
    return _TRACED_CONFIGS.setdefault(config, config)


@functools.cache
def compiled_functions(jit_compile: bool) -> dict[str, Any]:
    """One ``tf.function`` per operation, shared by every instance: weights, slots and
    state are arguments, the config static, and each (B, T) its own trace (XLA needs the
    static trip count T)."""
    compile_ = functools.partial(tf.function, jit_compile=jit_compile, autograph=False)
    return {
        **{name: compile_(streamed(name, *spec)) for name, spec in export.FUNCTIONS.items()},
        **training_functions(compile_, train.distortion_and_rate),
        "start_fit": compile_(lambda config, v, *slots: train.start_fit(v, *slots)),
    }


def training_functions(compile_: Any, loss: train.Loss) -> dict[str, Any]:
    """``loss_and_grads`` and the SGD and Adam steps of ``loss``; lambdas, because TensorFlow
    takes keyword arguments for inputs."""
    return {
        "loss_and_grads": compile_(
            lambda config, v, x, y: train.loss_and_grads(config, v, x, y, loss=loss)
        ),
        "sgd": compile_(
            lambda config, v, x, y, lr: train.train_step(config, v, None, x, y, lr, loss=loss)
        ),
        "adam": compile_(
            lambda config, v, s, x, y, lr: train.train_step(config, v, s, x, y, lr, loss=loss)
        ),
    }


class TFWhileBackend(BaseBackend):
    """``tf.while_loop`` + ``TensorArray`` under ``tf.function(jit_compile=True)``, each
    operation (a training step included) one XLA program per config and input shape.

    With ``devices=N`` the variables are mirrored by a ``tf.distribute`` strategy; the
    all-reduce and the update run as TensorFlow ops around each replica's XLA gradient
    (TensorFlow's XLA has no collectives on CPUs).
    """

    name = "tf_while"
    jit_compile = True
    routes: tuple[Setting, ...] = (model.LOOP_FOLDING,)
    export_formats, export_refusals = made_where_installed(
        {"saved_model": (), "litert": ("ai_edge_litert",), "onnx": ("tf2onnx", "onnxruntime")}
    )
    strategy: tf.distribute.Strategy | None = None
    first_copy: model.Variables
    """Each variable's first local copy where mirrored: TensorFlow traces a mirrored
    variable by its shape alone, and would run another model's call on these."""
    first_slots: train.Slots

    def _place(self, devices: int) -> None:
        self.strategy = tensorflow_strategy(devices)

    def _build(self, weights: Weights) -> None:
        scope = contextlib.nullcontext() if self.strategy is None else self.strategy.scope()
        with scope:  # mirrored under this model's strategy, or one that create runs under
            self.variables = model.create_variables(self.config)
            self.optimizer_slots = train.create_slots(self.variables)
            first = tf.distribute.get_strategy().experimental_local_results
            self.first_copy, self.first_slots = tf.nest.map_structure(
                lambda variable: first(variable)[0], (self.variables, self.optimizer_slots)
            )
        self._write_weights(weights)
        self.compiled = compiled_functions(self.jit_compile)
        self.traced_config = traced_config(self.config)
        self._concrete: dict[tuple[Any, ...], Any] = {}
        # the flat inputs a concrete function takes for the variables: their handles
        self._handles = [variable.handle for variable in tf.nest.flatten(self.first_copy)]
        self._replicated_steps: dict[str, Callable[..., tuple[tf.Tensor, tf.Tensor]]] = {}

    def _call(self, operation: str, *args: Any) -> Any:
        """``compiled_functions()[operation](config, variables, *args)``, through the concrete
        function of these shapes called with its flat inputs: matching structured arguments
        costs more than the program on one frame (docs/performance.md).
        """
        tensors = [
            tf.convert_to_tensor(arg) if isinstance(arg, np.ndarray) else arg for arg in args
        ]
        key = (operation, *(getattr(t, "shape", None) for t in tensors))
        if key not in self._concrete:
            self._concrete[key] = self.compiled[operation].get_concrete_function(
                self.traced_config, self.first_copy, *tensors
            )
        concrete = self._concrete[key]
        inputs = [
            leaf.handle if isinstance(leaf, tf.Variable) else leaf
            for leaf in tf.nest.flatten(tensors)
        ]
        return concrete._call_flat([*self._handles, *inputs], concrete.captured_inputs)

    def _read_weights(self) -> Mapping[str, Any]:
        return {name: variable.numpy() for name, variable in self.variables.items()}

    def _write_weights(self, weights: Weights) -> None:
        for name, value in weights.items():
            self.variables[name].assign(value)

    def _stream(self, operation: str, sequences: Array, state: Array) -> tuple[Array, Array]:
        outputs, last = self._call(operation, sequences, state)
        return outputs.numpy(), last.numpy()

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        return self._stream("predict", x, state)

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        return self._stream("encode", x, state)

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        return self._stream("decode", z, state)

    def _export(self, format: str, folder: Path) -> str:
        return export.WRITERS[format](self.config, self._read_weights(), folder)

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = self._call("loss_and_grads", x, y)
        return float(loss), {name: grad.numpy() for name, grad in grads.items()}

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        def moments() -> tuple[Weights, Weights]:
            return train.slot_moments(self.first_slots) if optimizer == "adam" else ({}, {})

        lr = tf.constant(learning_rate, tf.float32)  # a tensor: a new rate does not retrace
        run: Callable[[Array, Array, tf.Tensor], tuple[tf.Tensor, tf.Tensor]]
        if self.strategy is None:
            slots = (self.first_slots,) if optimizer == "adam" else ()
            self._after_step = self._call("start_fit", *slots).numpy()
            if slots and not is_fresh(start):  # start_fit's zeros are a fresh state already
                train.resume_slots(self.first_slots, start)
            run = functools.partial(self._call, optimizer, *slots)
        else:
            run = self._data_parallel_run(optimizer, start)

        def step(x: Array, y: Array) -> float:
            loss, after = run(x, y, lr)
            self._after_step = after.numpy()
            return float(loss)

        return step, moments

    def _data_parallel_run(
        self, optimizer: str, start: TrainingState
    ) -> Callable[[Array, Array, tf.Tensor], tuple[tf.Tensor, tf.Tensor]]:
        """``(x, y, lr) -> (loss, weights after)`` over the strategy's replicas: the mean of
        their losses, and the first replica's weights kept for a rollback."""
        slots = (self.optimizer_slots,) if optimizer == "adam" else ()
        # eagerly, as a shared tf.function would not tell this model's variables from
        # another's (see first_copy); outside a replica, an assignment updates every copy
        self._after_step = train.start_fit(self.variables, *slots).numpy()
        if slots:
            train.resume_slots(self.optimizer_slots, start)
        replicated = self._replicated_steps.get(optimizer) or self._replicate(optimizer)
        return lambda x, y, lr: replicated(self._slices(x), self._slices(y), lr)

    def _replicate(self, optimizer: str) -> Callable[..., tuple[tf.Tensor, tf.Tensor]]:
        """This model's data-parallel step with ``optimizer``, one ``tf.function``."""
        strategy = self.strategy
        assert strategy is not None
        if optimizer == "adam":
            update = functools.partial(train.adam_update, self.variables, self.optimizer_slots)
        else:
            update = functools.partial(train.sgd_update, self.variables)

        def replica_step(x: tf.Tensor, y: tf.Tensor, lr: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            # this replica's copy, read as tensors: the shared XLA function traces tensors by
            # shape, where it would capture mirrored variables of the first model it saw
            weights = {name: tf.convert_to_tensor(v) for name, v in self.variables.items()}
            loss, grads = self.compiled["loss_and_grads"](self.traced_config, weights, x, y)
            context = tf.distribute.get_replica_context()
            loss, grads = context.all_reduce(tf.distribute.ReduceOp.MEAN, (loss, grads))
            # mirrored variables without aggregation: each replica updates its own copy, all
            # with the same averaged gradients
            update(grads, lr)
            return loss, train.flat_weights(self.variables)

        @tf.function(autograph=False)
        def run_replicas(x: Any, y: Any, lr: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            loss, after = strategy.run(replica_step, args=(x, y, lr))
            first = strategy.experimental_local_results
            return first(loss)[0], first(after)[0]

        self._replicated_steps[optimizer] = run_replicas
        return run_replicas

    def _slices(self, sequences: Array) -> Any:
        """Each of this process's replicas' equal slice of ``sequences``, on its device."""
        assert self.strategy is not None
        size = len(sequences) // self.strategy.num_replicas_in_sync
        local_devices = self.strategy.extended.worker_devices

        def slice_of(context: tf.distribute.experimental.ValueContext) -> tf.Tensor:
            start = context.replica_id_in_sync_group * size
            with tf.device(local_devices[context.replica_id_in_sync_group % len(local_devices)]):
                return tf.constant(sequences[start : start + size])

        return self.strategy.experimental_distribute_values_from_function(slice_of)

    def _keep_weights(self, step: int) -> None:
        """The weights the last step returned (or those at the start): one flat vector."""
        self._kept[kept_slot(step)] = self._after_step

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        return from_flat(self.config, np.asarray(self._kept[kept_slot(step)]))

    def _weights_finite(self) -> bool:
        return bool(np.isfinite(self._after_step).all())
