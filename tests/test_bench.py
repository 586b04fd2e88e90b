"""The benchmark's own correctness: the native floor computes the model, and the harness
writes what it promises.

- The Numba floor (``bench.baselines.numba_floor``), in float64, equals the reference's
  outputs, codes, loss and gradients to float64 rounding, on the default config, on one
  with other sizes and activations and on the parity suite's three state-feedback configs
  (the GRU between the encoder and the decoder, contract section 1b); in float32, as the
  benchmark runs it, within the float32 tolerances.
- The C forward (``bench.baselines.c_forward``) equals the reference's outputs (skipped
  without ``cc``).
- The harness, run from its command line on a tiny grid (floor and reference, predict and a
  training step at B=1, T=20 and 40), writes valid JSON lines, a Markdown report with its sections
  and decodable PNGs.
- The report judges the targets from records alone: it finds variants by role, and its
  verdicts (met, missed, met by those measured, not measured) follow the figures; a
  state-feedback model is judged by its own targets.
- A state-feedback model has a label of its own, and a run of one leaves out, saying why,
  the variants that cannot run it; the rest run it end to end.

Each check is shown to reject a deliberately broken implementation or output. No timing is
asserted anywhere: the figures depend on the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from frae.data import multi_sine
from parity_tests.cases import CASES
from parity_tests.tolerances import assert_close

numba = pytest.importorskip("numba", reason="the floor needs numba: pip install 'frae[bench]'")

from bench.baselines import numba_floor as floor  # noqa: E402
from bench.baselines.c_forward import CForwardBackend, compiler  # noqa: E402
from bench.baselines.layout import flatten, plan, unflatten  # noqa: E402
from bench.records import (  # noqa: E402
    DoneRecord,
    EndRecord,
    Listing,
    Record,
    ResultRecord,
    RunRecord,
    VariantRecord,
    from_json,
    read,
    to_json,
)

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

needs_cc = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc or gcc)")


def _sequences(config: frae.FRAEConfig, seed: int) -> np.ndarray:
    return multi_sine(batch=3, steps=7, features=config.input_dim, seed=seed)


def check_forward(model: frae.Backend, config: frae.FRAEConfig) -> None:
    """``predict``, ``encode`` and ``decode`` of ``model`` against the reference."""
    oracle = frae.create("reference", config, seed=3)
    x = _sequences(config, seed=1)
    assert_close("outputs", model.predict(x), oracle.predict(x), "predict")
    assert_close("outputs", model.encode(x), oracle.encode(x), "encode")
    z = oracle.encode(x)
    assert_close("outputs", model.decode(z), oracle.decode(z), "decode")


def check_gradients(model: frae.Backend, config: frae.FRAEConfig) -> None:
    """Loss and every gradient of ``model`` against the reference, with y ≠ x."""
    oracle = frae.create("reference", config, seed=3)
    x, y = _sequences(config, seed=1), _sequences(config, seed=2)
    loss, grads = model.loss_and_grads(x, y)
    expected_loss, expected = oracle.loss_and_grads(x, y)
    dtype = next(iter(grads.values())).dtype  # the loss is compared in the model's precision
    assert_close("loss", np.asarray(loss, dtype), np.asarray(expected_loss))
    assert grads.keys() == expected.keys()
    for name in expected:
        assert_close("gradients", grads[name], expected[name], name)


class DroppedBiasFloor(floor.NumbaFloor64Backend):
    """Broken: the output layer's bias is lost on the way in (a forgotten offset)."""

    def _write_weights(self, weights: dict[str, Any]) -> None:
        super()._write_weights(
            {**weights, "decoder/output/bias": 0 * weights["decoder/output/bias"]}
        )


class DroppedRecurrentBiasFloor(floor.NumbaFloor64Backend):
    """Broken: the GRU's recurrent bias is lost on the way in."""

    def _write_weights(self, weights: dict[str, Any]) -> None:
        bias = "decoder/gru/recurrent_bias"
        super()._write_weights({**weights, bias: 0 * weights[bias]})


class ShiftedGradientFloor(floor.NumbaFloor64Backend):
    """Broken: gradients read one slot off in the flat vector."""

    def _flat_loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grads = super()._flat_loss_and_grads(x, y)
        return loss, np.roll(grads, 1)


class TruncatedFloor(floor.NumbaFloor64Backend):
    """Broken: back-propagation through the last three steps only (truncated BPTT)."""

    def _flat_loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        loss, _ = super()._flat_loss_and_grads(x, y)
        tail = slice(x.shape[1] - 3, None)
        _, grads = super()._flat_loss_and_grads(x[:, tail], y[:, tail])
        return loss, grads


FLOAT64_CONFIGS = {"default": frae.FRAEConfig(), "other": OTHER_CONFIG, **STATE_CONFIGS}


