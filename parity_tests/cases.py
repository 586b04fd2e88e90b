"""Model configs and input sizes shared by the parity tests: batch, time, features and code
width differ in every case, so a swapped axis fails."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest

from frae import FRAEConfig


@dataclass(frozen=True)
class Case:
    config: FRAEConfig
    batch: int
    steps: int

    def inputs(self, seed: int = 0) -> npt.NDArray[np.float32]:
        """Uniform values in [-1, 1), float32, shape (batch, steps, input_dim)."""
        rng = np.random.default_rng(seed)
        shape = (self.batch, self.steps, self.config.input_dim)
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


CASES = {
    "default": Case(FRAEConfig(), batch=3, steps=7),
    # each other output-feedback case changes several things at once, so that few configs
    # (each compiled anew by every compiled backend) cover every one: no encoder layer, a
    # sigmoid, three features
    "no_encoder_hidden": Case(
        FRAEConfig(input_dim=3, encoder_units=(), activation="sigmoid"), batch=4, steps=6
    ),
    # no decoder layer, tanh, a linear output
    "no_decoder_hidden": Case(
        FRAEConfig(decoder_units=(), activation="tanh", output_activation="linear"),
        batch=3,
        steps=5,
    ),
    # widths past a vector register, four features, two code channels
    "wide": Case(
        FRAEConfig(input_dim=4, encoder_units=(32, 16), latent_dim=2, decoder_units=(24, 12)),
        batch=5,
        steps=9,
    ),
    # the contract's "State feedback": a GRU of H >= 8 units, three depths
    "state": Case(FRAEConfig(feedback="state", state_dim=8), batch=3, steps=7),
    "state_deep": Case(
        FRAEConfig(
            input_dim=3,
            encoder_units=(12, 6),
            latent_dim=2,
            decoder_units=(10, 5),
            feedback="state",
            state_dim=11,
        ),
        batch=4,
        steps=6,
    ),
    "state_no_hidden": Case(
        FRAEConfig(
            encoder_units=(), decoder_units=(), activation="tanh", feedback="state", state_dim=9
        ),
        batch=5,
        steps=8,
    ),
}


def case_params(*names: str) -> list[pytest.ParameterSet]:
    """The cases ``names`` as parameters, each with its name as id."""
    return [pytest.param(CASES[name], id=name) for name in names]


CASE_PARAMS = case_params(*CASES)

BOTH_MODELS = [
    pytest.param(CASES["default"], id="output"),
    pytest.param(CASES["state"], id="state"),
]
"""Output and state feedback on their first cases, each with its model as id: a test that
takes one of them as ``case`` shares the compiled functions of that case's tests."""
