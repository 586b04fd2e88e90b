"""What a Keras user writes first: ``keras_rnn``'s model through ``model.predict`` and
``model.fit`` with Keras' defaults (``jit_compile="auto"``)."""

from __future__ import annotations

from frae.backend import Array, Moments, TrainStep
from frae.training_state import TrainingState
from impls.keras_rnn import KerasRNNBackend


class KerasDefaultsBackend(KerasRNNBackend):
    """``model.predict([x, state])``, and ``model.fit([x, y])`` on keras_rnn's training
    model (its target an input); Keras resolves ``"auto"`` to no XLA for TensorFlow on a
    CPU-only machine, so there it runs graph mode, step by step."""

    name = "keras_defaults"
    jit_compile = "auto"
    routes = ()  # Keras' own choices: no XLA on a CPU-only TensorFlow

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        outputs, last = self.keras_model.predict([x, state], verbose=0)
        return outputs, last

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        _, moments = super()._train_step(optimizer, learning_rate, start)  # resumed from start
        trainer = self._training
        return lambda x, y: trainer.fit(
            [x, y], batch_size=len(x), epochs=1, shuffle=False, verbose=0
        ).history["loss"][0], moments
