"""``KerasRNNBackend``: the contract on a Keras 3 model, on any Keras backend."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from frae.backend import Array, BaseBackend, TrainStep, kept_slot
from frae.params import Weights
from impls.keras_rnn import built
from impls.keras_rnn.model import canonical_name, keras, ops, to_numpy
from impls.keras_rnn.train import DataParallel, compile_trainer, data_parallel


class KerasRNNBackend(BaseBackend):
    """``keras.layers.RNN(FRAECell)`` in a functional ``keras.Model``, compiled with XLA.

    ``keras_model`` is the autoencoder itself, ``[x, state] -> [x̂, feedback]`` (the
    feedback entering the first step and the one after the last): it saves to and loads
    from ``.keras``.
    ``predict``/``encode``/``decode`` run Keras' compiled predict function
    (``predict_on_batch``) and a training step is ``train_on_batch``: Keras' own compiled
    train step, so ``fit`` reports the loss of each step, not Keras' running mean. With
    ``devices=N`` the same calls run on Keras' own data-parallel engine (``engine``).
    """

    name = "keras_rnn"
    # On torch, Keras runs the RNN as a Python loop and jit_compile hands it to torch.compile,
    # which unrolls every step: slow to compile, and no faster per step than eager.
    jit_compile: bool | str = keras.backend.backend() != "torch"
    engine: DataParallel | None = None
    """With ``devices=N``: Keras' data-parallel engine on the Keras backend
    (``train.data_parallel``); ``None`` leaves every call as it is on one device."""

    def _place(self, devices: int) -> None:
        self.engine = data_parallel(devices)

    def _creating(self) -> contextlib.AbstractContextManager[Any]:
        """The scope for making variables and optimizers: the engine's, which places them
        on its devices."""
        return contextlib.nullcontext() if self.engine is None else self.engine.creating()

    def _build(self, weights: Weights) -> None:
        """The models of the config: those a dropped backend of an equal config built, with
        their compiled functions (``built``), or new ones."""
        key = (self.config, self.jit_compile)
        reused = None if self.engine is not None else built.take(key)
        if reused is None:
            with self._creating():
                reused = built.build(self.config, self.jit_compile)
        if self.engine is None:
            built.reuse_when_gone(self, key, reused)
        self._built = reused
        self._write_weights(weights)

    @property
    def keras_model(self) -> keras.Model:
        """The autoencoder ``[x, state] -> [x̂, feedback]``, the model a user saves; once
        given out, never reused by another backend (``built``)."""
        self._built.handed_out = True
        return self._built.keras_model

    @property
    def metadata(self) -> dict[str, str]:
        return {"keras_backend": keras.backend.backend(), "keras": keras.__version__}

    def _read_weights(self) -> Mapping[str, Any]:
        return {name: to_numpy(v.value) for name, v in self._built.variables.items()}

    def _write_weights(self, weights: Weights) -> None:
        for name, value in weights.items():
            self._built.variables[name].assign(value)

    def _predict(self, x: Array, state: Array) -> tuple[Any, Any]:
        return self._predict_with(self._built.keras_model, x, state)

    def _encode(self, x: Array, state: Array) -> tuple[Any, Any]:
        return self._predict_with(self._built.encoder, x, state)

    def _decode(self, z: Array, state: Array) -> tuple[Any, Any]:
        return self._predict_with(self._built.decoder, z, state)

    def _predict_with(self, model: keras.Model, sequences: Array, state: Array) -> tuple[Any, Any]:
        """``model``'s outputs and last feedback: the state is the compiled predict
        function's input, as the sequences are, so a new value reuses its program."""
        inputs = [sequences, state]
        if self.engine is None:
            outputs, last = model.predict_on_batch(inputs)
        else:
            outputs, last = self.engine.predict(model, inputs)
        return outputs, last

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        if self.engine is None:
            loss, grads = self._built.gradients(x, y)
        else:
            loss, grads = self.engine.gradients(self._built.gradients, x, y)
        names = [canonical_name(v) for v in self._built.squared_error_model.trainable_variables]
        return float(loss), {n: ops.convert_to_numpy(g) for n, g in zip(names, grads, strict=True)}

    def trainer(self, optimizer: str, learning_rate: float) -> keras.Model:
        """``keras_model`` compiled for training with ``optimizer`` at ``learning_rate``, its
        optimizer state zeroed (fresh at each ``fit``); compiled once per optimizer kind."""
        if optimizer not in self._built.trainers:
            replica_by_replica = self.engine is not None and self.engine.replica_by_replica
            with self._creating():  # the optimizer's variables too, hence built here
                trainer = compile_trainer(
                    self.config,
                    self._built.cell,
                    optimizer,
                    self.jit_compile,
                    replica_by_replica=replica_by_replica,
                )
                trainer.optimizer.build(trainer.trainable_variables)
            self._built.trainers[optimizer] = trainer
        trainer = self._built.trainers[optimizer]
        for variable in trainer.optimizer.variables:
            variable.assign(ops.zeros(variable.shape, variable.dtype))
        trainer.optimizer.learning_rate = learning_rate
        self._training = trainer
        return trainer

    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        trainer = self.trainer(optimizer, learning_rate)
        if self.engine is not None:
            return self.engine.train_step(trainer)
        return lambda x, y: float(trainer.train_on_batch([x, y]))

    def _keep_weights(self, step: int) -> None:
        """W₁ into row 0 of the optimizer's ``kept``; the optimizer keeps the others."""
        if step == 1:
            optimizer = self._training.optimizer
            kept = np.zeros(optimizer.kept.shape, np.float32)
            kept[0] = np.concatenate([to_numpy(v.value).ravel() for v in self._ordered()])
            optimizer.kept.assign(kept)

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        row = to_numpy(self._training.optimizer.kept.value)[kept_slot(step)]
        sizes = [math.prod(v.shape) for v in self._ordered()]
        pieces = np.split(row, np.cumsum(sizes)[:-1])
        return {
            canonical_name(v): piece.reshape(v.shape)
            for v, piece in zip(self._ordered(), pieces, strict=True)
        }

    def _ordered(self) -> list[Any]:
        """The trained variables in the order the optimizer was built on (its rows' order)."""
        optimizer = self._training.optimizer
        variables = self._training.trainable_variables
        return sorted(variables, key=optimizer._get_variable_index)

    def _weights_finite(self) -> bool:
        return float(to_numpy(self._training.optimizer.non_finite.value)) == 0
