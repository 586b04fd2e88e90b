"""Model configs and input sizes shared by the parity tests: batch, time, features and code
width differ in every case, so a swapped axis fails; and the weights and inputs several
tests give a case (streams' weights, the quantized cases' margin-checked inputs, ties, the
rate cases' learned priors)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest

from frae import FRAEConfig, codec
from frae.codec import rate
from frae.config import PRIOR_LOCATION, PRIOR_LOG_SCALE
from impls.reference.model import unroll


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


def stream_weights(case: Case) -> dict[str, npt.NDArray[np.float32]]:
    """Weights large enough (N(0, 0.3)) that the feedback visibly changes every step."""
    rng = np.random.default_rng(31)
    return {
        name: rng.normal(0.0, 0.3, shape).astype(np.float32)
        for name, shape in case.config.parameter_shapes().items()
    }


MARGIN = 1e-4
"""The contract's least margin, in steps of Δ, between a reference code and a tie: closer
to a tie, float32 rounding may pick the neighbouring symbol, a valid code from which the
trajectories of a backend and the reference part."""

INPUT_SEEDS = {"tanh_coarse": 42, "tanh_fine": 45, "swish": 44, "state": 42}
INPUT_SEEDS |= {"clipped": 57, "clipped_state": 50}
"""Each quantized case's inputs: the first seed from 42 whose codes lie at least 0.03 steps
of Δ from a decision (0.08 on the finest grids, where float32 errs by more steps)."""


def large_weights(case: Case) -> dict[str, npt.NDArray[np.float32]]:
    """Weights N(0, 1.5²): codes spread over many symbols, tanh's saturated (|z| to 0.999),
    swish's past the clip."""
    rng, shapes = np.random.default_rng(41), case.config.parameter_shapes()
    return {name: rng.normal(0.0, 1.5, shape).astype(np.float32) for name, shape in shapes.items()}


def unrounded_codes(
    case: Case, weights: dict[str, npt.NDArray[np.float32]], x: npt.NDArray[np.float32]
) -> npt.NDArray[np.float64]:
    """The reference's codes z_t before rounding, ``(B, T, L)``, along its quantized loop."""
    traces: list = []
    params = {name: value.astype(np.float64) for name, value in weights.items()}
    unroll(case.config, params, x.astype(np.float64), traces=traces)
    return np.stack([encoder[-1].out for encoder, _, _ in traces], axis=1)


def margin_checked(
    case: Case,
) -> tuple[dict[str, npt.NDArray[np.float32]], npt.NDArray[np.float32]]:
    """``large_weights`` and inputs of a quantized case, the reference's codes at least
    ``MARGIN`` from a tie (asserted: the fixture's precondition); for a rate case,
    ``rate_checked``'s with its moderate prior."""
    if case.config.rate_weight is not None:
        return rate_checked(case, "moderate")
    name = next(name for name, known in QUANTIZED.items() if known == case)
    weights, x = large_weights(case), case.inputs(INPUT_SEEDS[name])
    margin = codec.tie_margin(unrounded_codes(case, weights, x), case.config.code_step)
    assert margin >= MARGIN, f"the fixture's codes lie {margin:.2g} steps from a tie"
    return weights, x


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


RATE = {
    # the contract's "Rate": the quantized cases "swish" and "state" with a learned prior, on
    # shorter sequences; every rate test takes one of these two configs (or, for λ = 0, the
    # same with 0). λ = 0.05 makes the rate's gradient in the encoder as large as the
    # distortion's, so a rate that does not reach the code shows
    "output": Case(dataclasses.replace(QUANTIZED["swish"].config, rate_weight=0.05), 3, 5),
    "state": Case(dataclasses.replace(QUANTIZED["state"].config, rate_weight=0.05), 3, 6),
}
RATE_PARAMS = [pytest.param(case, id=f"rate_{name}") for name, case in RATE.items()]
RATE_SEEDS = {"output": 44, "state": 42}
"""Each rate case's inputs (with ``large_weights``): codes at least 0.05 steps of Δ from a tie."""