@pytest.mark.parametrize("config", FLOAT64_CONFIGS.values(), ids=FLOAT64_CONFIGS)
def test_numba_floor_float64_equals_the_reference(config: frae.FRAEConfig) -> None:
    model = floor.NumbaFloor64Backend(config, seed=3)
    check_forward(model, config)
    check_gradients(model, config)


@pytest.mark.parametrize("config", [frae.FRAEConfig(), STATE_CONFIG], ids=["default", "state"])
def test_numba_floor_float32_is_within_float32_tolerances(config: frae.FRAEConfig) -> None:
    """As the benchmark runs it; also a 30-step Adam trajectory through ``fit``."""
    model = floor.NumbaFloorBackend(config, seed=3)
    assert model.predict(_sequences(config, 1)).dtype == np.float32
    check_forward(model, config)
    check_gradients(model, config)
    x = _sequences(config, seed=1)
    trajectory = model.fit(x, epochs=30, learning_rate=1e-2)["loss"]
    expected = frae.create("reference", config, seed=3).fit(x, epochs=30, learning_rate=1e-2)
    assert_close("adam", np.array(trajectory, np.float32), np.array(expected["loss"]))


@pytest.mark.parametrize(
    ("broken", "check", "config"),
    [
        (DroppedBiasFloor, check_forward, frae.FRAEConfig()),
        (ShiftedGradientFloor, check_gradients, frae.FRAEConfig()),
        (TruncatedFloor, check_gradients, frae.FRAEConfig()),
        (DroppedRecurrentBiasFloor, check_forward, STATE_CONFIG),
        (ShiftedGradientFloor, check_gradients, STATE_CONFIG),
        (TruncatedFloor, check_gradients, STATE_CONFIG),
    ],
    ids=[
        "dropped-bias",
        "shifted-gradient",
        "truncated-bptt",
        "state-dropped-recurrent-bias",
        "state-shifted-gradient",
        "state-truncated-bptt",
    ],
)
def test_the_floor_checks_reject_a_broken_floor(
    broken: type[floor.NumbaFloor64Backend], check: Callable[..., None], config: frae.FRAEConfig
) -> None:
    with pytest.raises(AssertionError):
        check(broken(config, seed=3), config)


def test_the_floor_layout_reads_the_concatenation_directly_without_hidden_units() -> None:
    """With no hidden layers the latent and output layers read their inputs' blocks."""
    layout = plan(NO_HIDDEN_CONFIG)
    latent, output = layout.layers
    assert latent[:2] == (0, 4)  # [x_t, x̂_{t-1}]
    assert output[:2] == (layout.code_row, 3)  # [z_t, x̂_{t-1}]
    weights = frae.initial_weights(NO_HIDDEN_CONFIG, seed=5)
    assert all(
        np.array_equal(a, weights[k])
        for k, a in unflatten(flatten(weights, layout, np.float32), layout).items()
    )


def test_the_floor_layout_places_the_gru_between_the_encoder_and_the_decoder() -> None:
    """[x_t, s_{t-1}] in, z_t, the GRU's four blocks and s_t, then the decoder reading s_t;
    s_{t-1} is the one block fed back, and the flat weights hold the GRU's four tensors."""
    config = STATE_CONFIGS["state_deep"]  # F = 3, encoder (12, 6), L = 2, decoder (10, 5), H = 11
    layout = plan(config)
    gru = layout.gru
    assert gru is not None and gru.state == 11
    assert layout.layers[0][:2] == (0, 3 + 11)  # [x_t, s_{t-1}]
    assert layout.code_row == 3 + 11 + 12 + 6
    assert (gru.previous_row, gru.gate_row) == (3, layout.code_row + 2)
    assert gru.state_row == gru.gate_row + 4 * 11
    assert layout.layers[layout.encoder_layers][:2] == (gru.state_row, 11)  # reads s_t
    assert layout.feedback_rows == (3,) and layout.feedback_width == 11
    assert (layout.output_row, layout.rows) == (layout.rows - 3, gru.state_row + 11 + 10 + 5 + 3)
    weights = frae.initial_weights(config, seed=5)
    assert (
        gru.recurrent_kernel == gru.kernel + 2 * 33 and gru.bias == gru.recurrent_kernel + 11 * 33
    )
    round_trip = unflatten(flatten(weights, layout, np.float64), layout)
    assert all(np.array_equal(a, weights[k]) for k, a in round_trip.items())
    assert round_trip.keys() == weights.keys()


@needs_cc
@pytest.mark.parametrize(
    "config",
    [frae.FRAEConfig(), OTHER_CONFIG, NO_HIDDEN_CONFIG],
    ids=["default", "other", "no-hidden"],
)
def test_c_forward_equals_the_reference(config: frae.FRAEConfig) -> None:
    model = CForwardBackend(config, seed=3)
    x = _sequences(config, seed=1)
    assert_close("outputs", model.predict(x), frae.create("reference", config, seed=3).predict(x))


