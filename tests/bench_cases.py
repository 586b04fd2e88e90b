"""What the benchmark's tests share: configs of other sizes, the reference checks a baseline is
held to, timed measurements, runs' records (streams, the roofline's model, a quick run), a file of
format 1, and floors broken on purpose: a weight dropped, or a mistake in their C source."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from bench import records, report
from bench.baselines.c_forward import compiler
from bench.grid import wide_models
from bench.measuring.machine import Machine
from bench.records import DEFAULT_MODEL, Listing, Point, Record, ResultRecord, RunRecord, Settings
from bench.reporting import render
from bench.reporting.sections.wide_layers import ROOFLINE_MODEL
from bench.roofline import Peak, counts
from frae.backend import BaseBackend
from frae.config import GRU
from frae.data import multi_sine
from frae.params import Weights
from impls.reference.model import gru_step
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
    return multi_sine(batch=batch, steps=steps, features=config.input_dim, seed=seed)


def check_forward(
    model: frae.Backend, config: frae.FRAEConfig, batch: int = 3, steps: int = 7
) -> None:
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


def reference_gru_states(gru: GRU, weights: Weights, codes: np.ndarray) -> np.ndarray:
    """s_1 … s_T of the float64 reference's ``gru_step`` from s₀ = 0 on ``codes`` (T, B, L):
    what a framework's GRU cell holding canonical ``weights`` is held to."""
    params = {name: np.float64(value) for name, value in weights.items()}
    state, states = np.zeros((codes.shape[1], gru.state_dim)), []
    for code in np.float64(codes):
        state, _ = gru_step(params, gru, code, state)
        states.append(state)
    return np.stack(states)


CUTS = (1, 2, 5)
"""Where the streaming checks cut their sequences of 9 steps by default: chunks of 1, 1, 3 and 4
steps (the second of one shape with the first, so a result left in the workspace they share is
overwritten before it is compared)."""


