"""What every twin refuses (``bench.twins.refuse_rate_weight``): a rate term, which no
hand-written backward has."""

from __future__ import annotations

import dataclasses

import pytest

import frae

TWINS = [
    "bench.twins.tf_while:TFWhileBPTTBackend",
    "bench.twins.jax_scan:JaxScanBPTTBackend",
    "bench.twins.torch_scan:TorchScanBPTTBackend",
]
QUANTIZED = frae.FRAEConfig(code_step=2**-3)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("feedback", ["output", "state"])
def test_a_twin_refuses_a_rate_weight(twin: str, feedback: str) -> None:
    """A config with ``rate_weight`` (0 included) is refused at creation, naming it, whatever
    the feedback; the same config without one is made."""
    state_dim = 3 if feedback == "state" else None
    config = dataclasses.replace(QUANTIZED, feedback=feedback, state_dim=state_dim)
    frae.create(twin, config)
    with pytest.raises(ValueError, match="rate_weight must be None"):
        frae.create(twin, dataclasses.replace(config, rate_weight=0.0))
