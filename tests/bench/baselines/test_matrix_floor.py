"""``bench.baselines.matrix_floor``: the reference's maths in float32, streamed and threaded."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import frae
from parity_tests.tolerances import assert_close
from tests import bench_cases
from tests.bench_cases import broken_floor, check_streaming, needs_cc, sequences
from tests.processes import python

pytestmark = needs_cc  # every test builds the floor in C
numba = pytest.importorskip("numba", reason="the floors need numba: pip install 'frae[bench]'")
from bench.baselines.matrix_floor import SOURCE, MatrixFloorBackend, compile_matrix  # noqa: E402

WIDE_CONFIG = frae.FRAEConfig(encoder_units=(64,), latent_dim=16, decoder_units=(64,))
CONFIGS = {
    "default": frae.FRAEConfig(),
    "wide": WIDE_CONFIG,
    "deep": frae.FRAEConfig(
        input_dim=3,
        encoder_units=(20, 33, 17),
        latent_dim=5,
        decoder_units=(18, 9, 24),
        activation="tanh",
        output_activation="linear",
    ),
    "deep_sigmoid": frae.FRAEConfig(
        input_dim=5,
        encoder_units=(40, 7),
        latent_dim=3,
        decoder_units=(6, 35),
        activation="sigmoid",
    ),
    "no_hidden": frae.FRAEConfig(input_dim=4, encoder_units=(), latent_dim=2, decoder_units=()),
}
BATCHES = (1, 37, 256)
STEPS = 13


check_forward = partial(bench_cases.check_forward, steps=STEPS)
check_gradients = partial(bench_cases.check_gradients, steps=STEPS)


broken = partial(broken_floor, MatrixFloorBackend, SOURCE, compile_matrix)
"""The matrix floor with each ``(old, new)`` of its edits made in ``matrix_floor.c``."""


MISTAKES = {
    "no-feedback-into-the-decoder": (
        check_forward,
        [("row[FEEDBACK_D + f] = fed;", "row[FEEDBACK_D + f] = 0.0f;")],
    ),
    "kernels-not-transposed": (
        check_forward,
        [("transposed[kernel + j * fan_in + k]", "transposed[kernel + k * units + j]")],
    ),
    "last-rows-of-the-batch-skipped": (
        check_forward,
        [
            (
                "for (long b = blocks * BLOCK; b < batch; ++b)\n        dense_block",
                "for (long b = blocks * BLOCK; 0; ++b)\n        dense_block",
            )
        ],
    ),
    "no-gradient-through-the-decoder-feedback": (
        check_gradients,
        [(" + g[b * ROWS + FEEDBACK_D + f];", ";")],
    ),
    "weight-gradients-of-the-first-step-alone": (
        check_gradients,
        [("t == 0) {\n", "t == 0) {\n            memset(grads, 0, sizeof(float) * WEIGHTS);\n")],
    ),
    "last-kernel-rows-of-the-weight-gradients-skipped": (
        check_gradients,
        [
            (
                "for (int k = quads * 4; k < m; ++k)\n        outer_rows(",
                "for (int k = quads * 4; 0;)\n        outer_rows(",
            )
        ],
    ),
    "state-dropped": (
        check_streaming,
        [("previous ? previous[b * spacing + f]", "t > 0 ? previous[b * spacing + f]")],
    ),
    "state-from-before-the-last-step": (
        check_streaming,
        [("last + b * ROWS + OUTPUT_ROW,", "last + b * ROWS + FEEDBACK_A,")],
    ),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS)
def test_the_matrix_floor_equals_the_reference(config: frae.FRAEConfig, batch: int) -> None:
    model = MatrixFloorBackend(config, seed=3)
    check_forward(model, config, batch)
    check_gradients(model, config, batch)


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_the_matrix_floor_trains_as_the_reference(optimizer: str) -> None:
    """``fit`` in mini-batches of 37 of 74 sequences: the remainder rows in training too."""
    config, x = WIDE_CONFIG, sequences(WIDE_CONFIG, 1, 74, STEPS)
    options = {"epochs": 10, "batch_size": 37, "optimizer": optimizer, "learning_rate": 1e-2}
    losses = MatrixFloorBackend(config, seed=3).fit(x, **options)["loss"]
    expected = frae.create("reference", config, seed=3).fit(x, **options)["loss"]
    assert_close(optimizer, np.float32(losses), np.float64(expected), "losses")


@pytest.mark.parametrize(("check", "edits"), MISTAKES.values(), ids=MISTAKES)
def test_the_checks_reject_a_broken_matrix_floor(
    check: Callable[..., None], edits: list[tuple[str, str]], tmp_path: Path
) -> None:
    model = broken(tmp_path, *edits)(WIDE_CONFIG, seed=3)
    with pytest.raises(AssertionError):
        check(model, WIDE_CONFIG, batch=37)


@pytest.mark.parametrize("batch", [1, 37])
@pytest.mark.parametrize("config", [frae.FRAEConfig(), WIDE_CONFIG], ids=["default", "wide"])
def test_the_matrix_floor_streams_in_chunks_as_one_call(
    config: frae.FRAEConfig, batch: int
) -> None:
    check_streaming(MatrixFloorBackend(config, seed=3), config, batch=batch)


THREADS_PROBE = """
import os, sys
import numpy as np
import frae
from bench.baselines.matrix_floor import MatrixFloorBackend

def cpu_ticks():
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks[tid] = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks

config = frae.FRAEConfig(encoder_units=(256,), latent_dim=16, decoder_units=(256,))
model = MatrixFloorBackend(config, seed=3)
x = np.random.default_rng(0).standard_normal((64, 8, 2)).astype(np.float32)
outputs, (loss, grads) = model.predict(x), model.loss_and_grads(x)
before = cpu_ticks()
for _ in range(300):
    model.loss_and_grads(x)
after = cpu_ticks()
ticks = [0, *sorted(after[tid] - before.get(tid, 0) for tid in after)]
np.savez(sys.argv[1], outputs=outputs, loss=loss, ticks=np.array(ticks), **grads)
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="threads' CPU time from /proc")
def test_the_matrix_floors_threads_split_its_products_to_the_same_results(tmp_path: Path) -> None:
    """On OMP_NUM_THREADS 1 and 2 (width 256, B = 64): the same bits, and on two a second thread
    does a quarter of the busiest's CPU time or more (CPU time: a loaded machine cannot fool it)."""
    found = {}
    for threads in (1, 2):
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        path = tmp_path / f"{threads}.npz"
        python("-c", THREADS_PROBE, str(path), env=env, timeout=300)
        found[threads] = dict(np.load(path))
    one, two = found[1], found[2]
    for name in one.keys() - {"ticks"}:
        np.testing.assert_array_equal(one[name], two[name], err_msg=name)
    assert one["ticks"][-1] > 20 * one["ticks"][-2], one["ticks"]
    assert two["ticks"][-2] > two["ticks"][-1] / 4, two["ticks"]
