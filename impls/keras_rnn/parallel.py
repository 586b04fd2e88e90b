"""Data parallelism on Keras' own engines: ``keras.distribution`` on JAX, a
``tf.distribute`` strategy on TensorFlow (``create(..., devices=N)``, contract section 3).

An engine tells the backend where to create variables (``creating``), how to run a model
(``predict``, ``gradients``) and how to take one training step on a mini-batch split over
its devices (``train_step``). Keras has no data-parallel engine for torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from frae.backend import Array, TrainStep, check_device_count
from impls.keras_rnn.model import keras


class DataParallel(Protocol):
    """What the backend asks of an engine; ``replica_by_replica``: whether its trainer must
    be ``train.ReplicaTrainer`` (each replica's gradients compiled on their own)."""

    replica_by_replica: bool

    def creating(self) -> contextlib.AbstractContextManager[Any]:
        """The scope in which variables, models and optimizers are made."""

    def predict(self, model: keras.Model, x: Array) -> Any:
        """``model.predict_on_batch(x)``, the whole batch's outputs, whatever the devices."""

    def gradients(self, function: Callable[[Any, Any], Any], x: Array, y: Array) -> Any:
        """``function(x, y)`` (``train.gradient_function``) on the engine's devices."""

    def train_step(self, trainer: keras.Model) -> TrainStep:
        """``trainer.train_on_batch`` on each mini-batch split evenly over the devices."""


def data_parallel(devices: int) -> DataParallel:
    """The engine of the Keras backend this process runs on, over ``devices`` devices."""
    name = keras.backend.backend()
    if name == "jax":
        return JaxDataParallel(devices)
    if name == "tensorflow":
        return TensorFlowDataParallel(devices)
    raise ValueError(
        f"keras_rnn on {name} has no data-parallel engine: devices must be None or 1, got {devices}"
    )


class JaxDataParallel:
    """``keras.distribution.DataParallel`` over the first ``devices`` of every process's JAX
    devices: variables replicated, each mini-batch sharded along its batch axis, and XLA
    turns the mean over the batch into an all-reduce of the devices' partial sums.

    The distribution is entered as a scope around each call rather than set for the
    process, so other models in the process keep their own placement.
    """

    replica_by_replica = False

    def __init__(self, devices: int) -> None:
        import jax

        present = keras.distribution.list_devices()
        check_device_count(devices, len(present), f"JAX ({jax.process_count()} process(es))")
        self.distribution = keras.distribution.DataParallel(devices=present[:devices])

    def creating(self) -> contextlib.AbstractContextManager[Any]:
        return self.distribution.scope()

    def predict(self, model: keras.Model, x: Array) -> Any:
        with self.distribution.scope():
            return model.predict_on_batch(x)

    def gradients(self, function: Callable[[Any, Any], Any], x: Array, y: Array) -> Any:
        with self.distribution.scope():
            return function(x, y)

    def train_step(self, trainer: keras.Model) -> TrainStep:
        def step(x: Array, y: Array) -> float:
            with self.distribution.scope():
                return float(trainer.train_on_batch([self.own_rows(x), self.own_rows(y)]))

        return step

    def own_rows(self, batch: Array) -> Array:
        """The rows of ``batch`` that this process's devices hold: Keras builds the global
        batch from each process's part (``jax.make_array_from_process_local_data``), and
        every process is handed the whole mini-batch. A lone process holds every row."""
        layout = self.distribution.get_data_layout(batch.shape).backend_layout
        rows = {
            index[0].indices(len(batch))[:2]
            for index in layout.addressable_devices_indices_map(batch.shape).values()
        }
        return np.concatenate([batch[start:stop] for start, stop in sorted(rows)])


class TensorFlowDataParallel:
    """A ``tf.distribute`` strategy: the one in scope when the backend is created (e.g. a
    ``MultiWorkerMirroredStrategy`` over several processes), which must have ``devices``
    replicas, else a ``MirroredStrategy`` over the first ``devices`` logical devices
    (GPUs if any, else CPUs). Keras' optimizer all-reduces the replicas' gradients.
    """

    replica_by_replica = True

    def __init__(self, devices: int) -> None:
        import tensorflow as tf

        if tf.distribute.has_strategy():
            strategy = tf.distribute.get_strategy()
            replicas = strategy.num_replicas_in_sync
            if devices != replicas:
                raise ValueError(
                    f"devices={devices}, but the tf.distribute strategy in scope "
                    f"({type(strategy).__name__}) has {replicas} replicas: devices must equal "
                    "its num_replicas_in_sync"
                )
        else:
            present = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
            check_device_count(devices, len(present), "TensorFlow")
            strategy = tf.distribute.MirroredStrategy([device.name for device in present[:devices]])
        self.strategy = strategy

    def creating(self) -> contextlib.AbstractContextManager[Any]:
        return self.strategy.scope()

    def predict(self, model: keras.Model, x: Array) -> Any:
        """Keras' TensorFlow predict runs each replica on its own part of a distributed
        input and concatenates the parts (a plain array would run whole on every replica):
        the first replica gets every row, the others none, so it is computed once."""
        return model.predict_on_batch(self.on_first_replica(x))

    def gradients(self, function: Callable[[Any, Any], Any], x: Array, y: Array) -> Any:
        return function(x, y)  # cross-replica: the variables read as their first copy

    def train_step(self, trainer: keras.Model) -> TrainStep:
        def step(x: Array, y: Array) -> float:
            loss = trainer.train_on_batch([self.split(x), self.split(y)])
            return float(np.asarray(loss).item())  # one element (``ReplicaTrainer``)

        return step

    def split(self, batch: Array) -> Any:
        """``batch`` in equal parts, replica i (numbered over every process) getting part i:
        Keras' ``train_on_batch`` would hand a plain array whole to every replica."""
        size = len(batch) // self.strategy.num_replicas_in_sync

        def part(context: Any) -> Array:
            start = context.replica_id_in_sync_group * size
            return batch[start : start + size]

        return self.strategy.experimental_distribute_values_from_function(part)

    def on_first_replica(self, batch: Array) -> Any:
        """``batch`` whole on the first replica, and none of it on the others."""
        return self.strategy.experimental_distribute_values_from_function(
            lambda context: batch if context.replica_id_in_sync_group == 0 else batch[:0]
        )
