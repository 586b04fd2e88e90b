"""JAX-specific promises of ``jax_scan``: the NNX layout, float32, one trace per shape (the
state a stream carries an argument, never a constant), transfers only at the interface, and
nothing global changed in the user's process."""

from __future__ import annotations

import dataclasses
import importlib.util
from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import frae
from frae import gru_layout
from frae.codec import rate
from frae.training_state import fresh_state
from impls.reference.model import unroll as reference_unroll
from parity_tests.tolerances import TOLERANCES, assert_close
from tests.bench_cases import check_forward, check_gradients, check_streaming, reference_gru_states
from tests.processes import assert_as_here, bare_environment, last_json, python, use_the_backend

pytestmark = pytest.mark.backend_specific("jax_scan")
jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")
jax_model = pytest.importorskip("impls.jax_scan.model")
jax_train = pytest.importorskip("impls.jax_scan.train")
jax_backend = pytest.importorskip("impls.jax_scan.backend")
nnx = jax_model.nnx

# every size different, no square kernel: a swapped axis or transposed kernel fails
CONFIG = frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2, decoder_units=(4, 6))
STATE_CONFIG = dataclasses.replace(CONFIG, feedback="state", state_dim=9)
RATE_CONFIG = dataclasses.replace(CONFIG, code_step=2**-3, rate_weight=0.05)
STATE_RATE_CONFIG = dataclasses.replace(STATE_CONFIG, code_step=2**-3, rate_weight=0.05)
BATCH, STEPS = 4, 7


def _inputs(seed: int, width: int = CONFIG.input_dim) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=(BATCH, STEPS, width)).astype(np.float32)


@pytest.mark.parametrize(
    "config",
    [CONFIG, STATE_CONFIG, RATE_CONFIG, STATE_RATE_CONFIG],
    ids=["output", "state", "output-rate", "state-rate"],
)
def test_weights_round_trip_through_the_nnx_state(config: frae.FRAEConfig) -> None:
    """Each canonical parameter sits at its path in the module: an ``nnx.Linear``, this
    backend's ``GRUCell`` at ``decoder/gru``, or with a rate weight its ``Prior`` at
    ``prior``."""
    weights = frae.initial_weights(config, seed=1)
    state = jax_model.state_from_weights(weights)
    assert list(jax_model.weights_from_state(state)) == sorted(weights)
    module = nnx.merge(jax_model.graphdef(config), state)
    for name, value in weights.items():
        *layer_path, kind = name.split("/")
        layer = module
        for part in layer_path:
            layer = getattr(layer, part)
        np.testing.assert_array_equal(np.asarray(getattr(layer, kind)[...]), value, err_msg=name)
        if layer_path[-1] == "gru":
            assert isinstance(layer, jax_model.GRUCell), name
        elif layer_path[-1] == "prior":
            assert isinstance(layer, jax_model.Prior), name
        else:
            assert isinstance(layer, nnx.Linear), name
            assert kind == "bias" or (layer.in_features, layer.out_features) == value.shape


def test_remat_and_batch_last_layout_equal_the_reference() -> None:
    """From ``REMAT_MIN_BATCH`` on the gradient recomputes each step, and from
    ``BATCH_LAST_MIN_BATCH`` on the loops run in (features, B) layout (the kit's batches lie
    below both, on the stored, batch-major path)."""
    batch = max(jax_train.REMAT_MIN_BATCH, jax_model.BATCH_LAST_MIN_BATCH)
    model = frae.create("jax_scan", CONFIG, seed=3)
    check_forward(model, CONFIG, batch, steps=6)
    check_gradients(model, CONFIG, batch, steps=6)


GRU_CONFIG = frae.FRAEConfig(input_dim=3, latent_dim=2, feedback="state", state_dim=5)
GRU_BATCH, GRU_STEPS = 3, 4
"""The GRU comparisons' sizes: batch 3, 4 steps, L = 2, H = 5, no two alike."""
GRU_CODES = np.random.default_rng(13).uniform(-2, 2, (GRU_STEPS, GRU_BATCH, GRU_CONFIG.latent_dim))
GRU_CODES = np.float32(GRU_CODES)


