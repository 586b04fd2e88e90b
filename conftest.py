"""What both test rooms share: compiled programs cached on disk in this checkout, and compiled in
the process that needs them; under ``pytest -n``, the order and the worker of each test
(``tests/scheduling.py``).

``torch.compile`` keeps what Inductor compiled in a cache on disk; pointed at ``.cache/`` here
(unless ``TORCHINDUCTOR_CACHE_DIR`` is set), every process a run starts (pytest's workers, the
data-parallel workers, the nested runs) shares it, and a fresh clone starts from nothing, so a
run's time does not depend on what earlier runs left in the machine's temporary folder. JAX
keeps the programs XLA compiled there too (its persistent compilation cache, every program
however fast it compiled): Keras on JAX jits each model's functions anew for every model
object it builds (keras_rnn reuses a dropped backend's models, not those of a live one), so
the same program comes back again and again, in every worker and subprocess. Inductor's graph
caches keep whole compiled graphs too, which they would not for a graph holding the scan
operator (they skip every higher-order operator not marked cacheable, lest a key miss its
body): marked here, in the pytest processes of a run (the workers and the nested runs) and in
the kit's data-parallel workers (``FRAE_KIT_PROCESS_SETUP``), a torch_scan config compiled in
one worker costs the other one a few seconds, not half a minute, and so does a test that makes
Dynamo forget what it compiled. A wrong hit would fail the kit, which holds every output to
the reference's; the key does cover the body (two configs that differ only in the activation
inside the loop compile apart). Inductor compiles in the process itself
(``TORCHINDUCTOR_COMPILE_THREADS=1``) rather than in a pool of worker processes that each
imports torch anew: a run keeps every core busy with its own pytest workers, so such a pool
only adds its start-up to each process that compiles. Numba compiles the floors at level 0,
half the cost of its default 3: with ``fastmath`` off, the same bits (tested).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.compile_caches import cache_compiled_scans

CACHE = Path(__file__).resolve().parent / ".cache"
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(CACHE / "torchinductor"))
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(CACHE / "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("NUMBA_OPT", "0")
# the kit's data-parallel workers, which are not pytest processes
os.environ.setdefault(
    "FRAE_KIT_PROCESS_SETUP", "tests.compile_caches:cache_compiled_scans_where_torch_runs"
)


pytest_plugins = ("tests.scheduling",)


def pytest_configure(config: pytest.Config) -> None:
    if importlib.util.find_spec("torch") is not None:
        cache_compiled_scans()
