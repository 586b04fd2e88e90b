"""The core imports no framework; a backend imports only its own (a fresh process each)."""

from __future__ import annotations

import json

import pytest

import frae
from tests.processes import python

FRAMEWORKS = ("tensorflow", "jax", "flax", "optax", "keras", "torch", "numba")


LIST_FRAMEWORKS = (
    f"print(__import__('json').dumps(sorted(m for m in {FRAMEWORKS!r} "
    "if m in __import__('sys').modules)))"
)
"""A line of code that prints the frameworks imported so far, as a JSON list."""


def _frameworks_imported_by(code: str) -> list[list[str]]:
    """The frameworks imported at each ``LIST_FRAMEWORKS`` of ``code`` and at its end, run in a
    fresh interpreter."""
    result = python("-c", f"{code}\n{LIST_FRAMEWORKS}", timeout=300)
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("[")]


@pytest.mark.parametrize(
    "code",
    [
        "import frae",
        "import frae; frae.create('reference').predict(__import__('numpy').zeros((1, 3, 2)))",
        "import frae; frae.available_backends(); frae.installed_backends()",
        "import frae.devices; frae.devices.start_devices('none')",
        "import frae.activations, frae.gru_layout",
    ],
)
def test_core_and_reference_import_no_framework(code: str) -> None:
    assert _frameworks_imported_by(code)[-1] == []


def test_the_probe_sees_an_imported_framework() -> None:
    """The check above could pass vacuously if the probe were blind; it is not."""
    assert _frameworks_imported_by(
        f"import frae, numpy; import sys\n{LIST_FRAMEWORKS}\nsys.modules['jax'] = numpy"
    ) == [[], ["jax"]]


TWINS = {
    "bench.twins.tf_while:TFWhileBPTTBackend": "tf_while",
    "bench.twins.jax_scan:JaxScanBPTTBackend": "jax_scan",
    "bench.twins.torch_scan:TorchScanBPTTBackend": "torch_scan",
}
"""The benchmark's hand-written-backward twins, by import path: each the backend it twins."""


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        *(name for name in frae.installed_backends() if frae.registry.REGISTRY[name].frameworks),
        *(path for path, twin in TWINS.items() if twin in frae.installed_backends()),
    ],
)
def test_a_backend_imports_only_what_its_framework_does(name: str) -> None:
    """``create(name)`` and a call import no framework beyond what importing its own does (a twin:
    its backend's), in one process listing ``sys.modules`` after each."""
    frameworks = frae.registry.REGISTRY[TWINS.get(name, name)].frameworks
    alone, used = _frameworks_imported_by(
        f"import {', '.join(frameworks)}\n{LIST_FRAMEWORKS}\n"
        f"import numpy, frae; frae.create({name!r}).predict(numpy.zeros((1, 3, 2), 'float32'))"
    )[-2:]
    assert used == alone