def _gru_weights(seed: int) -> tuple[frae.config.GRU, dict[str, np.ndarray]]:
    """``GRU_CONFIG``'s GRU and canonical weights whose GRU entries are N(0, 0.5), no block
    alike; b_U's candidate block is zero, as ``nnx.GRUCell`` has no recurrent bias for it."""
    gru = GRU_CONFIG.gru
    assert gru is not None
    rng = np.random.default_rng(seed)
    weights = frae.initial_weights(GRU_CONFIG) | {
        name: rng.normal(0.0, 0.5, shape).astype(np.float32)
        for name, shape in gru.parameter_shapes().items()
    }
    weights[gru.recurrent_bias][2 * gru.state_dim :] = 0.0
    return gru, weights


def _gru_states(cell: Callable[[np.ndarray, np.ndarray], tuple[object, object]]) -> np.ndarray:
    """s_1 … s_GRU_STEPS of ``cell``, ``(s_{t-1}, z_t) -> (s_t, s_t)``, from s₀ = 0 on
    ``GRU_CODES``."""
    state, states = np.zeros((GRU_BATCH, GRU_CONFIG.state_dim), np.float32), []
    for code in GRU_CODES:
        state, output = cell(state, code)
        np.testing.assert_array_equal(np.asarray(output), np.asarray(state))
        state = np.asarray(state)
        states.append(state)
    return np.stack(states)


def _stock_cell(gru: frae.config.GRU, weights: dict[str, np.ndarray]) -> nnx.GRUCell:
    cell = nnx.GRUCell(gru.input_dim, gru.state_dim, rngs=nnx.Rngs(0))
    nnx.update(cell, jax_model.stock_gru_cell_state(weights, gru))
    return cell


def test_canonical_gates_in_flax_stock_gru_cell_equal_the_reference() -> None:
    """Canonical GRU weights in ``nnx.GRUCell`` and in this backend's ``GRUCell`` step as the
    reference does; with reset and update swapped the stock cell misses by far."""
    gru, weights = _gru_weights(seed=14)
    expected = reference_gru_states(gru, weights, GRU_CODES)
    model = nnx.merge(jax_model.graphdef(GRU_CONFIG), jax_model.state_from_weights(weights))
    for name, cell in {"nnx.GRUCell": _stock_cell(gru, weights), "own": model.decoder.gru}.items():
        assert_close("outputs", _gru_states(cell), expected, name)
    keras_order = {  # reset and update blocks exchanged
        name: gru_layout.reorder_gates(weights[name], gru.GATES, gru_layout.KERAS_GATES)
        for name in gru.parameter_shapes()
    }
    swapped = _gru_states(_stock_cell(gru, weights | keras_order))
    tolerance = TOLERANCES["outputs"]
    error = np.abs(swapped - expected).max()
    assert error > 100 * (tolerance.atol + tolerance.rtol * np.abs(expected).max()), error


# the contract's "Rate: training the codec for its bits": a floored symbol passes no gradient,
# which float32 autodiff of min(FLOOR_BITS, I) breaks where I's own slopes overflow
OVERFLOWING_LOCATION, OVERFLOWING_LOG_SCALE = [0.3, 0.0], [-60.0, 100.0]
"""Priors whose float32 slopes overflow: s = e^−60, under which every code costs far past
the floor but μ's own symbol, 0 bits; and s = e^100, past float32's range, under which every
code is floored."""


def test_floored_symbols_pass_no_gradient_where_their_slopes_overflow() -> None:
    """``train.symbol_bits`` and its gradients in the codes, μ and ρ equal
    ``frae.codec.rate``'s, exactly: the floor or 0 bits, and zero slopes, none NaN."""
    step = RATE_CONFIG.code_step
    assert step is not None
    codes = (step * np.arange(-3, 5)[:, None] * np.ones(2)).astype(np.float32)  # (8, L = 2)
    prior = (
        np.array(OVERFLOWING_LOCATION, np.float32),
        np.array(OVERFLOWING_LOG_SCALE, np.float32),
    )

    def total_bits(codes: object, location: object, log_scale: object) -> object:
        return jax_train.symbol_bits(codes, location, log_scale, step).sum()

    bits = jax_train.symbol_bits(codes, *prior, step)
    grads = jax.grad(total_bits, argnums=(0, 1, 2))(codes, *prior)
    with np.errstate(over="ignore"):  # float64's expm1(Δ/s) is infinite too: c / expm1(c) = 0
        expected = rate.slopes(codes, *prior, step)
    np.testing.assert_array_equal(bits, rate.symbol_bits(codes, *prior, step))
    assert (np.asarray(bits) == rate.FLOOR_BITS).any() and (np.asarray(bits) == 0.0).any()
    for name, grad, slope in zip(("code", "μ", "ρ"), grads, expected, strict=True):
        np.testing.assert_array_equal(grad, slope if name == "code" else slope.sum(0), name)


