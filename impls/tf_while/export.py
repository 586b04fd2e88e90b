"""tf_while's artifacts: a SavedModel with one signature per function, and the LiteRT flat
buffer converted from it, for any B and T, the weights baked in as constants.

The exported loop writes each step's outputs into a preallocated ``(T, B, ·)`` tensor with
XLA's dynamic-update-slice, not a ``TensorArray``, which LiteRT's converter lowers only for a
static element shape (a dynamic B is not).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from frae.config import FRAEConfig
from frae.export import FUNCTIONS
from impls.tf_while import model
from impls.tf_while.model import tf


class Slices:
    """Each step's outputs written into a preallocated ``(T, B, width)`` tensor by XLA's
    dynamic-update-slice: what LiteRT's converter lowers (to ``DYNAMIC_UPDATE_SLICE``)."""

    @staticmethod
    def start(steps: tf.Tensor, batch: tf.Tensor, width: int) -> Any:
        return tf.zeros([steps, batch, width])

    @staticmethod
    def write(collected: Any, t: tf.Tensor, value: tf.Tensor) -> Any:
        # imported here: TensorFlow's first import is model.py's, which quiets its start-up
        from tensorflow.compiler.tf2xla.python import xla

        zero = tf.constant(0)
        return xla.dynamic_update_slice(collected, value[None], tf.stack([t, zero, zero]))

    @staticmethod
    def stacked(collected: Any) -> tf.Tensor:
        return collected


class Arrays:
    """Each step's outputs written to a ``TensorArray`` of ``(B, width)`` elements, B
    unknown: what tf2onnx converts (to the scan outputs of an ONNX ``Loop``), and what it
    cannot convert the update-slice of ``Slices`` to."""

    @staticmethod
    def start(steps: tf.Tensor, batch: tf.Tensor, width: int) -> Any:
        return tf.TensorArray(tf.float32, size=steps, element_shape=tf.TensorShape([None, width]))

    @staticmethod
    def write(collected: Any, t: tf.Tensor, value: tf.Tensor) -> Any:
        return collected.write(t, value)

    @staticmethod
    def stacked(collected: Any) -> tf.Tensor:
        return collected.stack()


Collect = type[Slices] | type[Arrays]


def unroll_any_shape(
    config: FRAEConfig,
    weights: Mapping[str, tf.Tensor],
    sequences: tf.Tensor,
    state: tf.Tensor,
    *,
    codes_given: bool = False,
    collect: Collect = Slices,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """``model.unroll`` for sequences of any B and T: ``(x̂, z, feedback)``, each step's
    outputs gathered by ``collect``."""
    cell = model.make_cell(config, dict(weights), codes_given=codes_given)
    batch, steps = tf.shape(sequences)[0], tf.shape(sequences)[1]
    time_major = tf.transpose(sequences, [1, 0, 2])

    def step(t: tf.Tensor, feedback: tf.Tensor, outputs: Any, codes: Any) -> Any:
        code, reconstruction, feedback = cell(tf.gather(time_major, t), feedback)
        outputs = collect.write(outputs, t, reconstruction)
        return t + 1, feedback, outputs, collect.write(codes, t, code)

    start = (
        tf.constant(0),
        state,
        collect.start(steps, batch, config.input_dim),
        collect.start(steps, batch, config.latent_dim),
    )
    _, feedback, outputs, codes = tf.while_loop(lambda t, *_: t < steps, step, start)
    time_first = [1, 0, 2]
    outputs, codes = collect.stacked(outputs), collect.stacked(codes)
    return tf.transpose(outputs, time_first), tf.transpose(codes, time_first), feedback


class Exported(tf.Module):
    """The three functions on constant weights, each with a signature for any B and T."""

    def __init__(
        self, config: FRAEConfig, weights: Mapping[str, np.ndarray], collect: Collect
    ) -> None:
        super().__init__()
        # the learned prior only trains: the artifact leaves it out
        recurrence = {
            name: value for name, value in weights.items() if name not in config.prior_parameters
        }

        def function(kept: int, codes_given: bool) -> Any:
            width = config.latent_dim if codes_given else config.input_dim
            signature = [
                tf.TensorSpec([None, None, width], tf.float32, name="sequences"),
                tf.TensorSpec([None, config.feedback_dim], tf.float32, name="state"),
            ]

            @tf.function(input_signature=signature, autograph=False)
            def run(sequences: tf.Tensor, state: tf.Tensor) -> dict[str, tf.Tensor]:
                constants = {name: tf.constant(value) for name, value in recurrence.items()}
                results = unroll_any_shape(
                    config, constants, sequences, state, codes_given=codes_given, collect=collect
                )
                return {"outputs": results[kept], "last_state": results[2]}

            return run

        self.functions = {name: function(*spec) for name, spec in FUNCTIONS.items()}


def write_saved_model(
    config: FRAEConfig, weights: Mapping[str, np.ndarray], folder: Path, collect: Collect = Arrays
) -> str:
    """A SavedModel in ``folder/saved_model``, its outputs gathered by ``collect``; returns
    its name."""
    module = Exported(config, weights, collect)
    tf.saved_model.save(module, str(folder / "saved_model"), signatures=module.functions)
    return "saved_model"


def write_litert(config: FRAEConfig, weights: Mapping[str, np.ndarray], folder: Path) -> str:
    """``folder/model.tflite``, converted from a SavedModel written beside it and removed."""
    saved = folder / "saved_model"
    write_saved_model(config, weights, folder, collect=Slices)
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved), signature_keys=[*FUNCTIONS])
    (folder / "model.tflite").write_bytes(converter.convert())
    shutil.rmtree(saved)
    return "model.tflite"


def write_onnx(config: FRAEConfig, weights: Mapping[str, np.ndarray], folder: Path) -> str:
    """``{function}.onnx`` for each function in ``folder/onnx``, each converted by tf2onnx
    from the function (its loop an ONNX ``Loop``); returns the folder's name."""
    import onnx
    import tf2onnx

    target = folder / "onnx"
    target.mkdir()
    for name, function in Exported(config, weights, Arrays).functions.items():
        signature = function.input_signature
        proto, _ = tf2onnx.convert.from_function(function, signature, opset=ONNX_OPSET)
        _name_outputs(proto.graph)
        onnx.save(proto, str(target / f"{name}.onnx"))
    return target.name


def _name_outputs(graph: Any) -> None:
    """tf2onnx's graph outputs, the function's sorted by key, renamed after their keys and
    put in the contract's order: outputs, then last state."""
    renamed = {old.name: new for old, new in zip(graph.output, sorted(OUTPUTS), strict=True)}
    for node in graph.node:
        node.output[:] = [renamed.get(output, output) for output in node.output]
    for output in graph.output:
        output.name = renamed[output.name]
    graph.output.sort(key=lambda output: OUTPUTS.index(output.name))


ONNX_OPSET = 18
OUTPUTS = ("outputs", "last_state")
WRITERS = {"saved_model": write_saved_model, "litert": write_litert, "onnx": write_onnx}
