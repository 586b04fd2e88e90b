"""Keeping frameworks' native start-up banners off the terminal."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


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
