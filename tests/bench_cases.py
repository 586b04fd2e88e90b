"""What the benchmark's tests share: configs of other sizes, the reference checks a
baseline is held to, a timed measurement made from its figure, a run's record on a test
machine, and a floor broken on purpose: a weight dropped, or a mistake in its C source."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from bench.baselines.c_forward import compiler
from bench.machine import Machine
from bench.records import DEFAULT_MODEL, Listing, Point, ResultRecord, RunRecord, Settings
from frae.backend import BaseBackend
from frae.data import multi_sine
from frae.params import Weights
from parity_tests.cases import CASES
from parity_tests.tolerances import assert_close

OTHER_CONFIG = frae.FRAEConfig(
    input_dim=3,
    encoder_units=(5,),
    latent_dim=2,
    decoder_units=(4, 6),
    activation="tanh",
    output_activation="sigmoid",
)
"""Different sizes everywhere (so a swapped axis or offset fails) and other activations."""
NO_HIDDEN_CONFIG = frae.FRAEConfig(
    encoder_units=(), decoder_units=(), activation="linear", output_activation="swish"
)

STATE_CONFIGS = {name: CASES[name].config for name in ("state", "state_deep", "state_no_hidden")}
"""The parity suite's state-feedback configs: H = 8, 11 and 9, two depths and none."""
STATE_CONFIG = STATE_CONFIGS["state"]

STATE_LABEL = "2-4-3-1-gru8-3-2"
"""The label of ``STATE_CONFIG`` in the results."""


def sequences(config: frae.FRAEConfig, seed: int, batch: int = 3, steps: int = 7) -> np.ndarray:
    """``batch`` sequences of ``steps`` steps of ``config``'s features."""
    return multi_sine(batch=batch, steps=steps, features=config.input_dim, seed=seed)


def check_forward(
    model: frae.Backend, config: frae.FRAEConfig, batch: int = 3, steps: int = 7
) -> None:
    """``predict``, ``encode`` and ``decode`` of ``model`` against the reference."""
    oracle = frae.create("reference", config, seed=3)
    x = sequences(config, 1, batch, steps)
    assert_close("outputs", model.predict(x), oracle.predict(x), "predict")
    assert_close("outputs", model.encode(x), oracle.encode(x), "encode")
    z = oracle.encode(x)
    assert_close("outputs", model.decode(z), oracle.decode(z), "decode")


def check_gradients(
    model: frae.Backend, config: frae.FRAEConfig, batch: int = 3, steps: int = 7
) -> None:
    """Loss and every gradient of ``model``, all in one precision, against the reference,
    with y ≠ x."""
    oracle = frae.create("reference", config, seed=3)
    x, y = sequences(config, 1, batch, steps), sequences(config, 2, batch, steps)
    loss, grads = model.loss_and_grads(x, y)
    expected_loss, expected = oracle.loss_and_grads(x, y)
    dtype = next(iter(grads.values())).dtype  # the loss is compared in the model's precision
    assert_close("loss", np.asarray(loss, dtype), np.asarray(expected_loss))
    assert grads.keys() == expected.keys()
    for name in expected:
        assert grads[name].dtype == dtype, name
        assert_close("gradients", grads[name], expected[name], name)


CUTS = [1, 2, 5]
"""Where the streaming checks cut their sequences of 9 steps: chunks of 1, 1, 3 and 4 steps
(the second of one shape with the first, so a result left in the workspace they share is
overwritten before it is compared)."""


def check_streaming(
    model: frae.Backend,
    config: frae.FRAEConfig,
    operations: tuple[str, ...] = ("predict", "encode", "decode"),
    batch: int = 3,
) -> None:
    """Each of ``operations`` from a random state, in chained chunks: the outputs joined and the
    last state equal the reference's one call."""
    reference = frae.create("reference", config, seed=3)
    x = multi_sine(batch=batch, steps=9, features=config.input_dim, seed=1)
    start = np.random.default_rng(4).normal(0.0, 0.5, (batch, config.feedback_dim))
    inputs = {"predict": x, "encode": x, "decode": reference.encode(x, state=start)}
    for operation in operations:
        expected, last = getattr(reference, operation)(
            inputs[operation], state=start, return_state=True
        )
        outputs, state = [], start
        for chunk in np.split(inputs[operation], CUTS, axis=1):
            output, state = getattr(model, operation)(chunk, state=state, return_state=True)
            outputs.append(output)
        assert_close("outputs", np.concatenate(outputs, axis=1), expected, f"{operation} chunks")
        assert_close("outputs", state, last, f"{operation}'s last state")


