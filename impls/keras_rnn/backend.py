"""``KerasRNNBackend``: the contract on a Keras 3 model, on any Keras backend, and the reuse of
a dropped backend's models by the next backend of its config.

Keras compiles a model's functions for that model object alone, so the models of a dropped
backend wait here (``LIMIT`` of them) for a new backend of an equal config, which writes its
own weights into them and zeroes their optimizers. Models handed to a caller
(``keras_model``) and those of a data-parallel engine are never reused.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from frae.backend import Array, BaseBackend, Moments, TrainStep, kept_slot, serialised
from frae.config import FRAEConfig
from frae.params import Weights
from frae.routes import Setting
from frae.training_state import TrainingState, is_fresh
from impls.keras_rnn import export, optimizers
from impls.keras_rnn.model import (
    JAX_COMPILER_OPTIONS,
    JAX_ROUTES,
    LOOP_FOLDING,
    build_models,
    canonical_name,
    keras,
    ops,
    to_numpy,
)
from impls.keras_rnn.train import (
    CARRIED_STEPS,
    RECOMPUTED,
    CarriedSteps,
    DataParallel,
    Gradients,
    compile_trainer,
    data_parallel,
    gradient_function,
    squared_error_model,
)


class KerasRNNBackend(BaseBackend):
    """``keras.layers.RNN(FRAECell)`` in a functional ``keras.Model``, compiled with XLA.

    ``keras_model`` is the autoencoder ``[x, state] -> [x̂, feedback]``, saved as ``.keras``.
    Inference runs in the Keras backend's compiled function (``inference_function``), a
    training step is Keras' own compiled train step, and with ``devices=N`` both run on
    Keras' data-parallel engine (``engine``).
    """

    name = "keras_rnn"
    export_formats = export.MADE[keras.backend.backend()]
    export_refusals = export.REFUSALS[keras.backend.backend()]
    # On torch, Keras runs the RNN as a Python loop and jit_compile hands it to torch.compile,
    # which unrolls every step: slow to compile, and no faster per step than eager.
    jit_compile: bool | str = keras.backend.backend() != "torch"
    routes: tuple[Setting, ...] = {
        "tensorflow": () if LOOP_FOLDING is None else (LOOP_FOLDING,),
        "jax": (CARRIED_STEPS, RECOMPUTED, *JAX_ROUTES),
    }.get(keras.backend.backend(), ())
    engine: DataParallel | None = None
    """With ``devices=N``: Keras' data-parallel engine (``train.data_parallel``)."""
    _carried: CarriedSteps | None = None
    """The steps of the ``fit`` under way on JAX, whose state is not yet in the variables."""

    def _place(self, devices: int) -> None:
        self.engine = data_parallel(devices)

    def _creating(self) -> contextlib.AbstractContextManager[Any]:
        """The scope for making variables and optimizers: the engine's devices."""
        return contextlib.nullcontext() if self.engine is None else self.engine.creating()

    def _build(self, weights: Weights) -> None:
        key = (self.config, self.jit_compile)
        reused = None if self.engine is not None else take_built(key)
        if reused is None:
            with self._creating():
                reused = build(self.config, self.jit_compile)
        if self.engine is None:  # kept for the next backend of ``key`` once this one is gone
            weakref.finalize(self, _keep, key, reused).atexit = False
        self._built = reused
        self._write_weights(weights)

    @property
    def keras_model(self) -> keras.Model:
        """The autoencoder ``[x, state] -> [x̂, feedback]``; once given out, never reused."""
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

    def _export(self, format: str, folder: Path) -> str:
        built = self._built
        models = {"predict": built.keras_model, "encode": built.encoder, "decode": built.decoder}
        return export.WRITERS[format](self.config, models, folder)

    def _predict_with(self, model: keras.Model, sequences: Array, state: Array) -> tuple[Any, Any]:
        if self.engine is None:
            outputs, last = self._built.inference(model, self.jit_compile)(sequences, state)
        else:
            outputs, last = self.engine.predict(model, [sequences, state])
        return outputs, last

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        if self.engine is None:
            loss, grads = self._built.gradients(x, y)
        else:
            loss, grads = self.engine.gradients(self._built.gradients, x, y)
        names = [canonical_name(v) for v in self._built.squared_error_model.trainable_variables]
        return float(loss), {n: ops.convert_to_numpy(g) for n, g in zip(names, grads, strict=True)}

    def trainer(self, optimizer: str, learning_rate: float) -> keras.Model:
        """The trainer of ``optimizer`` at ``learning_rate``, its optimizer state zeroed;
        compiled once per optimizer kind."""
        if optimizer not in self._built.trainers:
            with self._creating():  # the optimizer's variables too, hence built here
                trainer = compile_trainer(
                    self.config,
                    self._built.cell,
                    optimizer,
                    self.jit_compile,
                    replica_by_replica=self.engine is not None and self.engine.replica_by_replica,
                )
                trainer.optimizer.build(trainer.trainable_variables)
            self._built.trainers[optimizer] = trainer
        trainer = self._built.trainers[optimizer]
        trainer.optimizer.zero()
        trainer.optimizer.learning_rate = learning_rate
        self._training = trainer
        return trainer

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        trainer = self.trainer(optimizer, learning_rate)
        if not is_fresh(start):  # trainer() zeroed every optimizer variable: a fresh state
            with self._creating():
                optimizers.resume(trainer.optimizer, start)
        moments = functools.partial(optimizers.moments, trainer.optimizer)
        if self.engine is not None:
            return self.engine.train_step(trainer), moments
        if keras.backend.backend() == "jax" and self.jit_compile is True and CARRIED_STEPS.value:
            self._carried = CarriedSteps(trainer)

            def synced_moments() -> tuple[Weights, Weights]:
                self._sync()  # the state the fit carries, into the variables first
                return moments()

            return self._carried, synced_moments
        return lambda x, y: float(trainer.train_on_batch([x, y])), moments

    def _sync(self) -> None:
        if self._carried is not None:
            self._carried.sync()
            self._carried = None

    @serialised
    def fit(self, x: Array, y: Array | None = None, **options: Any) -> dict[str, Any]:
        """``BaseBackend.fit``, the state its steps carry on JAX written back however it ends."""
        try:
            return super().fit(x, y, **options)
        finally:
            self._sync()

    def _keep_weights(self, step: int) -> None:
        """W₁ into row 0 of the optimizer's ``kept``; the optimizer keeps the others."""
        if step == 1:
            optimizer = self._training.optimizer
            kept = np.zeros(optimizer.kept.shape, np.float32)
            kept[0] = np.concatenate([to_numpy(v.value).ravel() for v in self._ordered()])
            optimizer.kept.assign(kept)

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        self._sync()
        row = to_numpy(self._training.optimizer.kept.value)[kept_slot(step)]
        sizes = [math.prod(v.shape) for v in self._ordered()]
        pieces = np.split(row, np.cumsum(sizes)[:-1])
        return {
            canonical_name(v): piece.reshape(v.shape)
            for v, piece in zip(self._ordered(), pieces, strict=True)
        }

    def _ordered(self) -> list[Any]:
        """The trained variables in the order the optimizer was built on (its rows' order)."""
        training = self._training
        return sorted(training.trainable_variables, key=training.optimizer._get_variable_index)

    def _weights_finite(self) -> bool:
        self._sync()
        return float(to_numpy(self._training.optimizer.non_finite.value)) == 0