@needs_cc
def test_the_floors_without_a_gru_refuse_a_state_feedback_model() -> None:
    from bench.baselines.matrix_floor import MatrixFloorBackend

    for backend in (CForwardBackend, MatrixFloorBackend):
        with pytest.raises(NotImplementedError, match="no GRU"):
            backend(STATE_CONFIG, seed=3)


@needs_cc
def test_the_c_check_rejects_a_broken_forward() -> None:
    class DroppedBiasC(CForwardBackend):
        def _write_weights(self, weights: dict[str, Any]) -> None:
            bias = weights["decoder/output/bias"]
            super()._write_weights({**weights, "decoder/output/bias": 0 * bias})

    config = frae.FRAEConfig()
    x = _sequences(config, seed=1)
    with pytest.raises(AssertionError):
        assert_close(
            "outputs",
            DroppedBiasC(config, seed=3).predict(x),
            frae.create("reference", config, seed=3).predict(x),
        )


TORCH_ROUTES = {
    "torch_eager": "bench.baselines.torch_eager:TorchEagerBackend",
    **{
        name: f"bench.baselines.torch_routes:{name}"
        for name in (
            "TorchScanPythonWrapperBackend",
            "TorchScanCppGradientBackend",
            "TorchCompiledStepBackend",
            "TorchScriptBackend",
            "TorchAOTIBackend",
        )
    },
}


@pytest.mark.parametrize("route", TORCH_ROUTES.values(), ids=TORCH_ROUTES)
def test_every_torch_route_equals_the_reference(route: str) -> None:
    """The PyTorch routes measured beside torch_scan compute the same maths (AOTInductor's
    inference only)."""
    pytest.importorskip("torch", reason="torch's extra is not installed")
    model = frae.create(route, OTHER_CONFIG, seed=3)
    check_forward(model, OTHER_CONFIG)
    if not route.endswith("AOTIBackend"):
        check_gradients(model, OTHER_CONFIG)


@pytest.mark.skipif(sys.platform != "linux", reason="the carried-over peak is Linux's")
def test_a_workers_peak_memory_is_its_own() -> None:
    """Linux carries a parent's ``ru_maxrss`` into its child; the worker reports its own."""
    ballast = np.ones(2**25)  # 256 MiB resident in this process
    probe = "from bench.worker import peak_rss_mb; print(peak_rss_mb())"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert float(result.stdout) < ballast.nbytes / 2**20 / 2


# The harness, end to end -------------------------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REPORT_SECTIONS = ("## Summary", "## Targets", "## Every measurement", "## Plots")
TINY_OPERATIONS = ("predict", "train_step")


