"""``bench.baselines.c_forward``: the C forward equals the reference; each C floor builds once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from bench.baselines.c_forward import CForwardBackend, compile_forward
from parity_tests.tolerances import assert_close
from tests.bench_cases import (
    BIAS,
    NO_HIDDEN_CONFIG,
    OTHER_CONFIG,
    STATE_CONFIG,
    dropped,
    needs_cc,
    sequences,
)
from tests.processes import ROOT, python

pytestmark = [pytest.mark.backend_specific("numba_floor"), needs_cc]  # every test builds C
numba = pytest.importorskip("numba", reason="the floors need numba: pip install 'frae[bench]'")
from bench.baselines.matrix_floor import MatrixFloorBackend, compile_matrix  # noqa: E402
from bench.baselines.simd_floor import SimdFloorBackend, compile_simd  # noqa: E402


@pytest.mark.parametrize(
    "config",
    [frae.FRAEConfig(), OTHER_CONFIG, NO_HIDDEN_CONFIG],
    ids=["default", "other", "no-hidden"],
)
def test_c_forward_equals_the_reference(config: frae.FRAEConfig) -> None:
    model = CForwardBackend(config, seed=3)
    x = sequences(config, seed=1)
    assert_close("outputs", model.predict(x), frae.create("reference", config, seed=3).predict(x))


def test_the_floors_without_a_gru_refuse_a_state_feedback_model() -> None:
    for backend in (CForwardBackend, MatrixFloorBackend):
        with pytest.raises(NotImplementedError, match="no GRU"):
            backend(STATE_CONFIG, seed=3)


LEAVES_NOTHING = """
import os, tempfile
import frae
from bench.baselines.c_forward import compile_forward
from bench.baselines.simd_floor import compile_simd
compile_forward(frae.FRAEConfig())
compile_simd(frae.FRAEConfig())
print(len(os.listdir(tempfile.gettempdir())))
"""


def test_the_c_floors_leave_no_build_folder(tmp_path: Path) -> None:
    """Each C floor builds in a temporary folder of its own, removed when its process exits
    (a benchmark builds one per config and process)."""
    environment = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = python("-c", LEAVES_NOTHING, env=environment, timeout=300)
    assert result.stdout.split()[-1] == "2", "both folders while the process ran"
    assert list(tmp_path.iterdir()) == []


def test_the_c_check_rejects_a_broken_forward() -> None:
    config = frae.FRAEConfig()
    x = sequences(config, seed=1)
    expected = frae.create("reference", config, seed=3).predict(x)
    with pytest.raises(AssertionError):
        assert_close("outputs", dropped(CForwardBackend, BIAS)(config, seed=3).predict(x), expected)


C_FLOORS = {  # a config of its own each, so that its one build is the test's
    "c_forward": (
        CForwardBackend,
        compile_forward,
        frae.FRAEConfig(input_dim=4, encoder_units=(3,), latent_dim=2, decoder_units=(5,)),
    ),
    "matrix": (
        MatrixFloorBackend,
        compile_matrix,
        frae.FRAEConfig(input_dim=3, encoder_units=(20,), latent_dim=4, decoder_units=(18,)),
    ),
    "simd-output": (
        SimdFloorBackend,
        compile_simd,
        frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2, decoder_units=(6,)),
    ),
    "simd-state": (
        SimdFloorBackend,
        compile_simd,
        frae.FRAEConfig(input_dim=3, latent_dim=2, feedback="state", state_dim=5),
    ),
}


@pytest.mark.parametrize(("backend", "build", "config"), C_FLOORS.values(), ids=C_FLOORS)
def test_a_c_floor_compiles_once_for_every_state(
    backend: type[frae.Backend], build: Any, config: frae.FRAEConfig
) -> None:
    """One library per config, built when the backend is made: not again for two states,
    another chunk length, encode or decode (the C forward predicts alone)."""
    misses = build.cache_info().misses
    model = backend(config, seed=3)  # type: ignore[call-arg]
    x, states = sequences(config, 1, 37), np.zeros((37, config.feedback_dim))
    first, second = (model.predict(x, state=states + value) for value in (0.5, -0.5))
    model.predict(x[:, :3], state=states)
    if backend is not CForwardBackend:
        model.decode(model.encode(x[:, :3], state=states))
    assert not np.allclose(first, second)
    assert build.cache_info().misses == misses + 1
