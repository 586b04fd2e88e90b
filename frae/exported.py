"""An artifact loaded back behind the backend interface: ``frae.load_exported(path)``.

The functions are ``frae.runtimes``' (the artifact's runtime alone); this adds the contract's
checks, zeros for a missing state, single sequences and ``return_state``, as a backend does.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from frae import runtimes, validation
from frae.backend import BaseBackend, zero_state
from frae.config import FRAEConfig

Array = np.ndarray[Any, Any]


def load_exported(path: str | os.PathLike[str]) -> ExportedModel:
    """The artifact at ``path`` (what ``frae.export`` wrote), run through its runtime."""
    return ExportedModel(Path(path))


class ExportedModel:
    """``predict``, ``encode`` and ``decode`` with the state in and out (the contract's
    "Public interface" and "Streaming") of an exported artifact; its weights are the
    artifact's, fixed."""

    compute_dtype = np.float32

    def __init__(self, path: Path) -> None:
        manifest = runtimes.read_manifest(path)
        self.path = path
        self.format: str = manifest["format"]
        self.exported_from: str = manifest["backend"]
        self.config = FRAEConfig.from_dict(manifest["config"])
        self.name = f"{self.format} of {self.exported_from}"
        self._functions = runtimes.open_artifact(path)
        self._lock = threading.Lock()

    def initial_state(self, batch: int | None = None) -> Array:
        """Zeros ``(batch, S)``, or ``(S,)`` for ``batch=None``."""
        return zero_state(self.config.feedback_dim, batch, self.compute_dtype)

    def predict(self, x: Array, *, state: Array | None = None, return_state: bool = False) -> Any:
        return self._run("predict", x, "x", self.config.input_dim, state, return_state)

    def encode(self, x: Array, *, state: Array | None = None, return_state: bool = False) -> Any:
        return self._run("encode", x, "x", self.config.input_dim, state, return_state)

    def decode(self, z: Array, *, state: Array | None = None, return_state: bool = False) -> Any:
        return self._run("decode", z, "z", self.config.latent_dim, state, return_state)

    def _run(
        self, function: str, value: Array, name: str, width: int, state: Any, wanted: bool
    ) -> Any:
        wanted = validation.check_flag(wanted, "return_state")
        batch, single = validation.check_sequences(value, name, width, self.compute_dtype)
        start = validation.check_state(
            state, len(batch), single, self.config.feedback_dim, self.compute_dtype
        )
        with self._lock:
            outputs, last = self._functions[function](batch, start)
        outputs, last = BaseBackend._unbatch(outputs, single), BaseBackend._unbatch(last, single)
        return (outputs, last) if wanted else outputs