def check_report(out: Path, variants: list[str], operations: tuple[str, ...]) -> None:
    """``out`` holds JSON lines with the run's facts and every (variant, operation) timed,
    a Markdown report with its sections and the plots it links, each a decodable PNG."""
    import matplotlib.image

    found = read(out / "results.jsonl")
    run = found[0]
    assert isinstance(run, RunRecord)
    assert {"platform", "cpu_count", "python", "versions"} <= run.machine.keys()
    assert {"numpy", "numba"} <= run.machine["versions"].keys()
    for variant in variants:
        facts = [r for r in found if isinstance(r, VariantRecord) and r.variant == variant]
        assert facts and facts[0].import_s is not None and facts[0].threads is not None, variant
        for operation in operations:
            rows = [
                r
                for r in found
                if isinstance(r, ResultRecord) and (r.variant, r.operation) == (variant, operation)
            ]
            assert rows, (variant, operation)
            for row in rows:
                assert row.q1_s is not None and row.median_s is not None and row.q3_s is not None
                assert row.q1_s <= row.median_s <= row.q3_s, row
                assert row.median_s > 0 and row.first_call_s and row.peak_rss_mb, row
    text = (out / "report.md").read_text()
    for section in REPORT_SECTIONS:
        assert section in text, section
    images = [line.split("(")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    # one B: no throughput against B to draw
    assert images == ["step_time_vs_T.png", "first_call.png"]
    for image in images:
        assert (out / image).read_bytes().startswith(PNG_SIGNATURE), image
        assert matplotlib.image.imread(out / image).ndim == 3, image


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The command line, as one would measure a few backends at one shape: the report
    folder and what it printed."""
    import contextlib
    import io

    from bench.harness import main

    out = tmp_path_factory.mktemp("bench")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        main(
            [
                "--quick",
                "--variants",
                "numba_floor",
                "reference",
                "torch_eager",
                "--batch",
                "1",
                "--steps",
                "20",
                "40",
                "--operations",
                *TINY_OPERATIONS,
                "--out",
                str(out),
                "--no-progress",
            ]
        )
    return out, printed.getvalue()


def test_the_harness_writes_json_lines_markdown_and_plots(tiny_run: tuple[Path, str]) -> None:
    out, summary = tiny_run
    check_report(out, ["numba_floor", "reference"], TINY_OPERATIONS)
    reference = next(line for line in summary.splitlines() if line.startswith("reference"))
    assert "×)" in reference  # every figure carries its ratio to the floor
    found = read(out / "results.jsonl")
    assert not [r for r in found if isinstance(r, ResultRecord) and r.operation == "loss_and_grads"]
    torch = [r for r in found if isinstance(r, VariantRecord) and r.variant == "torch_eager"]
    assert torch and (torch[0].skipped or torch[0].import_s is not None)


@pytest.mark.parametrize(
    "damage",
    [
        lambda out: (out / "first_call.png").write_bytes(b"not a png"),
        lambda out: (out / "results.jsonl").write_text("{not json\n"),
        lambda out: (out / "report.md").write_text(
            (out / "report.md").read_text().replace("## Targets", "## Goals")
        ),
    ],
    ids=["png", "json", "markdown"],
)
def test_the_report_check_rejects_damaged_output(
    tiny_run: tuple[Path, str], tmp_path: Path, damage: Callable[[Path], object]
) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tiny_run[0], copy)
    damage(copy)
    with pytest.raises((AssertionError, ValueError, OSError, SyntaxError)):
        check_report(copy, ["numba_floor", "reference"], ("predict",))


def measured(
    variant: str, role: str, operation: str, batch: int, steps: int, us_per_step: float
) -> ResultRecord:
    """A timed measurement of ``us_per_step`` µs per time step."""
    median = us_per_step * steps / 1e6
    timing = {"median_s": median, "q1_s": median, "q3_s": median}
    return ResultRecord(variant, operation, batch, steps, role, first_call_s=1.0, **timing)


def test_records_survive_a_json_line_with_their_derived_figures() -> None:
    """Each kind of record comes back equal from its line; a measurement's line also carries
    µs per step and throughput, for readers of the file without ``bench.records``."""
    listing = Listing("reference", "baseline", "the reference", {"KERAS_BACKEND": "jax"})
    records = [
        RunRecord(
            "now",
            "python -m bench",
            {"cpu_count": 2},
            [("default", 1, 20, ("predict",))],
            {},
            {"reference": listing},
        ),
        VariantRecord("reference", "baseline", import_s=0.5, threads={}),
        VariantRecord("torch_eager", "baseline", skipped="needs torch"),
        measured("reference", "baseline", "predict", 3, 20, us_per_step=50.0),
        ResultRecord("reference", "train_step", 3, 20, error="ValueError: no"),
        DoneRecord("reference", 1.5),
        EndRecord(2.5),
    ]
    assert [from_json(to_json(r)) for r in records] == records
    line = json.loads(to_json(records[3]))
    assert line["kind"] == "result"
    assert line["us_per_step"] == pytest.approx(50.0)
    assert line["sequence_steps_per_s"] == pytest.approx(3 * 1e6 / 50.0)


def test_call_costs_split_a_call_into_per_call_and_per_step() -> None:
    """Times made as 300 µs + 0.2 µs·T come back as those two numbers; a second batch size
    and a variant measured at one T only are not fitted."""
    from bench.report import Pivot, call_costs

    def record(variant: str, batch: int, steps: int, seconds: float) -> ResultRecord:
        return ResultRecord(variant, "predict", batch, steps, median_s=seconds)

    records = [record("line", 1, t, 300e-6 + 0.2e-6 * t) for t in (100, 1000, 10000)]
    records += [record("line", 256, t, 1.0) for t in (100, 1000)]
    records += [record("one_length", 1, 1000, 1e-3)]
    (cost,) = call_costs(Pivot.of(records))
    assert (cost.variant, cost.batch, cost.steps) == ("line", 1, (100, 1000, 10000))
    assert cost.per_call_us == pytest.approx(300.0)
    assert cost.per_step_us == pytest.approx(0.2)


def test_targets_find_the_variants_by_role_not_by_name() -> None:
    """A floor, a textbook fix and a compiled backend under names the harness never uses
    are judged: every target over the compiled backends is measured, none is skipped."""
    from bench.report import Pivot, targets

    records = [
        measured("my_floor", "floor", "predict", 1, 1000, 1.0),
        measured("my_floor", "floor", "loss_and_grads", 1, 1000, 2.0),
        measured("my_vector_floor", "simd_floor", "predict", 256, 1000, 10.0),
        measured("my_vector_floor", "simd_floor", "loss_and_grads", 256, 1000, 2.0),
        measured("slow_one", "textbook", "predict", 1, 1000, 1000.0),
        measured("slow_one", "textbook", "train_step", 1, 1000, 1000.0),
        measured("mystery", "compiled", "predict", 1, 1000, 2.0),
        measured("mystery", "compiled", "train_step", 1, 1000, 4.0),
        measured("mystery", "compiled", "predict", 256, 1000, 20.0),
        *(measured("mystery", "compiled", "train_step", b, 10_000, 4.0) for b in (1, 256)),
        measured("mystery", "compiled", "train_step", 256, 1000, 4.0),
        measured("helper", "baseline", "predict", 1, 1000, 0.1),  # not held to the targets
    ]
    outcomes = targets(Pivot.of(records))
    judged = [o for o in outcomes if "compiled" in o.statement or "best" in o.statement]
    assert len(judged) == 11
    for outcome in judged:
        assert "mystery" in outcome.measured and "helper" not in outcome.measured, outcome
        assert outcome.met is not None, outcome


# Each case: a target (by its place in TARGETS), records, the verdict and whether it is met.
VERDICTS = {
    "every-missed-by-the-worst": (
        0,
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 1, 1000, 2.0),
            measured("b", "compiled", "predict", 1, 1000, 4.0),
        ],
        "missed by 1.33×",
        False,
    ),
    "best-met-by-the-best": (
        1,
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 1, 1000, 1.2),
            measured("b", "compiled", "predict", 1, 1000, 4.0),
        ],
        "met, 1.25× to spare",
        True,
    ),
    "every-met-only-by-those-measured": (
        0,
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 1, 1000, 2.0),
            VariantRecord("b", "compiled", skipped="not installed"),
        ],
        "met by those measured, 1.50× to spare",
        None,
    ),
    "training-over-the-floor-gradient": (
        3,
        [
            measured("floor", "floor", "loss_and_grads", 1, 1000, 1.0),
            measured("floor", "floor", "train_step", 1, 1000, 100.0),  # not the divisor
            measured("a", "compiled", "train_step", 1, 1000, 8.0),
        ],
        "missed by 1.33×",
        False,
    ),
    "speed-up-over-the-textbook-fix": (
        4,
        [
            measured("fix", "textbook", "predict", 1, 1000, 200.0),
            measured("a", "compiled", "predict", 1, 1000, 1.0),
        ],
        "missed by 1.50×",
        False,
    ),
    "batching-judges-the-fastest-at-the-large-batch": (
        6,
        [
            measured("a", "compiled", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 256, 1000, 64.0),  # 4× its throughput at B=1
            measured("b", "compiled", "predict", 1, 1000, 100.0),
            measured("b", "compiled", "predict", 256, 1000, 100.0),  # 256×, but slower
        ],
        "missed by 2.00×",
        False,
    ),
    "floor-check-at-every-shape": (
        7,
        [
            measured("floor", "floor", "predict", 1, 100, 1.0),
            measured("floor", "floor", "predict", 1, 1000, 2.0),
            measured("c", "check", "predict", 1, 100, 1.0),
            measured("c", "check", "predict", 1, 1000, 1.0),
        ],
        "missed by 1.33×",
        False,
    ),
    "linear-in-T-against-its-own-T=1000": (
        8,
        [
            measured("a", "compiled", "train_step", 1, 1000, 2.0),
            measured("a", "compiled", "train_step", 1, 10_000, 2.2),
            measured("b", "compiled", "train_step", 1, 1000, 1.0),
            measured("b", "compiled", "train_step", 1, 10_000, 1.0),
        ],
        "met, 1.05× to spare",
        True,
    ),
    "linear-in-T-missed-by-the-worst-at-B=256": (
        9,
        [
            measured("a", "compiled", "train_step", 256, 1000, 10.0),
            measured("a", "compiled", "train_step", 256, 10_000, 30.0),
            measured("b", "compiled", "train_step", 256, 1000, 1.0),
            measured("b", "compiled", "train_step", 256, 10_000, 1.0),
        ],
        "missed by 2.61×",
        False,
    ),
    "best-predict-at-B=256-over-the-simd-floor-not-the-scalar": (
        10,
        [
            measured("scalar", "floor", "predict", 256, 1000, 10.0),
            measured("vector", "simd_floor", "predict", 256, 1000, 4.0),
            measured("a", "compiled", "predict", 256, 1000, 9.0),
            measured("b", "compiled", "predict", 256, 1000, 12.0),
        ],
        "missed by 1.12×",
        False,
    ),
    "best-training-at-B=256-over-the-simd-floors-forward-and-bptt": (
        11,
        [
            measured("vector", "simd_floor", "loss_and_grads", 256, 1000, 4.0),
            measured("vector", "simd_floor", "train_step", 256, 1000, 40.0),
            measured("a", "compiled", "train_step", 256, 1000, 11.0),
            measured("b", "compiled", "train_step", 256, 1000, 30.0),
        ],
        "met, 1.09× to spare",
        True,
    ),
    "not-measured-without-a-floor": (
        0,
        [measured("a", "compiled", "predict", 1, 1000, 2.0)],
        "not measured",
        None,
    ),
}


@pytest.mark.parametrize(("index", "records", "verdict", "met"), VERDICTS.values(), ids=VERDICTS)
def test_a_targets_verdict_follows_the_figures(
    index: int, records: list[Record], verdict: str, met: bool | None
) -> None:
    from bench.report import TARGETS, Pivot, judge

    outcome = judge(TARGETS[index], Pivot.of(records))
    assert (outcome.verdict, outcome.met) == (verdict, met), outcome


FLOOR_RECORDS = [
    measured("scalar", "floor", "predict", 1, 1000, 1.0),
    measured("scalar", "floor", "predict", 256, 1000, 10.0),
    measured("vector", "simd_floor", "predict", 1, 1000, 2.0),
    measured("vector", "simd_floor", "predict", 256, 1000, 4.0),
    measured("a", "compiled", "predict", 1, 1000, 3.0),
    measured("a", "compiled", "predict", 256, 1000, 8.0),
]
# Each case: records, the measurement whose ratio is read, the ratio expected.
FLOOR_CHOICES = {
    "B=1-over-the-scalar-floor-the-faster-there": (FLOOR_RECORDS, ("a", 1), 3.0),
    "B=1-over-the-simd-floor-where-it-is-the-faster": (
        [
            *(r for r in FLOOR_RECORDS if (r.role, r.batch) != ("simd_floor", 1)),
            measured("vector", "simd_floor", "predict", 1, 1000, 0.5),
        ],
        ("a", 1),
        6.0,
    ),
    "B=256-over-the-matrix-floor-where-it-is-the-fastest": (
        [*FLOOR_RECORDS, measured("gemm", "matrix_floor", "predict", 256, 1000, 1.0)],
        ("a", 256),
        8.0,
    ),
    "B=256-over-the-simd-floor": (FLOOR_RECORDS, ("a", 256), 2.0),
    "the-scalar-floor-itself-at-B=256": (FLOOR_RECORDS, ("scalar", 256), 2.5),
    "B=256-without-a-simd-floor-over-the-scalar-one": (
        [r for r in FLOOR_RECORDS if r.role != "simd_floor"],
        ("a", 256),
        0.8,
    ),
    "B=256-the-simd-floor-not-at-this-shape": (
        [r for r in FLOOR_RECORDS if (r.role, r.batch) != ("simd_floor", 256)],
        ("a", 256),
        0.8,
    ),
}


@pytest.mark.parametrize(
    ("records", "measurement", "ratio"), FLOOR_CHOICES.values(), ids=FLOOR_CHOICES
)
def test_the_fastest_floor_at_each_shape_divides(
    records: list[Record], measurement: tuple[str, int], ratio: float
) -> None:
    """×floor is over the fastest floor measured at the same operation and shape, whichever
    its role; the table of every measurement shows the same."""
    from bench.report import Pivot, detail_rows

    pivot = Pivot.of(records)
    name, batch = measurement
    assert pivot.floor_ratio((name, "predict", batch, 1000)) == pytest.approx(ratio)
    (row,) = [r for r in detail_rows(pivot) if (r[0], r[2]) == (name, str(batch))]
    assert row[7] == f"{ratio:.3g}"


SMALL_HLO = """HloModule loop

%body.1 (p: (s32[], f32[2])) -> (s32[], f32[2]) {
  %p = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[2]{0} get-tuple-element(%p), index=1
  %next = s32[] fusion(%i), kind=kLoop, calls=%increment
  %y = f32[2]{0} dot(%x, %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %z = f32[2]{0} copy(%y)
  ROOT %out = (s32[], f32[2]{0}) tuple(%next, %z)
}

%cond.1 (p: (s32[], f32[2])) -> pred[] {
  %p = (s32[], f32[2]{0}) parameter(0)
  ROOT %less = pred[] fusion(%p), kind=kLoop, calls=%compare
}

ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %w = (s32[], f32[2]{0}) while(%init), condition=%cond.1, body=%body.1
  ROOT %r = f32[2]{0} get-tuple-element(%w), index=1
}
"""


def test_loop_kernels_counts_the_work_of_each_loop_body_only() -> None:
    """The body's fusion, dot and copy count; its bookkeeping, the condition and the entry
    computation do not."""
    from collections import Counter

    from bench.kernels import describe, loop_kernels

    loops = loop_kernels(SMALL_HLO)
    assert loops == [Counter({"fusion": 1, "dot": 1, "copy": 1})]
    assert describe(loops, steps_per_iteration=2).endswith("1.5 per time step")


def test_loop_kernels_finds_the_forward_and_backward_loops_of_a_gradient() -> None:
    pytest.importorskip("flax", reason="jax_scan's extra is not installed")
    from bench.kernels import jax_scan_programs, loop_kernels

    programs = jax_scan_programs(frae.FRAEConfig(), multi_sine(batch=1, steps=8))
    assert len(loop_kernels(programs["predict"][0])) == 1
    forward, backward = loop_kernels(programs["loss_and_grads"][0])
    assert sum(forward.values()) > 0 and sum(backward.values()) > 0


def test_the_price_of_autodiff_pairs_each_backend_with_its_hand_written_backward() -> None:
    """A row per framework and B: autodiff's figure, the ``_bptt`` variant's, and their
    ratio; a backend without a hand-written twin gets no row."""
    from bench.report import Pivot, autodiff_rows

    records = [
        measured("jax_scan", "compiled", "loss_and_grads", 1, 1000, 3.0),
        measured("jax_scan", "compiled", "train_step", 1, 1000, 4.0),
        measured("jax_scan_bptt", "compiled", "loss_and_grads", 1, 1000, 2.0),
        measured("jax_scan_bptt", "compiled", "train_step", 1, 1000, 5.0),
        measured("tf_while", "compiled", "loss_and_grads", 1, 1000, 9.0),
    ]
    assert autodiff_rows(Pivot.of(records)) == [
        ["jax_scan", "1", "3", "2", "1.5×", "4", "5", "0.8×"]
    ]


def test_a_variant_runs_its_part_of_the_grid() -> None:
    """A slow variant stops at the caps; a hand-written backward runs its operations at its
    shapes only; a compiled backend runs everything, the width axis included; a loop floor
    runs the default model alone."""
    from bench.harness import SHAPES, VARIANTS, Settings, default_grid, points_for

    grid, settings = default_grid(), Settings()
    by_name = {variant.name: variant for variant in VARIANTS}
    compiled = points_for(by_name["tf_while"], grid, settings)
    assert [point for point in compiled if point[0] == "default"] == grid[: len(SHAPES)]
    assert {ops for model, b, t, ops in grid if (model, b, t) == ("default", 256, 10_000)} == {
        ("train_step",)
    }
    wide = [point for point in compiled if point[0] != "default"]
    assert len({model for model, *_ in wide}) == 2 and len(wide) == 4
    assert {ops for *_, ops in wide} == {("predict", "train_step")}
    by_hand = points_for(by_name["jax_scan_bptt"], grid, settings)
    assert {(b, t) for _, b, t, _ in by_hand} == {(1, 1000), (256, 1000)}
    assert {ops for *_, ops in by_hand} == {("loss_and_grads", "train_step")}
    slow = points_for(by_name["reference"], grid, settings)
    assert max(t for _, _, t, _ in slow) == 1000 and max(b for _, b, _, _ in slow) == 32
    loops = points_for(by_name["numba_floor"], grid, settings)
    assert {model for model, *_ in loops} == {"default"}


# The state-feedback model in the benchmark ---------------------------------------------------

STATE_LABEL = "2-4-3-1-gru8-3-2"
LEFT_OUT = {
    "c_forward": "no GRU",
    "matrix_floor": "no GRU",
    "tf_while_bptt": "written by hand for output feedback",
    "jax_scan_bptt": "written by hand for output feedback",
    "torch_scan_bptt": "written by hand for output feedback",
    "torch_eager": "written for output feedback",
    "torch_compiled_step": "written for output feedback",
    "torch_script": "written for output feedback",
}
"""Variants a state-feedback run leaves out, and a part of the reason it states."""


def test_a_state_feedback_model_has_a_label_of_its_own() -> None:
    """``gruH`` between the latent width and the decoder's; output-feedback labels as they were."""
    from bench.harness import model_label, wide_models

    assert model_label(STATE_CONFIG) == STATE_LABEL
    assert model_label(STATE_CONFIGS["state_no_hidden"]) == "2-1-gru9-2 tanh/swish"
    assert model_label(frae.FRAEConfig()) == "default"
    assert list(wide_models()) == ["2-64-16-64-2", "2-256-16-256-2"]
    assert model_label(OTHER_CONFIG) == "3-5-2-4-6-3 tanh/sigmoid"


def test_a_state_feedback_run_leaves_out_what_cannot_run_it_and_says_why() -> None:
    """Every variant that cannot run the model is left out with its reason; every other one
    keeps its points; an output-feedback run leaves none out."""
    from bench.harness import VARIANTS, Settings, points_for, quick_grid, state_points

    models = {STATE_LABEL: STATE_CONFIG, "default": frae.FRAEConfig()}
    left_out = {}
    for variant in VARIANTS:
        points = points_for(variant, quick_grid(STATE_LABEL), Settings())
        kept, reason = state_points(variant, points, models)
        if reason is not None:
            assert not kept and reason.startswith("cannot run the state-feedback model: ")
            left_out[variant.name] = reason
        else:
            assert kept == points, variant.name
        output = points_for(variant, quick_grid(), Settings())
        assert state_points(variant, output, models) == (output, None), variant.name
    for name, part in LEFT_OUT.items():
        assert part in left_out.pop(name), name
    assert not left_out, left_out
    for name in ("numba_floor", "simd_floor", "jax_scan", "torch_scan", "torch_aoti", "reference"):
        variant = next(v for v in VARIANTS if v.name == name)
        assert state_points(variant, [(STATE_LABEL, 1, 10, ("predict",))], models)[1] is None


def state_run(records: list[Record]) -> list[Record]:
    """``records``, their measurements of the state-feedback model, after the run's record of
    that model."""
    import dataclasses

    run = RunRecord(
        "now", "python -m bench", {}, [], {}, {}, models={STATE_LABEL: STATE_CONFIG.to_dict()}
    )
    return [
        run,
        *(
            dataclasses.replace(r, model=STATE_LABEL) if isinstance(r, ResultRecord) else r
            for r in records
        ),
    ]


def test_a_state_feedback_model_is_judged_by_its_own_targets() -> None:
    """The state model's targets over the floor that runs the GRU, at B=1 and B=256; an
    output-feedback run keeps ``TARGETS``."""
    from bench.report import STATE_TARGETS, TARGETS, Pivot, targets, targets_of

    records = state_run(
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("floor", "floor", "loss_and_grads", 1, 1000, 2.0),
            measured("vector", "simd_floor", "predict", 256, 1000, 10.0),
            measured("vector", "simd_floor", "loss_and_grads", 256, 1000, 20.0),
            measured("a", "compiled", "predict", 1, 1000, 2.0),
            measured("a", "compiled", "train_step", 1, 1000, 4.0),
            measured("a", "compiled", "predict", 256, 1000, 15.0),
            measured("a", "compiled", "train_step", 256, 1000, 40.0),
        ]
    )
    pivot = Pivot.of(records)
    assert pivot.state_feedback and targets_of(pivot) == STATE_TARGETS
    outcomes = targets(pivot)
    assert len(outcomes) == len(STATE_TARGETS)
    assert all(o.statement.startswith("state feedback: ") for o in outcomes)
    assert all(o.met is not None and "a " in o.measured for o in outcomes), outcomes
    output = Pivot.of([RunRecord("now", "python -m bench", {}, [], {}, {}), *records[1:]])
    assert not output.state_feedback and targets_of(output) == TARGETS


