"""Keeping frameworks' native start-up banners off the terminal."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from types import ModuleType


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null for the duration.

    TensorFlow's C++ start-up lines (oneDNN, CUDA probing on a machine without a GPU) are
    written before its log level applies, so only the descriptor can hold them back. Python
    exceptions still propagate and print after the descriptor is restored.
    """
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def import_quietly(module: str, start: Callable[[ModuleType], object] | None = None) -> ModuleType:
    """Import ``module`` with native stderr silenced, then run ``start(module)`` likewise.

    ``start`` is where a framework's first device discovery happens (TensorFlow probes for
    CUDA there), so its lines are held back too. TensorFlow's later INFO and WARNING lines
    are turned off through ``TF_CPP_MIN_LOG_LEVEL`` unless the caller set it.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    load_triton_before_tensorflow()
    with native_stderr_silenced():
        imported = importlib.import_module(module)
        if start is not None:
            start(imported)
    return imported


def load_triton_before_tensorflow() -> None:
    """Import Triton now if it is installed and TensorFlow is not loaded yet.

    TensorFlow's wheels (2.20 on) load its LLVM into the process' global symbols, and a
    Triton loaded afterwards binds to it and crashes the interpreter (tensorflow#124205);
    loaded first, both work. PyTorch's CUDA wheels bring Triton, and ``torch.compile``
    imports it even on a CPU, so every import of TensorFlow or Keras here goes through this.
    """
    if "tensorflow" not in sys.modules and importlib.util.find_spec("triton") is not None:
        with native_stderr_silenced():
            importlib.import_module("triton")
