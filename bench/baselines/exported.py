"""An exported artifact as a benchmark variant (the contract's "Exports"): the model exported
by ``frae export`` in a child process, which imports the exporting framework, once per
(config, weights), and loaded with ``frae.load_exported`` here, where only the format's
runtime is imported. It offers inference alone, with the state in and out (the stream).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import frae
from frae import validation
from frae.config import FRAEConfig
from frae.exported import ExportedModel
from frae.params import Weights, initial_weights, save_weights


@functools.cache
def _folder() -> Path:
    """This process's artifacts, removed when it exits."""
    return Path(tempfile.mkdtemp(prefix="frae-exported-"))


def export_in_child(
    backend: str, format: str, config: FRAEConfig, weights: Weights, env: Mapping[str, str]
) -> Path:
    """The artifact of ``backend`` in ``format`` with ``weights``, written by ``frae
    export`` in a child process (with ``env`` added to this one's environment)."""
    raw = b"".join(np.ascontiguousarray(weights[name]).tobytes() for name in sorted(weights))
    digest = hashlib.sha256(json.dumps(config.to_dict()).encode() + raw)
    key = f"{backend}-{format}-{digest.hexdigest()[:16]}"
    artifact = _folder() / key
    if artifact.exists():
        return artifact
    weights_file = _folder() / f"{key}.npz"
    save_weights(weights_file, weights)
    command = [sys.executable, "-m", "frae", "export", backend, "--format", format]
    command += ["--out", str(artifact), "--config", json.dumps(config.to_dict())]
    command += ["--weights", str(weights_file)]
    done = subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, timeout=1200
    )
    if done.returncode != 0:
        raise RuntimeError(f"frae export {backend} --format {format} failed: {done.stderr[-2000:]}")
    return artifact


class ExportedRuntime:
    """``exporter``'s artifact in ``format``, behind the backend interface, inference only."""

    exporter: ClassVar[str]
    format: ClassVar[str]
    env: ClassVar[Mapping[str, str]] = {}

    def __init__(
        self,
        config: FRAEConfig | None = None,
        *,
        seed: int = 0,
        weights: Mapping[str, np.ndarray] | None = None,
        devices: int | None = None,
    ) -> None:
        self._config = validation.check_config(config)
        if validation.check_devices(devices) not in (None, 1):
            raise ValueError(f"an artifact runs on one device, got devices={devices}")
        self._weights = (
            initial_weights(self._config, validation.check_seed(seed))
            if weights is None
            else validation.check_weights(weights, self._config.parameter_shapes())
        )
        path = export_in_child(self.exporter, self.format, self._config, self._weights, self.env)
        self._model = frae.load_exported(path)
        self.name = f"{self.exporter}:{self.format}"
        self.artifact_kib = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1024

    @property
    def config(self) -> FRAEConfig:
        return self._config

    @property
    def model(self) -> ExportedModel:
        return self._model

    def get_weights(self) -> Weights:
        return {name: value.copy() for name, value in self._weights.items()}

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        raise NotImplementedError("an artifact's weights are baked in: export it anew")

    def initial_state(self, batch: int | None = None) -> np.ndarray:
        return self._model.initial_state(batch)

    def predict(self, x: Any, **options: Any) -> Any:
        return self._model.predict(x, **options)

    def encode(self, x: Any, **options: Any) -> Any:
        return self._model.encode(x, **options)

    def decode(self, z: Any, **options: Any) -> Any:
        return self._model.decode(z, **options)

    def loss_and_grads(self, x: Any, y: Any = None) -> Any:
        raise NotImplementedError("an artifact runs inference only")

    def fit(self, x: Any, y: Any = None, **options: Any) -> Any:
        raise NotImplementedError("an artifact runs inference only")


def runtime_of(exporter: str, format: str, env: Mapping[str, str] | None = None) -> type:
    """The variant's class: ``exporter``'s artifact in ``format`` (exported with ``env``)."""
    fields = {"exporter": exporter, "format": format, "env": dict(env or {})}
    return type(f"{exporter}_{format}", (ExportedRuntime,), fields)


TFWhileLiteRT = runtime_of("tf_while", "litert")
TFWhileONNX = runtime_of("tf_while", "onnx")
TFWhileSavedModel = runtime_of("tf_while", "saved_model")
JaxScanStableHLO = runtime_of("jax_scan", "stablehlo")
TorchScanONNX = runtime_of("torch_scan", "onnx")
KerasONNX = runtime_of("keras_rnn", "onnx", {"KERAS_BACKEND": "tensorflow"})