# Each case: a state target (by its place in STATE_TARGETS), records, the ratio it judges (the
# worst or the best) and whether it is met.
STATE_VERDICTS = {
    "every-predict-missed-by-the-worst": (
        0,
        [
            measured("floor", "floor", "predict", 1, 1000, 1.0),
            measured("a", "compiled", "predict", 1, 1000, 2.0),
            measured("b", "compiled", "predict", 1, 1000, 10.0),
        ],
        "b 10×",
        False,
    ),
    "best-training-over-the-simd-floors-gradient-at-B=256": (
        5,
        [
            measured("scalar", "floor", "loss_and_grads", 256, 1000, 100.0),
            measured("vector", "simd_floor", "loss_and_grads", 256, 1000, 10.0),
            measured("a", "compiled", "train_step", 256, 1000, 11.0),
            measured("b", "compiled", "train_step", 256, 1000, 90.0),
        ],
        "a 1.1×",
        True,
    ),
    "not-measured-without-a-floor": (
        1,
        [measured("a", "compiled", "predict", 1, 1000, 2.0)],
        "not measured in this run",
        None,
    ),
}


@pytest.mark.parametrize(
    ("index", "records", "judged", "met"), STATE_VERDICTS.values(), ids=STATE_VERDICTS
)
def test_a_state_targets_verdict_follows_the_figures(
    index: int, records: list[Record], judged: str, met: bool | None
) -> None:
    from bench.report import STATE_TARGETS, Pivot, judge

    outcome = judge(STATE_TARGETS[index], Pivot.of(state_run(records)))
    assert outcome.met is met and judged in outcome.measured, outcome


