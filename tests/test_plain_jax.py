"""The example port ``examples/plain_jax.py`` streams (the contract's "Streaming"): its
jitted ``run`` takes the state as an argument, so a new state compiles nothing, and chained
chunks equal one call of the reference. (The kit runs on the port in
``test_conformance_kit.py``.)"""

from __future__ import annotations

import numpy as np
import pytest

import frae
from tests.bench_cases import check_streaming

pytest.importorskip("jax")
pytest.importorskip("optax")
plain_jax = pytest.importorskip("examples.plain_jax")
PORT = "examples.plain_jax:PlainJaxFRAE"

# every size different, so that a swapped axis fails
CONFIGS = [
    pytest.param(frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2), id="output"),
    pytest.param(
        frae.FRAEConfig(input_dim=3, latent_dim=2, feedback="state", state_dim=6), id="state"
    ),
]
BATCH, STEPS = 4, 7


@pytest.mark.parametrize("config", CONFIGS)
def test_a_new_state_compiles_nothing(config: frae.FRAEConfig) -> None:
    """predict and encode share one program of ``run`` per shape, whatever the state (zeros
    when none is given); decode adds one; a new T one more. The outputs differ by state."""
    model = frae.create(PORT, config, seed=1)
    rng = np.random.default_rng(2)
    x = rng.uniform(-1.0, 1.0, (BATCH, STEPS, config.input_dim)).astype(np.float32)
    first, second = (rng.uniform(-1.0, 1.0, (BATCH, config.feedback_dim)) for _ in "ab")
    plain_jax.run.clear_cache()
    from_zeros = model.predict(x)
    from_first = model.predict(x, state=first)
    codes, _ = model.encode(x, state=second, return_state=True)
    assert plain_jax.run._cache_size() == 1
    assert not np.allclose(from_zeros, from_first)
    model.decode(codes, state=first)
    model.decode(codes, state=second)
    assert plain_jax.run._cache_size() == 2
    model.predict(x[:, :3], state=first)
    assert plain_jax.run._cache_size() == 3


@pytest.mark.parametrize("config", CONFIGS)
def test_chained_chunks_equal_one_call_of_the_reference(config: frae.FRAEConfig) -> None:
    check_streaming(frae.create(PORT, config, seed=3), config)