Prior = tuple[tuple[float, ...], tuple[float, ...]]
"""A learned prior, μ and ρ = log s, one entry a code dimension."""
RATE_PRIORS: dict[str, dict[str, Prior]] = {
    # "moderate": μ among the codes, s about their spread (5 to 13 bits a symbol), μ off
    # their centre so that the codes' pulls on it do not cancel; "far_tails": μ several
    # scales below the codes (from 10 or 15 bits to floored); "small_step": s ≈ 1100 (Δ/s
    # 1.4e-5 and 2.8e-5), every code within 0.01 scales of μ (17 or 18 bits); "narrow" and
    # "wide": every symbol floored, s = e^−60 (whose s² is 0 in float32) and s = e^110
    # (infinite in float32, Δ/s 0), μ off the grid
    "output": {
        "moderate": ((0.2, 0.1), (-1.2, -1.9)),
        "far_tails": ((-1.0, -1.0), (-2.5, -2.5)),
        "small_step": ((-3.0, -3.0), (7.0, 7.0)),
        "narrow": ((0.3, 0.3), (-60.0, -60.0)),
        "wide": ((0.3, 0.3), (110.0, 110.0)),
    },
    "state": {
        "moderate": ((1.0,), (0.0,)),
        "far_tails": ((-1.0,), (-1.9,)),
        "small_step": ((-3.0,), (7.0,)),
        "narrow": ((0.3,), (-60.0,)),
        "wide": ((0.3,), (110.0,)),
    },
}

FLOOR_MARGIN = 1e-3
"""The contract's least margin, in bits, between a symbol's information and the 24-bit floor:
closer, float32 rounding may floor a symbol the reference does not (or the other way), and
its gradient is there in one and not in the other."""


def rate_margins(
    case: Case, weights: dict[str, npt.NDArray[np.float32]], x: npt.NDArray[np.float32]
) -> tuple[float, float]:
    """The reference's margins on ``x``: its codes' from a tie (steps of Δ) and its symbols'
    information from the floor (bits), min over every code."""
    step = case.config.code_step
    assert step is not None
    codes = unrounded_codes(case, weights, x)
    location, log_scale = weights[PRIOR_LOCATION], weights[PRIOR_LOG_SCALE]
    bits = rate.information(codec.quantize(codes, step), location, log_scale, step)
    return codec.tie_margin(codes, step), float(np.min(np.abs(bits - rate.FLOOR_BITS)))


def assert_rate_margins(
    case: Case, weights: dict[str, npt.NDArray[np.float32]], x: npt.NDArray[np.float32]
) -> None:
    """The precondition of comparing a rate with the reference's: codes at least ``MARGIN``
    from a tie, symbols at least ``FLOOR_MARGIN`` from the floor."""
    ties, floor = rate_margins(case, weights, x)
    assert ties >= MARGIN, f"the fixture's codes lie {ties:.2g} steps from a tie"
    assert floor >= FLOOR_MARGIN, f"a symbol of the fixture lies {floor:.2g} bits from the floor"


def rate_checked(
    case: Case, prior: str
) -> tuple[dict[str, npt.NDArray[np.float32]], npt.NDArray[np.float32]]:
    """``large_weights`` with the learned prior ``RATE_PRIORS[...][prior]``, and the inputs of
    a rate case, its margins asserted (``assert_rate_margins``)."""
    name = next(name for name, known in RATE.items() if known == case)
    location, log_scale = RATE_PRIORS[name][prior]
    weights = large_weights(case)
    weights[PRIOR_LOCATION] = np.array(location, np.float32)
    weights[PRIOR_LOG_SCALE] = np.array(log_scale, np.float32)
    x = case.inputs(RATE_SEEDS[name])
    assert_rate_margins(case, weights, x)
    return weights, x
