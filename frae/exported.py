"""An artifact loaded back behind the backend interface: ``frae.load_exported(path)``.

The functions are ``frae.runtimes``' (the artifact's runtime alone); ``frae.backend.Sequences``
adds the contract's checks, zeros for a missing state, single sequences and ``return_state``, as
it does for every backend.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from frae import runtimes
from frae.backend import Array, Sequences
from frae.config import FRAEConfig


def load_exported(path: str | os.PathLike[str]) -> ExportedModel:
    """The artifact at ``path`` (what ``frae.export`` wrote), run through its runtime."""
    return ExportedModel(Path(path))


class ExportedModel(Sequences):
    """``predict``, ``encode`` and ``decode`` with the state in and out (the contract's
    "Public interface" and "Streaming") of an exported artifact; its weights are the
    artifact's, fixed."""

    def __init__(self, path: Path) -> None:
        manifest = runtimes.read_manifest(path)
        self.path = path
        self.format: str = manifest["format"]
        self.exported_from: str = manifest["backend"]
        self._config = FRAEConfig.from_dict(manifest["config"])
        self.name = f"{self.format} of {self.exported_from}"
        self._functions = runtimes.open_artifact(path)
        self._lock = threading.RLock()

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        return self._functions["predict"](x, state)

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        return self._functions["encode"](x, state)

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        return self._functions["decode"](z, state)