def measured(
    variant: str,
    role: str,
    operation: str,
    batch: int,
    steps: int,
    us_per_step: float,
    spread: float = 0.0,
    model: str = DEFAULT_MODEL,
) -> ResultRecord:
    """A timed measurement of ``us_per_step`` µs per time step on one thread of ``model``, its
    quartiles ``spread`` (a fraction of the median) apart."""
    median = us_per_step * steps / 1e6
    q1, q3 = median * (1 - spread / 2), median * (1 + spread / 2)
    timing = {"median_s": median, "q1_s": q1, "q3_s": q3}
    return ResultRecord(
        variant, operation, batch, steps, role, model, first_call_s=1.0, threads=1, **timing
    )


def kept_calls(
    calls_s: list[float],
    variant: str = "jax_scan",
    operation: str = "predict",
    batch: int = 1,
    steps: int = 1,
    **fields: Any,
) -> ResultRecord:
    """A measurement that kept ``calls_s`` (seconds, one step each), their quartiles its own."""
    q1, median, q3 = (float(q) for q in np.percentile(calls_s, [25, 50, 75]))
    timing = {"median_s": median, "q1_s": q1, "q3_s": q3, "samples": len(calls_s)}
    return ResultRecord(
        variant, operation, batch, steps, steps_per_sample=1, calls_s=calls_s, **timing, **fields
    )


def streamed(
    variant: str, role: str, side: str, chunk: int, us_per_frame: float, frames: int = 1000
) -> ResultRecord:
    """A timed stream of ``frames`` frames at B = 1 at one side and chunk length, at
    ``us_per_frame`` µs per frame."""
    median = us_per_frame * frames / 1e6
    timing = {"median_s": median, "q1_s": median, "q3_s": median}
    return ResultRecord(
        variant,
        "stream",
        1,
        frames,
        role,
        side=side,
        chunk=chunk,
        first_call_s=0.5,
        threads=1,
        **timing,
    )


needs_cc = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc or gcc) on PATH")
BIAS = "decoder/output/bias"


def dropped[B: BaseBackend](base: type[B], name: str) -> type[B]:
    """Broken: ``base`` with the weight ``name`` lost on the way in (a forgotten offset)."""

    class Dropped(base):  # type: ignore[valid-type,misc]
        def _write_weights(self, weights: dict[str, Any]) -> None:
            super()._write_weights({**weights, name: 0 * weights[name]})

    return Dropped


def broken_floor[F](
    floor: type[F],
    source: Path,
    compile_loops: Callable[[frae.FRAEConfig, Path], ctypes.CDLL],
    folder: Path,
    *edits: tuple[str, str],
) -> type[F]:
    """A C floor built from its ``source`` with each ``(old, new)`` of ``edits`` made (each ``old``
    occurring once), written into ``folder`` and loaded by ``compile_loops``."""
    text = source.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    mutated = folder / source.name
    mutated.write_text(text)

    class BrokenFloor(floor):  # type: ignore[valid-type, misc]
        def _build(self, weights: Weights) -> None:
            super()._build(weights)
            self._loops = compile_loops(self.config, mutated)

    return BrokenFloor


MACHINE = Machine("linux", "x86_64", "cpu", cpu_count=2, affinity=2, python="3.13")
"""The machine a test's run records: two cores."""
SETTINGS = Settings(repeats=5, min_time_s=0.05, budget_s=1.0, max_samples=100, slow_max_batch=1)
"""The settings a test's run records: a quick run's timing."""


def run_record(
    variants: Mapping[str, Listing] | None = None,
    grid: Iterable[Point] = (),
    models: Mapping[str, frae.FRAEConfig] | None = None,
    machine: Machine = MACHINE,
    settings: Settings = SETTINGS,
    roofline: dict[str, Any] | None = None,
) -> RunRecord:
    """The run's record as the runner writes it, listing ``variants`` over ``grid``, with
    each of ``models`` by label, on ``MACHINE`` with ``SETTINGS`` unless given."""
    configs = {label: config.to_dict() for label, config in (models or {}).items()}
    listings = dict(variants or {})
    return RunRecord(
        "now",
        "python -m bench",
        machine,
        list(grid),
        settings,
        listings,
        configs,
        roofline=roofline,
    )
