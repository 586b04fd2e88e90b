"""``KerasRNNBackend``: the contract on a Keras 3 model, on any Keras backend."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from frae.backend import Array, BaseBackend, TrainStep
from frae.params import Weights
from impls.keras_rnn.model import PACKAGE, build_models, canonical_name, keras, ops

Gradients = Callable[[Array, Array], tuple[Any, list[Any]]]


@keras.saving.register_keras_serializable(package=PACKAGE)
class SpecAdam(keras.optimizers.Adam):
    """Keras' Adam with ε where SPEC puts it: w ← w − lr·m̂/(√v̂ + ε).

    ``keras.optimizers.Adam`` folds the bias corrections into the step size, which moves ε
    inside: m̂/(√v̂ + ε/√(1 - β₂ᵗ)). Only the update differs; state and schedule are Keras'.
    """

    def update_step(self, gradient, variable, learning_rate) -> None:
        step = ops.cast(self.iterations + 1, variable.dtype)
        # 1 - β and 1 - βᵗ from the same float32 β, so they cancel exactly in m̂ and v̂.
        beta_1 = ops.cast(self.beta_1, variable.dtype)
        beta_2 = ops.cast(self.beta_2, variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, (gradient - m) * (1 - beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - beta_2))
        m_hat = m / (1 - ops.power(beta_1, step))
        v_hat = v / (1 - ops.power(beta_2, step))
        lr = ops.cast(learning_rate, variable.dtype)
        self.assign_sub(variable, lr * m_hat / (ops.sqrt(v_hat) + self.epsilon))


@keras.saving.register_keras_serializable(package=PACKAGE)
def _mean_squared_error(reconstruction, target):
    return ops.mean(ops.square(reconstruction - target))


def gradient_function(model: keras.Model, jit_compile: bool) -> Gradients:
    """``(x, y) -> (loss, gradients in model.trainable_variables order)``, compiled.

    Keras has no backend-neutral gradient call, so this is the one place that speaks the
    Keras backend's own language, as Keras' own trainers do.
    """
    name = keras.backend.backend()
    if name == "tensorflow":
        import tensorflow as tf

        @tf.function(jit_compile=jit_compile, autograph=False)
        def tf_gradients(x, y):
            with tf.GradientTape() as tape:
                loss = _mean_squared_error(model(x), y)
            return loss, tape.gradient(loss, model.trainable_variables)

        return tf_gradients
    if name == "jax":
        import jax

        def loss_of(trainable, non_trainable, x, y):
            reconstruction, _ = model.stateless_call(trainable, non_trainable, x)
            return _mean_squared_error(reconstruction, y)

        value_and_grad = jax.value_and_grad(loss_of)
        compiled = jax.jit(value_and_grad) if jit_compile else value_and_grad

        def jax_gradients(x, y):
            trainable = [v.value for v in model.trainable_variables]
            non_trainable = [v.value for v in model.non_trainable_variables]
            return compiled(trainable, non_trainable, x, y)

        return jax_gradients
    raise NotImplementedError(f"keras_rnn computes gradients on tensorflow and jax, not {name}")


class KerasRNNBackend(BaseBackend):
    """``keras.layers.RNN(FRAECell)`` in a functional ``keras.Model``, compiled with XLA.

    ``keras_model`` is the autoencoder itself: it saves to and loads from ``.keras``.
    ``predict``/``encode``/``decode`` run Keras' compiled predict function
    (``predict_on_batch``) and a training step is ``train_on_batch``: Keras' own compiled
    train step, so ``fit`` reports the loss of each step, not Keras' running mean.
    """

    name = "keras_rnn"
    jit_compile: bool | str = True

    def _build(self, weights: Weights) -> None:
        self.keras_model, self._encoder, self._decoder = build_models(self.config)
        self._variables = {canonical_name(v): v for v in self.keras_model.weights}
        self._write_weights(weights)
        if self.jit_compile != "auto":  # predicting needs no compile(), nor an optimizer
            for model in (self.keras_model, self._encoder, self._decoder):
                model.jit_compile = self.jit_compile
        self._gradients = gradient_function(self.keras_model, self.jit_compile is not False)
        self._trainers: dict[str, keras.Model] = {}

    @property
    def metadata(self) -> dict[str, str]:
        return {"keras_backend": keras.backend.backend(), "keras": keras.__version__}

    def _read_weights(self) -> Mapping[str, Any]:
        # np.asarray, not Variable.numpy(): Keras' __array__ warns on NumPy 2 (copy keyword)
        return {name: np.asarray(v.value) for name, v in self._variables.items()}

    def _write_weights(self, weights: Weights) -> None:
        for name, value in weights.items():
            self._variables[name].assign(value)

    def _predict(self, x: Array) -> Array:
        return self.keras_model.predict_on_batch(x)

    def _encode(self, x: Array) -> Array:
        return self._encoder.predict_on_batch(x)

    def _decode(self, z: Array) -> Array:
        return self._decoder.predict_on_batch(z)

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = self._gradients(x, y)
        names = [canonical_name(v) for v in self.keras_model.trainable_variables]
        return float(loss), {n: ops.convert_to_numpy(g) for n, g in zip(names, grads, strict=True)}

    def _trainer(self, optimizer: str, learning_rate: float) -> keras.Model:
        """A view of ``keras_model`` (same layers and variables) compiled with ``optimizer``.

        One per optimizer kind, compiled once: compiling ``keras_model`` itself would discard
        its compiled predict function. Optimizer state is zeroed at each ``fit``.
        """
        if optimizer not in self._trainers:
            trainer = keras.Model(self.keras_model.input, self.keras_model.output)
            trainer.compile(
                optimizer=keras.optimizers.SGD() if optimizer == "sgd" else SpecAdam(),
                loss=_mean_squared_error,
                jit_compile=self.jit_compile,
            )
            self._trainers[optimizer] = trainer
        trainer = self._trainers[optimizer]
        for variable in trainer.optimizer.variables:
            variable.assign(ops.zeros(variable.shape, variable.dtype))
        trainer.optimizer.learning_rate = learning_rate
        return trainer

    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        trainer = self._trainer(optimizer, learning_rate)
        return lambda x, y: float(trainer.train_on_batch(x, y))


class DefaultKerasRNNBackend(KerasRNNBackend):
    """What a Keras user writes first: ``model.predict`` and ``model.fit`` with Keras'
    defaults (``jit_compile="auto"``); a benchmark baseline."""

    name = "keras_rnn_default"
    jit_compile = "auto"

    def _predict(self, x: Array) -> Array:
        return self.keras_model.predict(x, verbose=0)

    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        trainer = self._trainer(optimizer, learning_rate)
        return lambda x, y: trainer.fit(
            x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0
        ).history["loss"][0]
