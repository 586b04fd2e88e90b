"""Property-based: configs and sizes drawn by hypothesis, each backend against the reference.

``FRAE_HYPOTHESIS_EXAMPLES`` (default 2) draws for output feedback, a third as many for state
feedback; each draw compiles a new config. Under ``CI`` the draw is derandomized.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import frae
from impls.reference.model import unroll
from parity_tests.conftest import MakeBackend
from parity_tests.tolerances import assert_close

settings.register_profile(
    "frae",
    max_examples=int(os.environ.get("FRAE_HYPOTHESIS_EXAMPLES", "2")),
    deadline=None,
    derandomize=os.environ.get("CI", "").lower() == "true",
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # the fixture is a factory
)
settings.load_profile("frae")
STATE_EXAMPLES = max(1, settings.default.max_examples // 3)

widths = st.lists(st.integers(1, 8), max_size=3)
activations = st.sampled_from(frae.ACTIVATIONS)
fields = {
    "input_dim": st.integers(1, 4),
    "encoder_units": widths,
    "latent_dim": st.integers(1, 3),
    "decoder_units": widths,
    "activation": activations,
    "output_activation": activations,
}
configs = st.builds(frae.FRAEConfig, **fields)
state_configs = st.builds(
    frae.FRAEConfig, **fields, feedback=st.just("state"), state_dim=st.integers(1, 16)
)
sizes = st.tuples(st.integers(1, 4), st.integers(1, 12), st.integers(0, 999))
"""(B, T, the seed of the weights and data)."""
Sizes = tuple[int, int, int]


@pytest.mark.slow  # each draw a config no other test compiles
@given(config=configs, sizes=sizes)
@example(  # linear layers, growing values: an entry off by 3.4e-6, as in float32 NumPy
    config=frae.FRAEConfig(4, (8,), 2, (), "linear", "linear"), sizes=(1, 10, 241)
)
@example(  # linear layers into tanh: 3.1e-5 off (4.2e-5 in float32 NumPy)
    config=frae.FRAEConfig(3, (8, 8), 1, (3, 7), "linear", "tanh"), sizes=(3, 8, 262)
)
def test_random_configs_equal_the_reference(
    make_backend: MakeBackend, reference: MakeBackend, config: frae.FRAEConfig, sizes: Sizes
) -> None:
    check_against_the_reference(make_backend, reference, config, sizes)


@pytest.mark.slow
@settings(max_examples=STATE_EXAMPLES)
@given(config=state_configs, sizes=sizes)
def test_random_state_configs_equal_the_reference(
    make_backend: MakeBackend, reference: MakeBackend, config: frae.FRAEConfig, sizes: Sizes
) -> None:
    check_against_the_reference(make_backend, reference, config, sizes)


def check_against_the_reference(
    make_backend: MakeBackend, reference: MakeBackend, config: frae.FRAEConfig, sizes: Sizes
) -> None:
    """predict, loss and gradients of random weights (std 0.5) on random x and y."""
    batch, steps, seed = sizes
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (batch, steps, config.input_dim)).astype(np.float32)
    y = rng.uniform(-1, 1, x.shape).astype(np.float32)
    weights = {
        name: rng.normal(0.0, 0.5, shape).astype(np.float32)  # large enough to be nonlinear
        for name, shape in config.parameter_shapes().items()
    }
    model, oracle = make_backend(config, weights=weights), reference(config, weights=weights)
    expected = oracle.predict(x)
    float32_error = np.abs(unroll(config, weights, x)[0] - expected).max()  # the same, float32
    assert_close("random outputs", model.predict(x), expected, "predict", float32_error)
    loss, grads = model.loss_and_grads(x, y)
    expected_loss, expected_grads = oracle.loss_and_grads(x, y)
    assert_close("loss", np.float32(loss), np.float64(expected_loss))
    for name, grad in grads.items():
        assert_close("gradients", grad, expected_grads[name], name)
