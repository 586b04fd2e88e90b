"""Keras-specific promises of ``keras_rnn``: every Keras backend, one trace (the rate term's
too), ``.keras`` files, the stock ``GRUCell``'s layout, a dropped backend's models reused (never
a caller's), and the export refusals pinned: each refused route is tried against the installed
Keras and framework, so an upgrade that lifts one fails here and shows it can be made."""

from __future__ import annotations

import gc
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import frae
from frae import gru_layout
from frae.config import GRU, PRIOR_LOG_SCALE
from frae.params import initial_weights
from parity_tests.cases import CASES
from parity_tests.checks import assert_same_weights
from parity_tests.tolerances import TOLERANCES, assert_close
from tests.bench_cases import reference_gru_states
from tests.processes import ROOT, python

pytestmark = pytest.mark.backend_specific("keras_rnn")

keras = pytest.importorskip("keras")
keras_model = pytest.importorskip("impls.keras_rnn.model")
keras_backend = pytest.importorskip("impls.keras_rnn.backend")
keras_train = pytest.importorskip("impls.keras_rnn.train")

KERAS_BACKENDS = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
OTHER_BACKEND_CASES = ("default", "state", "state_deep")
"""The kit's cases the runs on the other Keras backends check: both models, and the deeper
state model the weights' transfer runs on (each case compiles anew on each Keras backend)."""
CROSSING = [
    f"parity_tests/test_coding.py::{test}[keras_rnn-{partner}quantized_{case}]"
    for test, partner in (
        ("test_the_bytes_are_the_references_and_within_the_bound", ""),
        ("test_bytes_cross_to_the_partner_and_back", "reference-"),
    )
    for case in ("swish", "state")
]
"""Keras' part, on another of its backends, in the byte crossing between every pair of
backends (``test_bytes_cross_to_the_partner_and_back``): its bytes are the reference's, and
cross to the reference and back."""


@pytest.mark.nested
@pytest.mark.parametrize("keras_backend", list(KERAS_BACKENDS))
def test_parity_suite_passes_on_keras_backend(keras_backend: str) -> None:
    """The kit, keras_rnn's own tests and the benchmark's, in a process whose Keras runs on
    ``keras_backend``; the byte crossing (``CROSSING``) among them."""
    if keras.backend.backend() == keras_backend:
        pytest.skip(f"this process runs Keras on {keras_backend}: the main run covers it")
    if importlib.util.find_spec(KERAS_BACKENDS[keras_backend]) is None:
        pytest.skip(f"{keras_backend} is not installed")
    command = ["-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "parity_tests"]
    # and the benchmark's view of keras_rnn (its defaults baseline), on this Keras backend too
    command += [str(Path(__file__).resolve().relative_to(ROOT))]
    command += ["tests/bench/baselines/test_keras_defaults.py"]
    command += ["--backend", "keras_rnn", "-k", "not test_parity_suite_passes_on_keras_backend"]
    # the exports' refusals (their probes choose each Keras backend) and reuse: the main run's
    command[-1] += " and not refused and not litert and not reused and not dropped_backends"
    # weights, streams and bytes cross to the reference here; to every other framework in
    # the main run, where Keras keeps the same variables on TensorFlow
    command += ["--other-backend", "reference"]
    # the main run checks every case and draws keras_rnn's random configs; here each property
    # is checked on this Keras backend on both models (OTHER_BACKEND_CASES), and one draw of
    # each model checks its compilation of a config no one chose
    command += [f"--case={name}" for name in OTHER_BACKEND_CASES]
    environment = {**os.environ, "KERAS_BACKEND": keras_backend, "FRAE_HYPOTHESIS_EXAMPLES": "1"}
    result = python(*command, env=environment, timeout=1800)
    assert " passed" in result.stdout.splitlines()[-1]
    passed = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("PASSED")}
    assert set(CROSSING) <= passed, sorted(set(CROSSING) - passed)


def test_metadata_names_the_keras_backend() -> None:
    model = frae.create("keras_rnn")
    assert model.metadata["keras_backend"] == keras.backend.backend()


