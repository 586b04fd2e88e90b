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
            output_activation="linear",  # through which the GRU's model can diverge
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
    return [pytest.param(CASES[name], id=name) for name in names]


CASE_PARAMS = case_params(*CASES)

BOTH_MODELS = [
    pytest.param(CASES["default"], id="output"),
    pytest.param(CASES["state"], id="state"),
]
"""Output and state feedback on their first cases, each with its model as id: a test that
takes one of them as ``case`` shares the compiled functions of that case's tests."""


QUANTIZED = {
    # the contract's "Quantized codes": a latent that saturates (tanh) on a coarse grid and on
    # a fine one, one that does not (swish), and the GRU model
    "tanh_coarse": Case(FRAEConfig(activation="tanh", latent_dim=2, code_step=2**-2), 3, 7),
    "tanh_fine": Case(FRAEConfig(activation="tanh", latent_dim=2, code_step=2**-9), 3, 7),
    "swish": Case(FRAEConfig(latent_dim=2, code_step=2**-6), 3, 7),
    "state": Case(FRAEConfig(feedback="state", state_dim=8, code_step=2**-5), 3, 7),
    # fine grids, whose clip (±Q·Δ: about ±4, ±2) swish codes cross: gradients
    "clipped": Case(FRAEConfig(encoder_units=(6, 4), latent_dim=2, code_step=2**-13), 4, 9),
    "clipped_state": Case(
        FRAEConfig(latent_dim=2, feedback="state", state_dim=8, code_step=2**-14), 4, 9
    ),
}


def quantized_params(*names: str) -> list[pytest.ParameterSet]:
    return [pytest.param(QUANTIZED[name], id=f"quantized_{name}") for name in names]


TIES = np.array([0.5, 2.5, -2.5, -0.5])
"""Codes at k + ½ steps of Δ: half to even gives 0, 2, -2, 0 (away from zero 1, 3, -3, -1)."""


def tie_case(feedback: str = "output") -> Case:
    """A model whose every code is exactly ``TIES`` steps of Δ in float32 (``tie_weights``):
    no encoder layer, a linear latent."""
    config = FRAEConfig(
        encoder_units=(), latent_dim=len(TIES), activation="linear", feedback=feedback,
        state_dim=6 if feedback == "state" else None, code_step=2**-3,
    )  # fmt: skip
    return Case(config, batch=2, steps=5)


def tie_weights(config: FRAEConfig) -> dict[str, npt.NDArray[np.float32]]:
    """Initial weights but the latent's: a zero kernel and the bias ``TIES · Δ``."""
    from frae.params import initial_weights

    assert config.code_step is not None
    weights = initial_weights(config, 45)
    weights["encoder/latent/kernel"] = np.zeros_like(weights["encoder/latent/kernel"])
    weights["encoder/latent/bias"] = (TIES * config.code_step).astype(np.float32)
    return weights
