"""The PyTorch routes measured beside torch_scan (``bench.baselines.torch_eager``,
``bench.baselines.torch_routes``) compute the reference's maths."""

from __future__ import annotations

import pytest

import frae
from tests.bench_cases import OTHER_CONFIG, check_forward, check_gradients

ROUTES = "bench.baselines.torch_routes"
TORCH_ROUTES = {
    "torch_eager": ("bench.baselines.torch_eager:TorchEagerBackend", True),
    "TorchScanPythonWrapperBackend": (f"{ROUTES}:TorchScanPythonWrapperBackend", True),
    "TorchScanCppGradientBackend": (f"{ROUTES}:TorchScanCppGradientBackend", True),
    "TorchCompiledStepBackend": (f"{ROUTES}:TorchCompiledStepBackend", True),
    "TorchScriptBackend": (f"{ROUTES}:TorchScriptBackend", True),
    "TorchAOTIBackend": (f"{ROUTES}:TorchAOTIBackend", False),
}
"""Each route: its import path, and whether it trains (AOTInductor's package is inference
alone)."""


@pytest.mark.parametrize(("route", "trains"), TORCH_ROUTES.values(), ids=TORCH_ROUTES)
def test_every_torch_route_equals_the_reference(route: str, trains: bool) -> None:
    """The PyTorch routes measured beside torch_scan compute the same maths."""
    pytest.importorskip("torch", reason="torch's extra is not installed")
    model = frae.create(route, OTHER_CONFIG, seed=3)
    check_forward(model, OTHER_CONFIG)
    if trains:
        check_gradients(model, OTHER_CONFIG)