@pytest.fixture(scope="module")
def state_feedback_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The command line on the state-feedback model: the floor, the C check and a
    hand-written backward (both left out), predict and a training step at B=1, T=20."""
    import contextlib
    import io

    from bench.harness import main

    out = tmp_path_factory.mktemp("bench-state")
    with contextlib.redirect_stdout(io.StringIO()):
        main(
            [
                *("--variants", "numba_floor", "c_forward", "jax_scan_bptt"),
                *("--config", json.dumps({"feedback": "state", "state_dim": 8})),
                *("--batch", "1", "--steps", "20", "--operations", *TINY_OPERATIONS),
                *("--out", str(out), "--no-progress"),
            ]
        )
    return out


def test_the_harness_runs_the_state_feedback_model_and_reports_what_it_left_out(
    state_feedback_run: Path,
) -> None:
    found = read(state_feedback_run / "results.jsonl")
    run = found[0]
    assert isinstance(run, RunRecord) and list(run.models) == [STATE_LABEL]
    timed = [r for r in found if isinstance(r, ResultRecord) and r.median_s is not None]
    assert {(r.variant, r.model, r.operation) for r in timed} == {
        ("numba_floor", STATE_LABEL, operation) for operation in TINY_OPERATIONS
    }
    skipped = {r.variant: r.skipped for r in found if isinstance(r, VariantRecord) and r.skipped}
    assert skipped.keys() == {"c_forward", "jax_scan_bptt"}
    text = (state_feedback_run / "report.md").read_text()
    assert f"## Summary at B=1, T=20, model {STATE_LABEL}" in text
    for name, reason in skipped.items():
        assert f"`{name}`" in text and reason and reason in text
    assert "Where the state-feedback model's targets come from" in text
