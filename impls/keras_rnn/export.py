"""keras_rnn's artifacts, through Keras' own exporters, and what each Keras backend cannot
make: a SavedModel of the three models (``keras.export.ExportArchive``, one endpoint each)
and their ONNX models (``keras.Model.export(format="onnx")``), on TensorFlow."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from frae.config import FRAEConfig

if TYPE_CHECKING:
    import keras
else:
    from impls.keras_rnn.model import keras

REFUSALS = {
    "jax": {
        "saved_model": "Keras writes JAX's program into the SavedModel through jax2tf as "
        "StableHLO 1.18 (JAX 0.12), newer than TensorFlow 2.21's XlaCallModule reads "
        "(1.13.7): 'failed to deserialize portable artifact'",
        "onnx": "Keras exports ONNX from JAX through jax2onnx, which the export extra does not "
        "install: its latest (0.17.1) fails on JAX 0.12 ('jax._src.core' has no attribute "
        "'ClosedJaxpr') and pins orbax-checkpoint below flax's",
        "litert": "Keras makes LiteRT from TensorFlow or PyTorch only ('LiteRT export requires "
        "TensorFlow or PyTorch backend')",
    },
    "tensorflow": {
        "litert": "Keras' converter keeps the RNN's TensorArray as a Select TF op "
        "(FlexTensorListReserve), which LiteRT's interpreter cannot run (tensorflow#37134)"
    },
    "torch": {
        "onnx": "Keras runs the RNN on torch as a Python loop, which torch.onnx traces at the "
        "sample's T = 1: the artifact fails at any other T (ONNX Runtime: 'Cannot split "
        "using values in split attribute')",
        "saved_model": "Keras writes a SavedModel from TensorFlow or JAX only",
        "litert": "Keras converts torch models to LiteRT through litert-torch, which the export "
        "extra does not install",
    },
}
"""Keras backend -> format -> why keras_rnn cannot make it there (the upstream error)."""
MADE = {"tensorflow": ("saved_model", "onnx"), "jax": (), "torch": ()}
"""Keras backend -> the formats keras_rnn makes there."""


def signature(config: FRAEConfig, function: str) -> list[Any]:
    import tensorflow as tf

    width = config.latent_dim if function == "decode" else config.input_dim
    return [
        tf.TensorSpec([None, None, width], tf.float32, name="sequences"),
        tf.TensorSpec([None, config.feedback_dim], tf.float32, name="state"),
    ]


def write_saved_model(config: FRAEConfig, models: dict[str, keras.Model], folder: Path) -> str:
    """One SavedModel, an endpoint per function, each returning ``outputs`` and
    ``last_state``; returns its name."""
    archive = keras.export.ExportArchive()
    for name, model in models.items():
        archive.track(model)
        archive.add_endpoint(name, _endpoint(model), input_signature=signature(config, name))
    with contextlib.redirect_stdout(io.StringIO()):
        archive.write_out(str(folder / "saved_model"), verbose=False)
    return "saved_model"


def _endpoint(model: keras.Model) -> Any:
    def serve(sequences: Any, state: Any) -> dict[str, Any]:
        outputs, last = model([sequences, state])
        return {"outputs": outputs, "last_state": last}

    return serve


def write_onnx(config: FRAEConfig, models: dict[str, keras.Model], folder: Path) -> str:
    """``{function}.onnx`` for each function, by ``keras.Model.export``; returns the
    folder's name. Inputs and outputs in the model's order: sequences and state in, outputs
    and last state out."""
    target = folder / "onnx"
    target.mkdir()
    for name, model in models.items():
        width = config.latent_dim if name == "decode" else config.input_dim
        # Keras exports only a model that has been called ("The model provided has never
        # called"): once, eagerly, on one frame
        model([np.zeros((1, 1, width), np.float32), np.zeros((1, config.feedback_dim), np.float32)])
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            # Keras asks NumPy whether np.object exists, which NumPy 2.5 warns about
            warnings.filterwarnings("ignore", "In the future `np.object`", FutureWarning)
            model.export(str(target / f"{name}.onnx"), format="onnx", verbose=False)
    return target.name


WRITERS = {"saved_model": write_saved_model, "onnx": write_onnx}