LIMIT = 8
"""Built models kept for reuse, at most, over every config."""


@dataclass
class Built:
    """The Keras models of one config and the functions and trainers compiled over them."""

    keras_model: keras.Model
    encoder: keras.Model
    decoder: keras.Model
    cell: Any
    squared_error_model: keras.Model
    variables: dict[str, keras.Variable]
    gradients: Gradients
    trainers: dict[str, keras.Model] = field(default_factory=dict)
    handed_out: bool = False
    """Whether ``keras_model`` was given to a caller, who may still hold it."""
    inferences: dict[str, Inference] = field(default_factory=dict)

    def inference(self, model: keras.Model, jit_compile: bool | str) -> Inference:
        """``model``'s compiled call, made at its first use."""
        if model.name not in self.inferences:
            self.inferences[model.name] = inference_function(model, jit_compile)
        return self.inferences[model.name]


Key = tuple[FRAEConfig, bool | str]
"""A config and the ``jit_compile`` its models were compiled with."""
_idle: OrderedDict[int, tuple[Key, Built]] = OrderedDict()
_lock = threading.Lock()


def build(config: FRAEConfig, jit_compile: bool | str) -> Built:
    """The models of ``config``, their variables zeros, compiled with ``jit_compile``."""
    keras_model, encoder, decoder = build_models(config)
    cell = keras_model.get_layer("frae_rnn").cell
    error_model = squared_error_model(config, cell)
    if jit_compile != "auto":  # predicting needs no compile(), nor an optimizer
        for model in (keras_model, encoder, decoder):
            model.jit_compile = jit_compile
    return Built(
        keras_model,
        encoder,
        decoder,
        cell,
        error_model,
        {canonical_name(v): v for v in keras_model.weights},
        gradient_function(error_model, jit_compile is not False),
    )


