"""Files written whole or not at all: a temporary file beside the target, flushed to disk and
renamed over it."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomically(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> Path:
    """Run ``write`` on a new file beside ``path``, flush it to disk and rename it over
    ``path``: a reader sees the old file or the new one, never half of one, even after a
    crash. The file is created as ``open()`` creates any file: mode 0o666 less the umask."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    try:
        with open(temporary, "xb") as stream:  # "x": a new file of our own, never another's
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())  # the data is on disk before the rename publishes it
        os.replace(temporary, target)
    except FileExistsError:
        raise  # another writer's temporary file, by a 64-bit random clash: not ours to remove
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)
    return target


def _sync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries, so that the rename survives a crash too; best effort, as not
    every system can open a folder (Windows) or sync one."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
