"""Each backend's route: the framework settings measured to make this model fastest on a CPU
(docs/performance.md, "The settings that matter"), applied by default; a setting the user
made is kept and reported as theirs, and ``FRAE_ROUTES=defaults`` leaves every framework at
its own defaults. Each backend's ``routes`` attribute says what it runs with.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from dataclasses import dataclass

ROUTES = "FRAE_ROUTES"
"""The environment variable that chooses the routes: ``best`` (unset) or ``defaults``."""
BEST, DEFAULTS = "best", "defaults"
BY_FRAE, BY_USER, BY_DEFAULT = "frae", "user", "framework default"
"""Who a setting's value comes from: this package, the user, or the framework itself."""

LOOP_FOLDING = "xla_cpu_small_while_loop_byte_threshold"
"""XLA:CPU's gate on hoisting a ``while`` loop accessing fewer bytes per iteration than this
into one kernel (XLA's default, about a kilobyte, is too small for a gradient's loop)."""
FOLDING_BYTES = 300_000
"""Folds every loop but the width-256 model's at B = 256, whose products XLA's own kernels
run faster (docs/performance.md, "The settings that matter")."""
YNNPACK_OFF = {"xla_cpu_experimental_ynn_fusion_type": ""}
"""XLA:CPU's YNNPACK fusions off: from B = 256 each costs a thread-pool dispatch per time
step, more than the fused loop it replaces (docs/performance.md)."""
EXTRA_OPTIONS = "--xla_backend_extra_options="
"""The ``XLA_FLAGS`` flag that carries backend options, ``key=value,...``."""


@dataclass(frozen=True)
class Setting:
    """One setting a backend runs with: the framework's option as its documentation names
    it, its value (``None``: the framework's default), and who chose it (``BY_*``)."""

    option: str
    value: str | None
    by: str

    def __str__(self) -> str:
        value = "default" if self.value is None else self.value
        return f"{self.option}={value} ({self.by})"


def chosen(environ: MutableMapping[str, str] | None = None) -> str:
    """``BEST`` or ``DEFAULTS``, from ``FRAE_ROUTES``; any other value is a ``ValueError``."""
    value = (os.environ if environ is None else environ).get(ROUTES, BEST)
    if value not in (BEST, DEFAULTS):
        raise ValueError(f"{ROUTES} must be {BEST!r} or {DEFAULTS!r}, got {value!r}")
    return value


BEFORE = "FRAE_XLA_FLAGS_BEFORE"
"""Where ``fold_xla_loops`` keeps ``XLA_FLAGS`` as it found them, so that a child process
reads the option as this package's, never as the user's."""


def fold_xla_loops(environ: MutableMapping[str, str] | None = None) -> Setting:
    """XLA's loop folding: ``LOOP_FOLDING`` set to ``FOLDING_BYTES`` in ``XLA_FLAGS``,
    unless the user's ``XLA_FLAGS`` names it already (kept) or ``FRAE_ROUTES=defaults``.
    Called at a backend's import: XLA reads ``XLA_FLAGS`` at its first compilation.
    """
    env = os.environ if environ is None else environ
    option = f"XLA_FLAGS {LOOP_FOLDING}"
    ours = BEFORE in env and env.get("XLA_FLAGS", "") == _folded(env[BEFORE])
    if ours and chosen(env) == DEFAULTS:
        env["XLA_FLAGS"] = env.pop(BEFORE)
        ours = False
    flags = env.get("XLA_FLAGS", "")
    present = extra_option(flags, LOOP_FOLDING)
    if present is not None:
        return Setting(option, present, BY_FRAE if ours else BY_USER)
    if chosen(env) == DEFAULTS:
        return Setting(option, None, BY_DEFAULT)
    env[BEFORE], env["XLA_FLAGS"] = flags, _folded(flags)
    return Setting(option, str(FOLDING_BYTES), BY_FRAE)


def _folded(flags: str) -> str:
    return with_extra_option(flags, LOOP_FOLDING, str(FOLDING_BYTES))


def compiler_options(
    options: dict[str, str], environ: MutableMapping[str, str] | None = None
) -> tuple[dict[str, str], tuple[Setting, ...]]:
    """The options to pass to each compilation (``jax.jit(..., compiler_options=)``) and the
    settings they make: each unless the user's ``XLA_FLAGS`` sets it or
    ``FRAE_ROUTES=defaults``."""
    env = os.environ if environ is None else environ
    flags = env.get("XLA_FLAGS", "").split()
    passed, settings = {}, []
    for name, value in options.items():
        option = f"jax.jit compiler_options {name}"
        users = [flag.partition("=")[2] for flag in flags if flag.partition("=")[0] == f"--{name}"]
        if users:
            settings.append(Setting(option, users[-1], BY_USER))
        elif chosen(env) == DEFAULTS:
            settings.append(Setting(option, None, BY_DEFAULT))
        else:
            passed[name] = value
            settings.append(Setting(option, repr(value), BY_FRAE))
    return passed, tuple(settings)


def extra_option(flags: str, key: str) -> str | None:
    """The value ``flags`` (an ``XLA_FLAGS`` string) gives backend option ``key``, or
    ``None``; a key given without a value reads as ``""``."""
    for flag in flags.split():
        if flag.startswith(EXTRA_OPTIONS):
            for pair in flag.removeprefix(EXTRA_OPTIONS).split(","):
                name, _, value = pair.partition("=")
                if name == key:
                    return value
    return None


def with_extra_option(flags: str, key: str, value: str) -> str:
    """``flags`` with backend option ``key=value`` added, to the existing
    ``--xla_backend_extra_options`` flag if any (a second one would replace it)."""
    pair = f"{key}={value}"
    existing = re.search(rf"(?:^|\s){re.escape(EXTRA_OPTIONS)}(\S*)", flags)
    if existing is None:
        return f"{flags} {EXTRA_OPTIONS}{pair}".strip()
    start, end = existing.span(1)
    joined = f"{existing.group(1)},{pair}" if existing.group(1) else pair
    return flags[:start] + joined + flags[end:]