@pytest.mark.parametrize("case_name", ["wide", "state_deep"])
def test_variables_map_one_to_one_onto_canonical_names(case_name: str) -> None:
    model = frae.create("keras_rnn", CASES[case_name].config, seed=2)
    names = [keras_model.canonical_name(v) for v in model.keras_model.weights]
    assert names == list(CASES[case_name].config.parameter_shapes())
    for variable in model.keras_model.weights:
        canonical = keras_model.canonical_name(variable)
        value = keras_model.to_numpy(variable.value)
        np.testing.assert_array_equal(value, model.get_weights()[canonical])


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="on torch keras_rnn runs eagerly: nothing is traced"
)
@pytest.mark.parametrize("case_name", ["default", "state"])
def test_repeated_calls_and_new_states_do_not_retrace(
    monkeypatch: pytest.MonkeyPatch, case_name: str
) -> None:
    """The cell's ``decode_step`` runs only while Keras traces: calls repeated at the same
    shapes, from a new state value or none (the state an input, not a constant), trace nothing."""
    calls = {"count": 0}
    original = keras_model.FRAECell.decode_step

    def counting(self, code, feedback):
        calls["count"] += 1
        return original(self, code, feedback)

    monkeypatch.setattr(keras_model.FRAECell, "decode_step", counting)
    config = CASES[case_name].config
    keras_backend.forget_built()  # models of this config compiled already would trace nothing
    model = frae.create("keras_rnn", config, seed=1)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 9, config.input_dim)).astype(np.float32)
    z = rng.normal(size=(3, 9, config.latent_dim)).astype(np.float32)

    def exercise(state: np.ndarray | None, learning_rate: float) -> None:
        model.predict(x, state=state)
        model.encode(x, state=state, return_state=True)
        model.decode(z, state=state, return_state=True)
        model.loss_and_grads(x)
        model.fit(x, epochs=2, optimizer="adam", learning_rate=learning_rate)

    exercise(rng.normal(size=(3, config.feedback_dim)), 0.01)
    traced = calls["count"]
    assert traced > 0
    exercise(rng.normal(size=(3, config.feedback_dim)), 0.02)
    exercise(None, 0.02)
    assert calls["count"] == traced, "a repeated call or a new state value traced again"


RATE_CONFIGS = {
    "output": frae.FRAEConfig(code_step=2**-3, rate_weight=0.05),
    "state": frae.FRAEConfig(feedback="state", state_dim=8, code_step=2**-3, rate_weight=0.05),
}
"""A config of each model with the rate term (the contract's "Rate: training the codec for its
bits")."""


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="on torch keras_rnn runs eagerly: nothing is traced"
)
@pytest.mark.parametrize("feedback", list(RATE_CONFIGS))
def test_train_steps_with_a_rate_weight_do_not_retrace(
    monkeypatch: pytest.MonkeyPatch, feedback: str
) -> None:
    """The codes' bits are computed only while Keras traces the training step: gradients and
    steps of SGD and Adam repeated at the same shapes, with a new prior and learning rate (the
    prior a variable, not a constant), trace nothing, and the new prior changes the loss."""
    calls = {"count": 0}
    original = keras_train.symbol_bits

    def counting(codes, location, log_scale, step):  # type: ignore[no-untyped-def]
        calls["count"] += 1
        return original(codes, location, log_scale, step)

    monkeypatch.setattr(keras_train, "symbol_bits", counting)
    config = RATE_CONFIGS[feedback]
    keras_backend.forget_built()  # models of this config compiled already would trace nothing
    model = frae.create("keras_rnn", config, seed=1)
    start = model.get_weights()
    x = np.random.default_rng(6).normal(size=(3, 8, config.input_dim)).astype(np.float32)

    def exercise(location: float, learning_rate: float) -> float:
        """The loss at the start's weights with the prior μ = ρ = ``location``; then fits."""
        prior = dict.fromkeys(config.prior_parameters, np.full(config.latent_dim, location))
        model.set_weights({**start, **prior})
        loss, _ = model.loss_and_grads(x)
        for optimizer in ("sgd", "adam"):
            model.fit(x, epochs=2, optimizer=optimizer, learning_rate=learning_rate)
        return loss

    first = exercise(0.1, 0.01)
    traced = calls["count"]
    assert traced > 0
    assert exercise(-0.4, 0.02) != first, "the loss did not read the new prior"
    assert calls["count"] == traced, "a repeated train step with a rate weight traced again"


# the reference's slope in ρ, c / expm1(c) at c = Δ/s ≈ 1e25, overflows to its right value, 0
@pytest.mark.filterwarnings("ignore:overflow encountered in expm1:RuntimeWarning")
@pytest.mark.parametrize("log_scale", [-60.0, 110.0])
def test_floored_symbols_pass_zero_gradients_under_extreme_priors(log_scale: float) -> None:
    """Under s = e^−60 (a slope in s over s² underflows to a division by zero) and s = e^110
    (s overflows, Δ/s rounds to 0) every symbol but those at μ is floored: the loss and every
    gradient are the reference's, none NaN, μ's and ρ's zero, where ``min(FLOOR_BITS, I)``
    alone meets an infinite slope with the floor's zero and makes NaN."""
    config = RATE_CONFIGS["output"]
    weights = initial_weights(config, 9)
    weights[PRIOR_LOG_SCALE] = np.full(config.latent_dim, log_scale, np.float32)
    x = np.random.default_rng(8).uniform(-1, 1, (3, 5, config.input_dim)).astype(np.float32)
    loss, grads = frae.create("keras_rnn", config, weights=weights).loss_and_grads(x)
    expected_loss, expected = frae.create("reference", config, weights=weights).loss_and_grads(x)
    assert_close("loss", np.float32(loss), np.float64(expected_loss))
    for name, value in expected.items():
        assert np.isfinite(grads[name]).all(), name
        assert_close("gradients", grads[name], value, name)
    for name in config.prior_parameters:
        np.testing.assert_array_equal(grads[name], 0.0, name)