def _traced_unrolls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, dict[str, object]]]:
    """T and the keyword arguments of each trace of ``model.unroll`` from now on."""
    traces: list[tuple[int, dict[str, object]]] = []
    unroll = jax_model.unroll

    def recorded_unroll(*args: object, **kwargs: object) -> object:
        traces.append((args[2].shape[1], kwargs))
        return unroll(*args, **kwargs)

    monkeypatch.setattr(jax_model, "unroll", recorded_unroll)
    return traces


def _by_t(traces: list[tuple[int, dict[str, object]]]) -> Counter[int]:
    return Counter(steps for steps, _ in traces)


@pytest.mark.usefixtures("fresh_compiled_code")
def test_state_model_at_large_batches_takes_no_output_only_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From ``BATCH_LAST_MIN_BATCH`` and ``REMAT_MIN_BATCH`` on, the state model still runs
    batch-major and stores each step, and equals the reference."""
    batch = max(jax_model.BATCH_LAST_MIN_BATCH, jax_train.REMAT_MIN_BATCH)
    traces = _traced_unrolls(monkeypatch)
    model = frae.create("jax_scan", STATE_CONFIG, seed=3)
    check_forward(model, STATE_CONFIG, batch, steps=5)
    check_gradients(model, STATE_CONFIG, batch, steps=5)
    assert len(traces) == 4  # predict, encode, decode and the gradient
    assert not any(kwargs.get("batch_last") or kwargs.get("remat") for _, kwargs in traces)


def _device_results(model: frae.Backend) -> dict[str, object]:
    """Every array the jitted functions return, before any conversion to NumPy."""
    compiled = jax_backend.compiled(model.config)
    params, packed = model.params, model.packed  # type: ignore[attr-defined]
    x, y = _inputs(seed=4), _inputs(seed=5)
    state = model.initial_state(BATCH)
    results: dict[str, object] = {
        "packed": packed,
        "predict": compiled.predict(packed, x, state),
        "encode": compiled.encode(packed, x, state),
        "decode": compiled.decode(packed, _inputs(seed=6, width=CONFIG.latent_dim), state),
        "loss_and_grads": compiled.loss_and_grads(params, x, y),
    }
    for name, train_step in compiled.train_steps.items():
        rate = np.float32(1e-2)
        state = compiled.optimizer_inits[name](params)
        results[f"{name} step"] = train_step(params, state, rate, x, y)
    return results


def test_float32_throughout() -> None:
    model = frae.create("jax_scan", CONFIG, seed=3)
    x = _inputs(seed=7)
    assert model.predict(x).dtype == np.float32
    assert model.encode(x).dtype == np.float32
    assert model.decode(model.encode(x)).dtype == np.float32
    assert all(grad.dtype == np.float32 for grad in model.loss_and_grads(x)[1].values())
    model.fit(x, epochs=2, optimizer="adam")
    for what, result in _device_results(model).items():
        for path, leaf in jax.tree_util.tree_leaves_with_path(result):
            allowed = (np.int32,) if "count" in jax.tree_util.keystr(path) else (np.float32,)
            assert leaf.dtype in allowed, f"{what}{jax.tree_util.keystr(path)}: {leaf.dtype}"
    assert all(value.dtype == np.float32 for value in model.params.values())  # type: ignore[attr-defined]
    assert not jax.config.jax_enable_x64


TRACED_CALLS: dict[str, Callable[[frae.Backend, np.ndarray], object]] = {
    "predict": lambda model, x: model.predict(x),
    "encode": lambda model, x: model.encode(x),
    "decode": lambda model, x: model.decode(x[..., : CONFIG.latent_dim]),
    "loss_and_grads": lambda model, x: model.loss_and_grads(x, x[::-1]),
    "sgd step": lambda model, x: model.fit(x, epochs=2, optimizer="sgd", learning_rate=0.1),
    "adam step": lambda model, x: model.fit(
        x, batch_size=2, optimizer="adam", learning_rate=0.01 + abs(float(x[0, 0, 0]))
    ),
}


ONE_TRACE_CASES = [pytest.param(CONFIG, call, id=call) for call in TRACED_CALLS] + [
    pytest.param(RATE_CONFIG, call, id=f"{call}-rate")
    for call in ("loss_and_grads", "sgd step", "adam step")
]
"""Every call on ``CONFIG``; the training calls, which the rate term joins, on ``RATE_CONFIG``."""


def _new_weights(config: frae.FRAEConfig, seed: int) -> dict[str, np.ndarray]:
    """Initial weights of ``seed``, and a learned prior (if any) that differs with it."""
    prior = {
        name: np.full(config.latent_dim, seed / 4, np.float32) for name in config.prior_parameters
    }
    return frae.initial_weights(config, seed=seed) | prior


@pytest.mark.parametrize(("config", "call_name"), ONE_TRACE_CASES)
def test_one_trace_per_shape(
    monkeypatch: pytest.MonkeyPatch, config: frae.FRAEConfig, call_name: str
) -> None:
    """Repeated calls with new values, new weights (a new prior too) or a new instance reuse
    the compiled code."""
    call = TRACED_CALLS[call_name]
    traces = _traced_unrolls(monkeypatch)
    jax_backend.compiled.cache_clear()  # compile afresh, so that the first call must trace
    model = frae.create("jax_scan", config, seed=4)
    for seed in range(3):
        call(model, _inputs(seed=seed))
        model.set_weights(_new_weights(config, seed))
    call(frae.create("jax_scan", config, seed=5), _inputs(seed=4))
    assert _by_t(traces) == {STEPS: 1}
    call(model, _inputs(seed=5)[:, :3])
    assert _by_t(traces) == {STEPS: 1, 3: 1}, "a new shape should trace once more"


# the contract's "Streaming": the feedback a call starts from is an argument of the
# jitted functions, so one compilation per chunk length serves every state


@pytest.mark.parametrize("method", ["predict", "encode", "decode"])
@pytest.mark.parametrize("config", [CONFIG, STATE_CONFIG], ids=["output", "state"])
@pytest.mark.usefixtures("fresh_compiled_code")
def test_a_new_state_compiles_nothing(
    monkeypatch: pytest.MonkeyPatch, config: frae.FRAEConfig, method: str
) -> None:
    """Calls from zeros and two other states trace and compile once per T, and the state
    changes the outputs; a new T compiles once more."""
    traces = _traced_unrolls(monkeypatch)
    model = frae.create("jax_scan", config, seed=18)
    call = getattr(model, method)
    sequences = _inputs(
        seed=19, width=config.latent_dim if method == "decode" else config.input_dim
    )
    rng = np.random.default_rng(20)
    first, second = (rng.uniform(-1.0, 1.0, (BATCH, config.feedback_dim)) for _ in "ab")
    from_zeros = call(sequences)
    from_first, _ = call(sequences, state=first, return_state=True)
    from_second = call(sequences, state=second)
    compiled = getattr(jax_backend.compiled(config), method)
    assert _by_t(traces) == {STEPS: 1} and compiled._cache_size() == 1
    assert not np.allclose(from_first, from_second) and not np.allclose(from_zeros, from_first)
    call(sequences[:, :3], state=first)
    assert _by_t(traces) == {STEPS: 1, 3: 1} and compiled._cache_size() == 2


def test_chained_chunks_at_a_large_batch_equal_one_call_of_the_reference() -> None:
    """From ``BATCH_LAST_MIN_BATCH`` on the output model's loop runs batch-last, its state
    transposed in and out: chained chunks still give the reference's one call and last state
    (the state model takes the kit's path at any batch)."""
    batch = jax_model.BATCH_LAST_MIN_BATCH
    check_streaming(frae.create("jax_scan", CONFIG, seed=3), CONFIG, batch=batch)


UNROLL_LAYOUTS = [
    pytest.param(CONFIG, {"steps_per_iteration": 4}, id="output-unrolled"),
    pytest.param(CONFIG, {"remat": True}, id="output-remat"),
    pytest.param(CONFIG, {"batch_last": True}, id="output-batch_last"),
    pytest.param(STATE_CONFIG, {"steps_per_iteration": 4}, id="state-unrolled"),
]


@pytest.mark.parametrize(("config", "layout"), UNROLL_LAYOUTS)
@pytest.mark.parametrize("codes_given", [False, True], ids=["x", "z"])
def test_every_layout_of_unroll_starts_from_the_state(
    config: frae.FRAEConfig, layout: dict[str, object], codes_given: bool
) -> None:
    """``unroll`` in each layout a gradient or a large batch takes, from a given state,
    equals the reference's from it: x̂, z and the last feedback."""
    weights = frae.initial_weights(config, seed=23)
    sequences = _inputs(seed=24, width=config.latent_dim if codes_given else config.input_dim)
    start = _inputs(seed=25, width=config.feedback_dim)[:, 0]
    results = jax_model.unroll(
        config, weights, sequences, codes_given=codes_given, state=start, **layout
    )
    expected = reference_unroll(
        config,
        {name: np.float64(value) for name, value in weights.items()},
        np.float64(sequences),
        codes_given=codes_given,
        state=np.float64(start),
    )
    for name, actual, wanted in zip(("x̂", "z", "last feedback"), results, expected, strict=True):
        assert_close("outputs", np.asarray(actual), wanted, name)


def test_compiled_calls_move_nothing_between_host_and_device() -> None:
    """Given inputs on the device, the compiled calls send nothing to it and bring nothing back
    (but the loss, the interface's float)."""
    model = frae.create("jax_scan", CONFIG, seed=6)
    x, y = (jax.device_put(_inputs(seed)) for seed in (8, 9))
    z = jax.device_put(_inputs(seed=10, width=CONFIG.latent_dim))
    state = jax.device_put(_inputs(seed=11)[:, 0])
    for call in (model._predict, model._encode, lambda _, s: model._decode(z, s)):
        call(x, state)  # compile outside the guard
        with jax.transfer_guard("disallow"):
            jax.block_until_ready(call(x, state))
    model._loss_and_grads(x, y)
    fresh = fresh_state("adam", CONFIG)
    model._train_step("adam", 1e-2, fresh)[0](x, y)
    with jax.transfer_guard_host_to_device("disallow"):
        model._loss_and_grads(x, y)
        step, _ = model._train_step("adam", 1e-2, fresh)
        step(x, y)
        step(x, y)


PROBE = """
import json, os, sys
before = dict(os.environ)
{code}
import jax
changed = sorted(k for k in {{*before, *os.environ}} if before.get(k) != os.environ.get(k))
print(json.dumps({{
    "env": changed,
    "config": {{k: repr(v) for k, v in jax.config.values.items()}},
    "modules": sorted(m for m in ("tensorflow", "keras", "torch", "numba") if m in sys.modules),
    "devices": [str(d) for d in jax.devices()],
    "output": output,
}}))
"""


def _probe(code: str) -> dict[str, object]:
    done = python("-c", PROBE.format(code=code), env=bare_environment())
    return {**last_json(done), "stderr": done.stderr}


USE_THE_BACKEND = use_the_backend("jax_scan")


@pytest.mark.slow
def test_the_backend_changes_nothing_global() -> None:
    """Environment, JAX's settings, devices and imported frameworks are what importing JAX,
    Flax and optax alone makes them."""
    baseline = _probe(
        "import jax, flax.nnx, optax\njax.numpy.ones(3).block_until_ready()\noutput = None"
    )
    used = _probe(USE_THE_BACKEND)
    for key in ("env", "config", "devices", "modules", "stderr"):
        assert used[key] == baseline[key], key
    assert_as_here(used["output"], USE_THE_BACKEND)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow")
def test_the_backend_works_after_tensorflow_was_imported() -> None:
    used = _probe(f"import tensorflow\n{USE_THE_BACKEND}")
    assert "tensorflow" in used["modules"]
    assert_as_here(used["output"], USE_THE_BACKEND)


@pytest.fixture
def fresh_compiled_code() -> Iterator[None]:
    """Compile afresh in the test, and drop what it compiled afterwards (it may be broken)."""
    jax_backend.compiled.cache_clear()
    yield
    jax_backend.compiled.cache_clear()
