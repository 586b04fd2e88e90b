"""The PyTorch routes measured beside torch_scan (``bench.baselines.torch_eager``,
``bench.baselines.torch_routes``) compute the reference's maths."""

from __future__ import annotations

import pytest

import frae
from tests.bench_cases import OTHER_CONFIG, check_forward, check_gradients

TORCH_ROUTES = {
    "torch_eager": "bench.baselines.torch_eager:TorchEagerBackend",
    **{
        name: f"bench.baselines.torch_routes:{name}"
        for name in (
            "TorchScanPythonWrapperBackend",
            "TorchScanCppGradientBackend",
            "TorchCompiledStepBackend",
            "TorchScriptBackend",
            "TorchAOTIBackend",
        )
    },
}


@pytest.mark.parametrize("route", TORCH_ROUTES.values(), ids=TORCH_ROUTES)
def test_every_torch_route_equals_the_reference(route: str) -> None:
    """The PyTorch routes measured beside torch_scan compute the same maths (AOTInductor's
    inference only)."""
    pytest.importorskip("torch", reason="torch's extra is not installed")
    model = frae.create(route, OTHER_CONFIG, seed=3)
    check_forward(model, OTHER_CONFIG)
    if not route.endswith("AOTIBackend"):
        check_gradients(model, OTHER_CONFIG)
