"""tf_while's artifacts: a SavedModel with one signature per function, and the LiteRT flat
buffer converted from it, for any B and T, the weights baked in as constants.

The exported loop is ``model.make_cell`` in a ``tf.while_loop`` whose trip count is the
input's dynamic T. It writes each step's outputs into a preallocated ``(T, B, ·)`` tensor
with XLA's dynamic-update-slice rather than a ``TensorArray``: LiteRT's converter lowers a
``TensorArray`` only when its element shape is static (``tf.TensorListReserve`` "requires
element_shape to be static"), and a dynamic B makes it dynamic; the update-slice becomes
LiteRT's ``DYNAMIC_UPDATE_SLICE``, and the loop its ``WHILE``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from tensorflow.compiler.tf2xla.python import xla

from frae.config import FRAEConfig
from impls.tf_while import model
from impls.tf_while.model import tf

FUNCTIONS = {"predict": (0, False), "encode": (1, False), "decode": (0, True)}
"""Function -> (``unroll_any_shape``'s result it returns, whether its sequences are codes)."""


def unroll_any_shape(
    config: FRAEConfig,
    weights: Mapping[str, tf.Tensor],
    sequences: tf.Tensor,
    state: tf.Tensor,
    *,
    codes_given: bool = False,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """``model.unroll`` for sequences of any B and T: ``(x̂, z, feedback)``."""
    cell = model.make_cell(config, dict(weights), codes_given=codes_given)
    batch, steps = tf.shape(sequences)[0], tf.shape(sequences)[1]
    time_major = tf.transpose(sequences, [1, 0, 2])
    zero = tf.constant(0)

    def step(t: tf.Tensor, feedback: tf.Tensor, outputs: tf.Tensor, codes: tf.Tensor) -> Any:
        code, reconstruction, feedback = cell(tf.gather(time_major, t), feedback)
        at = tf.stack([t, zero, zero])
        outputs = xla.dynamic_update_slice(outputs, reconstruction[None], at)
        return t + 1, feedback, outputs, xla.dynamic_update_slice(codes, code[None], at)

    start = (
        zero,
        state,
        tf.zeros([steps, batch, config.input_dim]),
        tf.zeros([steps, batch, config.latent_dim]),
    )
    _, feedback, outputs, codes = tf.while_loop(lambda t, *_: t < steps, step, start)
    return tf.transpose(outputs, [1, 0, 2]), tf.transpose(codes, [1, 0, 2]), feedback


class Exported(tf.Module):
    """The three functions on constant weights, each with a signature for any B and T."""

    def __init__(self, config: FRAEConfig, weights: Mapping[str, np.ndarray]) -> None:
        super().__init__()
        self.functions = {
            name: self._function(config, weights, kept, codes_given)
            for name, (kept, codes_given) in FUNCTIONS.items()
        }

    @staticmethod
    def _function(
        config: FRAEConfig, weights: Mapping[str, np.ndarray], kept: int, codes_given: bool
    ) -> Any:
        width = config.latent_dim if codes_given else config.input_dim
        signature = [
            tf.TensorSpec([None, None, width], tf.float32, name="sequences"),
            tf.TensorSpec([None, config.feedback_dim], tf.float32, name="state"),
        ]

        @tf.function(input_signature=signature, autograph=False)
        def run(sequences: tf.Tensor, state: tf.Tensor) -> dict[str, tf.Tensor]:
            constants = {name: tf.constant(value) for name, value in weights.items()}
            results = unroll_any_shape(config, constants, sequences, state, codes_given=codes_given)
            return {"outputs": results[kept], "last_state": results[2]}

        return run


def write_saved_model(config: FRAEConfig, weights: Mapping[str, np.ndarray], folder: Path) -> str:
    """A SavedModel in ``folder/saved_model``; returns its name."""
    module = Exported(config, weights)
    tf.saved_model.save(module, str(folder / "saved_model"), signatures=module.functions)
    return "saved_model"


def write_litert(config: FRAEConfig, weights: Mapping[str, np.ndarray], folder: Path) -> str:
    """``folder/model.tflite``, converted from a SavedModel written beside it and removed."""
    saved = folder / "saved_model"
    write_saved_model(config, weights, folder)
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved), signature_keys=[*FUNCTIONS])
    (folder / "model.tflite").write_bytes(converter.convert())
    shutil.rmtree(saved)
    return "model.tflite"


WRITERS = {"saved_model": write_saved_model, "litert": write_litert}
