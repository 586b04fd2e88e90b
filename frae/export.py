"""Writing an artifact (the contract's "Exports"): ``frae.export(model, directory, *, format)``.

The checks and the folder are here, shared by every backend; what goes in the folder is the
backend's ``_export``, through its framework's own exporter. The artifact is written in a
hidden folder beside ``directory`` and renamed into place when complete, so a failed or
refused export leaves nothing behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from frae import validation
from frae.runtimes import MANIFEST, MANIFEST_VERSION

if TYPE_CHECKING:
    from frae.backend import BaseBackend  # for types alone: frae.backend imports this module

FORMATS = ("saved_model", "litert", "stablehlo", "pt2", "onnx")
"""Every format the contract names; each backend makes those in its ``export_formats``."""
FUNCTIONS = {"predict": (0, False), "encode": (1, False), "decode": (0, True)}
"""Each artifact's function -> (the result of the backend's loop it returns: 0 the outputs, 1 the
codes; whether its sequences are codes)."""
NEEDS_EXTRA = "needs the export extra (pip install 'frae[export]')"
"""Why a format is not made where its exporter or runtime is missing."""


def made_where_installed(
    formats: dict[str, tuple[str, ...]], refused: Mapping[str, str] | None = None
) -> tuple[tuple[str, ...], Mapping[str, str]]:
    """``(export_formats, export_refusals)`` of a backend whose ``formats`` each need the
    modules named (an exporter, the runtime that runs it): those whose modules are all
    installed; the others refused, naming the modules missing, beside ``refused``, the
    formats its framework cannot make, and why."""
    made, refused = [], dict(refused or {})
    for format, modules in formats.items():
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        if missing:
            refused[format] = f"{NEEDS_EXTRA}: {', '.join(missing)} missing"
        else:
            made.append(format)
    return tuple(made), refused


def export(model: object, directory: str | os.PathLike[str], *, format: str) -> Path:
    """Write ``model`` with its current weights to ``directory`` in ``format``; return the
    artifact's path (``frae.load_exported`` runs it). ``model.export`` does the same; a port
    without it (an optional member of the interface) exports nothing."""
    method = getattr(model, "export", None)
    if not callable(method):
        name = getattr(model, "name", type(model).__name__)
        raise ValueError(f"{name} exports no format: it has no export method")
    return Path(method(directory, format=format))


def check_format(model: BaseBackend, format: object) -> str:
    """``format``, one that ``model`` makes; else a ``ValueError`` that says why not."""
    if not isinstance(format, str) or format not in FORMATS:
        raise ValueError(
            f"format must be one of {', '.join(FORMATS)}, got {validation.describe(format)}"
        )
    if format in model.export_formats:
        return format
    why = model.export_refusals.get(format)
    makes = ", ".join(model.export_formats) or "none"
    reason = f": {why}" if why else f" (it makes: {makes})"
    raise ValueError(f"{model.name} cannot export format {format!r}{reason}")


def check_directory(directory: object) -> Path:
    """The artifact's folder: a path that is absent or an empty folder."""
    if not isinstance(directory, str | os.PathLike) or not os.fspath(directory):
        raise TypeError(f"directory must be a path, got {validation.describe(directory)}")
    target = Path(directory)
    if target.is_dir() and any(target.iterdir()):
        raise FileExistsError(f"cannot export to {target}: the folder is not empty")
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"cannot export to {target}: a file of that name exists")
    return target


def write_artifact(model: BaseBackend, directory: object, format: object) -> Path:
    """Check, then write ``model``'s artifact through ``model._export`` into a hidden
    folder beside ``directory``, add the manifest, and move it into place."""
    chosen = check_format(model, format)
    target = check_directory(directory)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as error:
        raise OSError(f"cannot write the export to {target}: {error}") from None
    try:
        file = model._export(chosen, staging)
        manifest = {
            "version": MANIFEST_VERSION,
            "format": chosen,
            "backend": model.name,
            "file": file,
            "config": model.config.to_dict(),
            "widths": {
                "input": model.config.input_dim,
                "latent": model.config.latent_dim,
                "state": model.config.feedback_dim,
            },
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        if target.is_dir():
            target.rmdir()  # empty, as checked: the rename needs its name free
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