@pytest.mark.parametrize("case_name", ["no_encoder_hidden", "state"])
def test_keras_file_round_trip(tmp_path: Path, case_name: str) -> None:
    case = CASES[case_name]
    model = frae.create("keras_rnn", case.config, seed=3)
    model.fit(case.inputs(seed=1), epochs=2, learning_rate=1e-2)
    x = case.inputs(seed=2)
    path = tmp_path / "frae.keras"
    model.keras_model.save(path)
    loaded = keras.saving.load_model(path)
    for saved, restored in zip(model.keras_model.weights, loaded.weights, strict=True):
        assert saved.name == restored.name
        restored_value, saved_value = (keras_model.to_numpy(v.value) for v in (restored, saved))
        np.testing.assert_array_equal(restored_value, saved_value)
    loaded.jit_compile = model.jit_compile  # run as the backend runs: compiling moves ulps
    state = np.random.default_rng(4).normal(size=(len(x), case.config.feedback_dim))
    state = state.astype(np.float32)
    predicted, last = loaded.predict_on_batch([x, state])  # NumPy on every Keras backend
    expected, expected_last = model.predict(x, state=state, return_state=True)
    np.testing.assert_array_equal(np.asarray(predicted), expected)
    np.testing.assert_array_equal(np.asarray(last), expected_last)


def _stock_gru_steps(gru: GRU, weights: dict[str, np.ndarray], codes: np.ndarray) -> np.ndarray:
    """s_1 … s_T of Keras' own ``GRUCell(reset_after=True)`` holding canonical ``weights``
    (through ``gru_layout.to_keras``), stepped from s₀ = 0 on ``codes`` (T, B, L)."""
    cell = keras.layers.GRUCell(gru.state_dim, reset_after=True)
    cell.build((None, gru.input_dim))
    cell.set_weights(gru_layout.to_keras(gru, weights))
    state = keras.ops.zeros((codes.shape[1], gru.state_dim))
    states = []
    for code in codes:
        _, (state,) = cell(keras.ops.convert_to_tensor(code), [state])
        states.append(keras_model.to_numpy(state))
    return np.stack(states)


def test_canonical_gru_weights_map_onto_keras_gru_cell() -> None:
    """Canonical GRU weights in Keras' stock ``GRUCell`` step as the reference does; with reset
    and update swapped the states miss by far more than the tolerance."""
    gru = GRU("decoder/gru", input_dim=2, state_dim=5)
    rng = np.random.default_rng(11)
    weights = {
        name: rng.normal(0.0, 0.8, size=shape).astype(np.float32)
        for name, shape in gru.parameter_shapes().items()
    }
    codes = rng.normal(0.0, 1.0, size=(4, 3, gru.input_dim)).astype(np.float32)
    expected = reference_gru_states(gru, weights, codes)
    assert_close("outputs", _stock_gru_steps(gru, weights, codes), expected, "stock GRUCell")
    swapped = {  # reset and update blocks exchanged
        name: gru_layout.reorder_gates(value, GRU.GATES, gru_layout.KERAS_GATES)
        for name, value in weights.items()
    }
    difference = np.abs(_stock_gru_steps(gru, swapped, codes) - expected).max()
    assert difference > 1000 * TOLERANCES["outputs"].atol, difference


PROBES = {
    "jax": """
import sys, numpy as np, frae
import tensorflow as tf
model = frae.create("keras_rnn")
x, state = np.zeros((1, 3, 2), np.float32), np.zeros((1, 2), np.float32)
model.keras_model([x, state])
model.keras_model.export(sys.argv[1], format="tf_saved_model", verbose=False)
loaded = tf.saved_model.load(sys.argv[1])
try:
    loaded.serve([x, state])
except Exception as error:
    print("refused:", "deserialize" in str(error))
try:
    model.keras_model.export(sys.argv[1] + ".onnx", format="onnx", verbose=False)
except ImportError as error:
    print("refused:", "jax2onnx" in str(error))
""",
    "torch": """
import sys, numpy as np, frae, onnxruntime
model = frae.create("keras_rnn")
x, state = np.zeros((1, 5, 2), np.float32), np.zeros((1, 2), np.float32)
model.keras_model([x, state])
model.keras_model.export(sys.argv[1] + ".onnx", format="onnx", verbose=False)
session = onnxruntime.InferenceSession(sys.argv[1] + ".onnx")
names = [given.name for given in session.get_inputs()]
try:
    session.run(None, dict(zip(names, (x, state))))
except Exception as error:
    print("refused:", "split" in str(error))
""",
}
"""Keras backend -> a script trying each refused route in a process whose Keras runs on it,
printing ``refused: True`` for each that still fails as ``impls/keras_rnn/export.py`` says
(TensorFlow's refusal runs in this process, whose Keras runs on TensorFlow)."""