def take_built(key: Key) -> Built | None:
    """The models a dropped backend built for ``key``, if any wait."""
    with _lock:
        for handle, (kept_for, built) in _idle.items():
            if kept_for == key:
                del _idle[handle]
                return built
    return None


def _keep(key: Key, built: Built) -> None:
    if built.handed_out:
        return
    with _lock:
        _idle[id(built)] = (key, built)
        while len(_idle) > LIMIT:
            _idle.popitem(last=False)


def forget_built() -> None:
    """Drop every model kept for reuse."""
    with _lock:
        _idle.clear()


Inference = Callable[[Any, Any], Sequence[Any]]
"""``(sequences, state) -> (outputs, feedback after the last step)``, framework arrays."""


def inference_function(model: keras.Model, jit_compile: bool | str) -> Inference:
    """``model``'s call ``[sequences, state] -> [outputs, last feedback]``, compiled on JAX
    and TensorFlow where ``jit_compile`` is ``True``; ``predict_on_batch`` otherwise.

    ``predict_on_batch``'s data handling costs several times the program on one frame
    (docs/performance.md), so the model is called as Keras' own trainers call it.
    """
    name = keras.backend.backend()
    if jit_compile is not True or name not in ("jax", "tensorflow"):
        return lambda sequences, state: model.predict_on_batch([sequences, state])
    if name == "jax":
        return _jax_inference(model)
    return _tensorflow_inference(model)


def _jax_inference(model: keras.Model) -> Inference:
    import jax

    @functools.partial(jax.jit, compiler_options=JAX_COMPILER_OPTIONS)
    def call(trainable: list[Any], non_trainable: list[Any], sequences: Any, state: Any) -> Any:
        outputs, _ = model.stateless_call(trainable, non_trainable, [sequences, state])
        return outputs

    # the variables of a built model are fixed objects; listing them walks every layer
    trainable_variables = model.trainable_variables
    non_trainable_variables = model.non_trainable_variables

    def jax_inference(sequences: Any, state: Any) -> Sequence[Any]:
        trainable = [v.value for v in trainable_variables]
        non_trainable = [v.value for v in non_trainable_variables]
        return call(trainable, non_trainable, sequences, state)

    return jax_inference


def _tensorflow_inference(model: keras.Model) -> Inference:
    import tensorflow as tf

    @tf.function(jit_compile=True, autograph=False)
    def call(sequences: Any, state: Any) -> Any:
        return model([sequences, state], training=False)

    concrete: dict[tuple[Any, ...], Any] = {}

    def tensorflow_inference(sequences: Any, state: Any) -> Sequence[Any]:
        tensors = (tf.constant(sequences), tf.constant(state))
        key = (sequences.shape, state.shape)
        if key not in concrete:
            concrete[key] = call.get_concrete_function(*tensors)
        function = concrete[key]
        # its flat inputs, as tf_while's stream calls its own: matching structured arguments
        # to the signature costs more than the program on one frame (docs/performance.md)
        return function._call_flat(list(tensors), function.captured_inputs)

    return tensorflow_inference
