"""Each backend's route: the framework settings that make this model fastest on a CPU,
applied by default, a user's own setting kept, and what was applied visible.

A route setting is a framework's own documented option, chosen here because it is measured
to help this model (docs/performance.md, "The settings that matter") and to leave the
contract's tolerances met (the conformance kit runs every backend on its route). Three
rules hold for each:

- a backend created without any setting of the user's gets its best route;
- a setting the user made (their own ``XLA_FLAGS`` option, their own Inductor option) is
  kept and reported as theirs, never overwritten;
- ``FRAE_ROUTES=defaults`` in the environment leaves every framework at its own defaults
  (the benchmark's ``NAME[defaults]`` variants), and each backend's ``routes`` attribute
  says what it runs with.

Imports no framework: a process-wide option is written into the environment before the
framework reads it.
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
"""XLA:CPU's gate on hoisting a ``while`` loop into one compiled function
(``SmallWhileLoopHoistingPass``): a loop accessing fewer bytes than this runs as one kernel
instead of one kernel per fusion of its body at every iteration. XLA's default is about a
kilobyte, which a gradient's loop over T = 1000 steps passes."""
FOLDING_BYTES = 300_000
"""The threshold this package sets. XLA counts the bytes one iteration of the loop accesses
(``HloCostAnalysis``), which do not grow with T: under 300 kB, every loop of the default and
state-feedback models at B = 1 and 256, and of the width-256 model at B = 1, runs as one
kernel; the width-256 model's loops at B = 256 (a matrix product of 256 × 256 per layer and
step) keep XLA's kernels, which run those products faster than the folded loop
(docs/performance.md, "The settings that matter")."""
YNNPACK_OFF = {"xla_cpu_experimental_ynn_fusion_type": ""}
"""XLA:CPU's YNNPACK fusions off, a compiler option (``compiler_options``): from B = 256 for
this model XLA hands large element-wise fusions to YNNPACK, each a library call dispatched to
its thread pool at every time step, which costs more than the fused loop it replaces
(docs/performance.md, "The settings that matter")."""
EXTRA_OPTIONS = "--xla_backend_extra_options="
"""The ``XLA_FLAGS`` flag that carries backend options, ``key=value`` pairs separated by
commas."""


@dataclass(frozen=True)
class Setting:
    """One setting a backend runs with.

    Attributes:
        option: the framework's option, as its documentation names it
            (``XLA_FLAGS xla_cpu_small_while_loop_byte_threshold``).
        value: its value, as the framework reads it (``None``: the framework's default).
        by: who chose it: ``BY_FRAE``, ``BY_USER`` or ``BY_DEFAULT``.
    """

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
"""Where ``fold_xla_loops`` keeps ``XLA_FLAGS`` as it found them when it adds its option:
a child process inherits both, so a backend there reads the option as this package's (and,
under ``FRAE_ROUTES=defaults``, takes it out again), never as the user's."""


def fold_xla_loops(environ: MutableMapping[str, str] | None = None) -> Setting:
    """XLA's loop folding: ``LOOP_FOLDING`` set to ``FOLDING_BYTES`` in ``XLA_FLAGS``,
    unless the user's ``XLA_FLAGS`` names it already (kept) or ``FRAE_ROUTES=defaults``.

    XLA reads ``XLA_FLAGS`` once, at the first compilation in the process (TensorFlow's
    first XLA function, JAX's first ``jit``), so this is called where a backend's module is
    imported, before it compiles anything; a program that compiled an XLA function before
    importing a backend keeps what ``XLA_FLAGS`` said then. Other flags, and other backend
    options, are kept as they are.
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
    """``flags`` with this package's loop folding added."""
    return with_extra_option(flags, LOOP_FOLDING, str(FOLDING_BYTES))


def compiler_options(
    options: dict[str, str], environ: MutableMapping[str, str] | None = None
) -> tuple[dict[str, str], tuple[Setting, ...]]:
    """XLA options given to each compilation (``jax.jit(..., compiler_options=)``), which
    would override the same option in ``XLA_FLAGS``: each is passed unless the user's
    ``XLA_FLAGS`` sets it (``--NAME=...``: theirs is kept) or ``FRAE_ROUTES=defaults``.

    Returns the options to pass and the settings they make.
    """
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
    """``flags`` with backend option ``key=value`` added: to the existing
    ``--xla_backend_extra_options`` flag's list when there is one (a second such flag would
    replace the first), else as a flag of its own."""
    pair = f"{key}={value}"
    existing = re.search(rf"(?:^|\s){re.escape(EXTRA_OPTIONS)}(\S*)", flags)
    if existing is None:
        return f"{flags} {EXTRA_OPTIONS}{pair}".strip()
    start, end = existing.span(1)
    joined = f"{existing.group(1)},{pair}" if existing.group(1) else pair
    return flags[:start] + joined + flags[end:]