def check_streaming(
    model: frae.Backend,
    config: frae.FRAEConfig,
    operations: tuple[str, ...] = ("predict", "encode", "decode"),
    batch: int = 3,
    cuts: tuple[int, ...] = CUTS,
    steps: int = 9,
) -> None:
    """Each of ``operations`` from a random state, in chained chunks of ``steps`` cut at
    ``cuts``: the outputs joined and the last state equal the reference's one call."""
    reference = frae.create("reference", config, seed=3)
    x = multi_sine(batch=batch, steps=steps, features=config.input_dim, seed=1)
    start = np.random.default_rng(4).normal(0.0, 0.5, (batch, config.feedback_dim))
    inputs = {"predict": x, "encode": x, "decode": reference.encode(x, state=start)}
    for operation in operations:
        expected, last = getattr(reference, operation)(
            inputs[operation], state=start, return_state=True
        )
        outputs, state = [], start
        for chunk in np.split(inputs[operation], cuts, axis=1):
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
    timing = {"median_s": median, "q1_s": median, "q3_s": median, "first_call_s": 0.5}
    return ResultRecord(
        variant, "stream", 1, frames, role, side=side, chunk=chunk, threads=1, **timing
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
    listings, points = dict(variants or {}), list(grid)
    return RunRecord(
        "now", "python -m bench", machine, points, settings, listings, configs, roofline=roofline
    )


STREAMS: list[ResultRecord] = [
    *(
        streamed("floor", "floor", side, chunk, us)
        for side in records.SIDES
        for chunk, us in ((1, 1.2), (10, 0.3))
    ),
    # 20 µs a call and 1 µs a frame: 21 µs a frame one at a time, 3 in chunks of ten
    *(
        streamed("fast", "compiled", side, chunk, us)
        for side in records.SIDES
        for chunk, us in ((1, 21.0), (10, 3.0))
    ),
    measured("fast", "compiled", "predict", 1, 1000, 5.0),
]


PEAK = Peak(
    gflops=100.0,
    gbps=1000.0,
    threads=1,
    blas=[{"internal_api": "openblas", "version": "0.3.30", "architecture": "Haswell"}],
)
"""Peaks under which the width-256 model's steps are bound by their FLOPs."""
ROOFLINE_WIDE = wide_models()[ROOFLINE_MODEL]


def peaked_run(peak: Peak | None = PEAK) -> RunRecord:
    """A run of the default model and the width-256 one, with ``peak`` recorded."""
    models = {"default": frae.FRAEConfig(), ROOFLINE_MODEL: ROOFLINE_WIDE}
    grid = [Point(label, 256, 1000, ("predict", "train_step")) for label in models]
    return run_record(grid=grid, models=models, roofline=peak.to_dict() if peak else None)


def on_wide(variant: str, role: str, operation: str, times_the_roofline: float) -> ResultRecord:
    """A measurement of the width-256 model at B=256, T=1000, at ``times_the_roofline``."""
    work = counts(ROOFLINE_WIDE, operation, 256, 1000)
    assert work is not None
    record = measured(variant, role, operation, 256, 1000, times_the_roofline * PEAK.time_us(work))
    return replace(record, model=ROOFLINE_MODEL)


def wide_run(peak: Peak | None = PEAK) -> list[Record]:
    """The route ``jax`` 2× the roofline at predict and 4× at a training step, a slower
    route, a floor far from it, and the default model's ``jax`` (never judged here)."""
    return [
        peaked_run(peak),
        on_wide("matrix", "matrix_floor", "predict", 6.0),
        on_wide("jax", "compiled", "predict", 2.0),
        on_wide("jax", "compiled", "train_step", 4.0),
        on_wide("torch", "baseline", "predict", 5.0),
        on_wide("torch", "baseline", "train_step", 8.0),
        measured("jax", "compiled", "predict", 256, 1000, 1.0),
    ]


def markdown(records: list[Record]) -> str:
    """The Markdown report of ``records``, without plots."""
    return render.markdown(report.sections(records))


def terminal(records: list[Record]) -> str:
    """What the terminal shows of the report of ``records``."""
    return render.terminal(report.sections(records))


def on_models(models: dict[str, frae.FRAEConfig] | None = None) -> RunRecord:
    """The run's record of ``models`` (the default model alone unless given), predict at
    B=1, T=1000 on each."""
    models = models or {"default": frae.FRAEConfig()}
    return run_record(grid=[Point(label, 1, 1000, ("predict",)) for label in models], models=models)


WIDE = frae.FRAEConfig(encoder_units=(64,), latent_dim=16, decoder_units=(64,))
LONG_NAMES = ["numba_floor", "keras_defaults[tensorflow]", "torch_scan[defaults]"]


def quick_like_records() -> list:
    """What a quick run measures: every operation at B=1, T=100 and 1000, predict at B=256,
    figures with many digits."""
    records: list = [on_models()]
    for index, name in enumerate(LONG_NAMES):
        role = "floor" if index == 0 else "baseline"
        for steps in (100, 1000):
            for operation in ("predict", "loss_and_grads", "train_step"):
                us = 12.3456 * (index + 1) * (1 + len(operation) / 10)
                records.append(measured(name, role, operation, 1, steps, us))
        records.append(measured(name, role, "predict", 256, 1000, 12.3456 * (index + 1)))
    return records


RUN = {"kind": "run", "started": "then", "command": "c", "machine": {}, "settings": {}}
RUN |= {"grid": [["default", 1, 10, ["predict"]]], "variants": {}}
RESULT = {"kind": "result", "variant": "reference", "operation": "predict", "batch": 1}
RESULT |= {"steps": 10, "samples": 7, "median_s": 0.04, "q1_s": 0.039, "q3_s": 0.041}
FORMAT_1 = [json.dumps(RUN), json.dumps(RESULT)]
"""A file of format 1: its run line has no ``format``, its measurement no calls."""
