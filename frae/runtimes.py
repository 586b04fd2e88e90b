"""Run an exported FRAE artifact through its runtime alone (the contract's "Exports").

This file imports nothing of ``frae``, nor Flax, optax or Keras: only the standard library,
NumPy and the one runtime that the artifact's format needs, when it is opened. It is what
``frae.load_exported`` runs behind the backend interface, it runs as a script in a process
of its own (``python -P frae/runtimes.py ARTIFACT REQUESTS.npz RESULTS.npz``, what the kit
does), and each ``open_*`` function is the few lines a user copies to run that format.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "frae_export.json"
MANIFEST_VERSION = 1
FUNCTIONS = ("predict", "encode", "decode")

Function = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``(sequences, state) -> (outputs, last_state)``, float32 NumPy arrays."""


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of the artifact at ``path``; a ``ValueError`` naming the path when there
    is none or it is not one this code reads."""
    manifest = Path(path) / MANIFEST
    try:
        found = json.loads(manifest.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} is not an exported FRAE artifact: {error}") from None
    if not isinstance(found, dict) or found.get("version") != MANIFEST_VERSION:
        raise ValueError(f"{manifest}: not a version-{MANIFEST_VERSION} FRAE export manifest")
    return found


def open_artifact(path: str | Path) -> dict[str, Function]:
    """Each function of the artifact at ``path``, run by its format's runtime."""
    manifest = read_manifest(path)
    opener = OPENERS.get(manifest.get("format", ""))
    if opener is None:
        raise ValueError(f"{path}: unknown format {manifest.get('format')!r}")
    return opener(Path(path) / manifest["file"])


def open_saved_model(path: Path) -> dict[str, Function]:
    """A SavedModel folder in TensorFlow: one signature per function."""
    import tensorflow as tf

    signatures = tf.saved_model.load(str(path)).signatures

    def function(name: str) -> Function:
        def run(sequences: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            found = signatures[name](sequences=tf.constant(sequences), state=tf.constant(state))
            return found["outputs"].numpy(), found["last_state"].numpy()

        return run

    return {name: function(name) for name in FUNCTIONS}


def open_litert(path: Path) -> dict[str, Function]:
    """A ``.tflite`` flat buffer in LiteRT's interpreter: one signature runner per function,
    which resizes its inputs to each call's B and T."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))

    def function(name: str) -> Function:
        runner = interpreter.get_signature_runner(name)

        def run(sequences: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            found = runner(sequences=sequences, state=state)
            return found["outputs"], found["last_state"]

        return run

    return {name: function(name) for name in FUNCTIONS}


def open_stablehlo(path: Path) -> dict[str, Function]:
    """A folder of serialized ``jax.export`` programs, ``{function}.bin``, run by JAX."""
    import jax
    from jax import export

    def function(name: str) -> Function:
        exported = export.deserialize(bytearray((path / f"{name}.bin").read_bytes()))
        call = jax.jit(exported.call)  # jitted once: each call of ``call`` alone traces anew

        def run(sequences: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            outputs, last = call(sequences, state)
            return np.asarray(outputs), np.asarray(last)

        return run

    return {name: function(name) for name in FUNCTIONS}


def open_onnx(path: Path) -> dict[str, Function]:
    """A folder of ONNX models, ``{function}.onnx``, each in an ONNX Runtime session; inputs
    and outputs taken in order (sequences and state in, outputs and last state out), as the
    exporters name them differently."""
    import onnxruntime

    def function(name: str) -> Function:
        session = onnxruntime.InferenceSession(
            str(path / f"{name}.onnx"), providers=["CPUExecutionProvider"]
        )
        inputs = [given.name for given in session.get_inputs()]

        def run(sequences: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            outputs, last = session.run(None, dict(zip(inputs, (sequences, state), strict=True)))
            return outputs, last

        return run

    return {name: function(name) for name in FUNCTIONS}


OPENERS: dict[str, Callable[[Path], dict[str, Function]]] = {
    "saved_model": open_saved_model,
    "litert": open_litert,
    "stablehlo": open_stablehlo,
    "onnx": open_onnx,
}
"""Format -> how its runtime opens the artifact's file (or folder), ``manifest["file"]``."""
RUNTIMES = {
    "saved_model": "tensorflow",
    "litert": "ai_edge_litert.interpreter",
    "stablehlo": "jax",
    "onnx": "onnxruntime",
}
"""Format -> the module of the runtime that runs it."""


def run_requests(artifact: str | Path, requests: str | Path, results: str | Path) -> None:
    """Run every request of the ``.npz`` file ``requests`` on the artifact: arrays named
    ``{key}:{function}:sequences`` and ``{key}:{function}:state``; write ``{key}:outputs``
    and ``{key}:last_state`` to ``results``, with ``modules``: the top-level modules this
    process had imported by then."""
    functions = open_artifact(artifact)
    found: dict[str, np.ndarray] = {}
    with np.load(requests) as asked:
        for name in asked.files:
            key, function, part = name.split(":")
            if part != "sequences":
                continue
            outputs, last = functions[function](asked[name], asked[f"{key}:{function}:state"])
            found[f"{key}:outputs"], found[f"{key}:last_state"] = outputs, last
    modules = sorted({name.partition(".")[0] for name in sys.modules})
    found["modules"] = np.array(modules)
    np.savez(results, allow_pickle=False, **found)


if __name__ == "__main__":
    run_requests(*sys.argv[1:4])
