"""A fresh Python process for a test: a script or module run from the repository's root,
its output captured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from parity_tests.tolerances import assert_close

ROOT = Path(__file__).resolve().parent.parent


def python(
    *arguments: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
    cwd: Path = ROOT,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``python *arguments`` in a fresh interpreter; with ``check``, it must exit 0."""
    done = subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert not check or done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done


def last_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout.splitlines()[-1])


def fresh_json(script: str, *args: str, without: tuple[str, ...] = (), **environment: str) -> Any:
    """What ``script`` prints last, as JSON, in a fresh process whose environment is this
    one's less the variables ``without``, and ``environment`` over it."""
    env = {k: v for k, v in os.environ.items() if k not in without} | environment
    return last_json(python("-c", script, *args, env=env))


def bare_environment(*kept: str) -> dict[str, str]:
    """This process's ``PATH``, ``HOME``, ``LANG``, ``PYTHONPATH`` and the variables ``kept``
    alone: a variable this process set is then not inherited, and cannot look unchanged."""
    names = ("PATH", "HOME", "LANG", "PYTHONPATH", *kept)
    return {name: os.environ[name] for name in names if name in os.environ}


def use_the_backend(name: str, setup: str = "") -> str:
    """Code that trains ``name``'s default model on a short signal (running ``setup`` once the
    model is made) and leaves its prediction in ``output``: a user's first steps, for a fresh
    process to run."""
    return f"""
import numpy as np, frae

model = frae.create({name!r})
{setup}
x = frae.data.multi_sine(batch=2, steps=30, seed=1)
model.fit(x, epochs=2)
output = model.predict(x).tolist()
"""


def assert_as_here(output: object, code: str) -> None:
    """A fresh process's ``output`` is what ``code`` leaves in ``output`` in this process."""
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    assert_close("self", np.float32(output), np.float32(namespace["output"]))
