"""Keras 3: a ``keras.layers.RNN`` over a custom cell, on whichever Keras backend runs."""

from impls.keras_rnn.backend import KerasRNNBackend

__all__ = ["KerasRNNBackend"]
