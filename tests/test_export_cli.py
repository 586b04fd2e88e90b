"""``frae export`` from the command line, in a fresh process per format: every format each
installed backend lists makes an artifact that runs and equals the reference."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import frae
from parity_tests.tolerances import assert_close
from tests.processes import python


@pytest.mark.slow
@pytest.mark.parametrize("backend", frae.installed_backends())
def test_frae_export_makes_every_listed_format_in_a_fresh_process(
    backend: str, tmp_path: Path
) -> None:
    formats = getattr(frae.registry.factory_of(backend), "export_formats", ())
    if not formats:
        pytest.skip(f"{backend} exports no format")
    config = frae.FRAEConfig(feedback="state", state_dim=5)
    weights = tmp_path / "weights.npz"
    frae.save_weights(weights, frae.initial_weights(config, 4))
    oracle = frae.create("reference", config, weights=frae.load_weights(weights))
    x = np.random.default_rng(2).uniform(-1, 1, (2, 9, config.input_dim))
    for format in formats:
        out = tmp_path / format
        command = ["-m", "frae", "export", backend, "--format", format, "--out", str(out)]
        command += ["--config", '{"feedback": "state", "state_dim": 5}', "--weights", str(weights)]
        assert python(*command).stdout.strip() == os.fspath(out)
        assert_close("outputs", frae.load_exported(out).predict(x), oracle.predict(x), format)