@pytest.mark.slow
@pytest.mark.parametrize("keras_backend", list(PROBES))
def test_the_refused_routes_still_fail(keras_backend: str, tmp_path: Path) -> None:
    pytest.importorskip(keras_backend)
    pytest.importorskip("onnxruntime")
    environment = {**os.environ, "KERAS_BACKEND": keras_backend}
    artifact = str(tmp_path / "artifact")
    done = python("-c", PROBES[keras_backend], artifact, env=environment, check=False)
    refusals = [line for line in done.stdout.splitlines() if line.startswith("refused:")]
    expected = {"jax": 2, "torch": 1}[keras_backend]
    assert refusals == ["refused: True"] * expected, (done.stdout[-2000:], done.stderr[-3000:])


@pytest.mark.slow
def test_litert_from_keras_on_tensorflow_still_needs_flex_ops(tmp_path: Path) -> None:
    if keras.backend.backend() != "tensorflow":
        pytest.skip("Keras runs on another backend in this process")
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    model = frae.create("keras_rnn")
    x, state = np.zeros((1, 3, 2), np.float32), np.zeros((1, 2), np.float32)
    model.keras_model([x, state])
    path = tmp_path / "model.tflite"
    model.keras_model.export(str(path), format="litert", verbose=False)
    runner = interpreter.Interpreter(model_path=str(path)).get_signature_runner()
    with pytest.raises(RuntimeError, match="FlexTensorListReserve"):
        runner(x=x, state=state)


def test_each_refused_format_says_why(tmp_path: Path) -> None:
    model = frae.create("keras_rnn")
    for format, why in model.export_refusals.items():
        with pytest.raises(ValueError, match="cannot export format"):
            frae.export(model, tmp_path / format, format=format)
        assert why
    assert list(tmp_path.iterdir()) == []


REUSE_CONFIG = frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2, decoder_units=(4,))
"""A config no other test of this worker builds."""


def _exercise(model: frae.Backend, x: np.ndarray) -> dict[str, object]:
    """What ``model`` predicts, and its losses and weights after SGD then Adam."""
    predicted = model.predict(x)
    sgd = model.fit(x, epochs=2, optimizer="sgd", learning_rate=0.3)["loss"]
    adam = model.fit(x, epochs=3, optimizer="adam", learning_rate=0.02)["loss"]
    return {"predict": predicted, "loss": np.float32(sgd + adam), **model.get_weights()}


@pytest.mark.slow
def test_a_dropped_backends_models_serve_the_next_of_its_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A config's second backend, made once the first is gone, traces nothing and ends where a new
    one ends: its weights written, its optimizers' moments and steps zeroed."""
    calls = {"count": 0}
    original = keras_model.FRAECell.step

    def counting(self, inputs, feedback):  # type: ignore[no-untyped-def]
        calls["count"] += 1
        return original(self, inputs, feedback)

    monkeypatch.setattr(keras_model.FRAECell, "step", counting)
    x = frae.data.multi_sine(batch=2, steps=6, features=REUSE_CONFIG.input_dim, seed=2)
    keras_backend.forget_built()
    _exercise(frae.create("keras_rnn", REUSE_CONFIG, seed=1), x)  # dropped at once
    gc.collect()
    traced = calls["count"]
    reused = _exercise(frae.create("keras_rnn", REUSE_CONFIG, seed=2), x)
    if keras.backend.backend() != "torch":  # where Keras runs eagerly, every call steps
        assert calls["count"] == traced, "the second backend of the config traced again"
    keras_backend.forget_built()
    assert_same_weights(reused, _exercise(frae.create("keras_rnn", REUSE_CONFIG, seed=2), x))


def test_models_given_to_a_caller_are_never_reused() -> None:
    """``keras_model`` outlives its backend in the caller's hands: a later backend of the
    config builds its own, and the caller's keeps its weights."""
    keras_backend.forget_built()
    first = frae.create("keras_rnn", REUSE_CONFIG, seed=1)
    held, weights = first.keras_model, first.get_weights()
    del first
    gc.collect()
    frae.create("keras_rnn", REUSE_CONFIG, seed=3)
    for variable in held.weights:
        name = keras_model.canonical_name(variable)
        np.testing.assert_array_equal(keras_model.to_numpy(variable.value), weights[name])
