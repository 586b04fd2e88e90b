"""JAX-specific promises of ``jax_scan``: the NNX layout, float32, one trace per shape (the
state a stream carries an argument, never a constant), transfers only at the interface, and
nothing global changed in the user's process."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import frae
from frae.training_state import fresh_state
from impls.reference.model import gru_step
from impls.reference.model import unroll as reference_unroll
from parity_tests.tolerances import TOLERANCES, assert_close

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
STATE_CONFIG = frae.FRAEConfig(
    input_dim=3,
    encoder_units=(5,),
    latent_dim=2,
    decoder_units=(4, 6),
    feedback="state",
    state_dim=9,
)
BATCH, STEPS = 4, 7


def _inputs(seed: int, width: int = CONFIG.input_dim) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=(BATCH, STEPS, width)).astype(np.float32)


def test_weights_round_trip_through_the_nnx_state() -> None:
    weights = frae.initial_weights(CONFIG, seed=1)
    state = jax_model.state_from_weights(weights)
    back = jax_model.weights_from_state(state)
    assert sorted(back) == sorted(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(np.asarray(back[name]), value, err_msg=name)
    module = nnx.merge(jax_model.graphdef(CONFIG), state)
    for name, value in weights.items():
        *layer_path, kind = name.split("/")
        layer = module
        for part in layer_path:
            layer = getattr(layer, part)
        assert isinstance(layer, nnx.Linear), name
        np.testing.assert_array_equal(np.asarray(getattr(layer, kind)[...]), value, err_msg=name)
        if kind == "kernel":
            assert (layer.in_features, layer.out_features) == value.shape, name


def test_state_weights_round_trip_through_the_nnx_state() -> None:
    """The state model's GRU is this backend's ``GRUCell`` at ``("decoder", "gru")``, its
    parameters at the canonical paths; the dense layers are as in the output model."""
    weights = frae.initial_weights(STATE_CONFIG, seed=1)
    state = jax_model.state_from_weights(weights)
    back = jax_model.weights_from_state(state)
    assert list(back) == sorted(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(np.asarray(back[name]), value, err_msg=name)
    module = nnx.merge(jax_model.graphdef(STATE_CONFIG), state)
    assert isinstance(module.decoder.gru, jax_model.GRUCell)
    assert isinstance(module.decoder.output, nnx.Linear)
    gru = STATE_CONFIG.gru
    for name in gru.parameter_shapes():
        kind = name.rpartition("/")[2]
        np.testing.assert_array_equal(
            np.asarray(getattr(module.decoder.gru, kind)[...]), weights[name], err_msg=name
        )


@pytest.mark.parametrize("config", [CONFIG, STATE_CONFIG], ids=["output", "state"])
def test_scan_equals_the_cell_stepped_in_a_python_loop(config: frae.FRAEConfig) -> None:
    weights = frae.initial_weights(config, seed=2)
    module = nnx.merge(jax_model.graphdef(config), jax_model.state_from_weights(weights))
    x = _inputs(seed=3)
    start = _inputs(seed=4, width=config.feedback_dim)[:, 0]
    outputs, codes, last = jax_model.unroll(config, weights, x, state=start)
    feedback = start
    for t in range(STEPS):
        feedback, (output, code) = module.step(feedback, x[:, t])
        assert_close("self", np.asarray(output), np.asarray(outputs[:, t]), f"x̂ at {t}")
        assert_close("self", np.asarray(code), np.asarray(codes[:, t]), f"z at {t}")
    assert_close("self", np.asarray(last), np.asarray(feedback), "last feedback")


@pytest.mark.parametrize(
    "batch", [jax_train.REMAT_MIN_BATCH - 1, jax_train.REMAT_MIN_BATCH], ids=["stored", "remat"]
)
def test_both_gradient_strategies_equal_the_reference(batch: int) -> None:
    """Below ``REMAT_MIN_BATCH`` the gradient stores each step (unrolled scan), from it on it
    recomputes each step; the parity cases' batches are all below, so both are checked here."""
    rng = np.random.default_rng(7)
    x, y = (rng.uniform(-1.0, 1.0, (batch, 5, CONFIG.input_dim)).astype(np.float32) for _ in "xy")
    loss, grads = frae.create("jax_scan", CONFIG, seed=8).loss_and_grads(x, y)
    expected_loss, expected = frae.create("reference", CONFIG, seed=8).loss_and_grads(x, y)
    assert_close("loss", np.float32(loss), np.float64(expected_loss))
    for name, grad in grads.items():
        assert_close("gradients", grad, expected[name], name)


@pytest.mark.parametrize(
    "batch",
    [jax_model.BATCH_LAST_MIN_BATCH - 1, jax_model.BATCH_LAST_MIN_BATCH],
    ids=["batch_major", "batch_last"],
)
def test_both_layouts_equal_the_reference(batch: int) -> None:
    """From ``BATCH_LAST_MIN_BATCH`` on the loops run in (features, B) layout; the parity
    cases' batches are all below, so both layouts are checked here, forward and decoder."""
    rng = np.random.default_rng(9)
    x = rng.uniform(-1.0, 1.0, (batch, 6, CONFIG.input_dim)).astype(np.float32)
    z = rng.uniform(-1.0, 1.0, (batch, 6, CONFIG.latent_dim)).astype(np.float32)
    model, oracle = (
        frae.create("jax_scan", CONFIG, seed=3),
        frae.create("reference", CONFIG, seed=3),
    )
    assert_close("outputs", model.predict(x), oracle.predict(x))
    assert_close("outputs", model.encode(x), oracle.encode(x), "codes")
    assert_close("outputs", model.decode(z), oracle.decode(z))


GRU_CONFIG = frae.FRAEConfig(input_dim=3, latent_dim=2, feedback="state", state_dim=5)
GRU_BATCH, GRU_STEPS = 3, 4
"""The GRU comparisons' sizes: batch 3, 4 steps, L = 2, H = 5, no two alike."""


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


def _gates_swapped(gru: frae.config.GRU, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``weights`` with the GRU's reset and update column blocks exchanged (Keras' order)."""
    width = gru.state_dim
    order = np.r_[width : 2 * width, 0:width, 2 * width : 3 * width]
    return weights | {name: weights[name][..., order] for name in gru.parameter_shapes()}


def _gru_states(cell: Callable[[np.ndarray, np.ndarray], tuple[object, object]]) -> np.ndarray:
    """s_1 … s_GRU_STEPS of ``cell``, ``(s_{t-1}, z_t) -> (s_t, s_t)``, from s₀ = 0 on
    random codes."""
    rng = np.random.default_rng(13)
    codes = rng.uniform(-2.0, 2.0, (GRU_STEPS, GRU_BATCH, GRU_CONFIG.latent_dim))
    state, states = np.zeros((GRU_BATCH, GRU_CONFIG.state_dim)), []
    for code in codes.astype(np.float32):
        state, output = cell(state.astype(np.float32), code)
        np.testing.assert_array_equal(np.asarray(output), np.asarray(state))
        state = np.asarray(state)
        states.append(state)
    return np.stack(states)


def _reference_gru_states(gru: frae.config.GRU, weights: dict[str, np.ndarray]) -> np.ndarray:
    """``_gru_states`` of the float64 reference's ``gru_step``."""
    params = {name: np.float64(value) for name, value in weights.items()}
    return _gru_states(lambda s, z: (gru_step(params, gru, np.float64(z), np.float64(s))[0],) * 2)


def _stock_cell(gru: frae.config.GRU, weights: dict[str, np.ndarray]) -> nnx.GRUCell:
    """Flax's own ``nnx.GRUCell`` holding ``weights`` through ``stock_gru_cell_state``."""
    cell = nnx.GRUCell(gru.input_dim, gru.state_dim, rngs=nnx.Rngs(0))
    nnx.update(cell, jax_model.stock_gru_cell_state(weights, gru))
    return cell


def test_canonical_gates_in_flax_stock_gru_cell_equal_the_reference() -> None:
    """Canonical GRU weights through the layout mapping into ``nnx.GRUCell``, and through
    ``state_from_weights`` into this backend's ``GRUCell``, step as the reference does; with
    the reset and update blocks swapped the stock cell errs by far more than the tolerance,
    so a swapped gate cannot pass."""
    gru, weights = _gru_weights(seed=14)
    expected = _reference_gru_states(gru, weights)
    model = nnx.merge(jax_model.graphdef(GRU_CONFIG), jax_model.state_from_weights(weights))
    for name, cell in {"nnx.GRUCell": _stock_cell(gru, weights), "own": model.decoder.gru}.items():
        assert_close("outputs", _gru_states(cell), expected, name)
    swapped = _gru_states(_stock_cell(gru, _gates_swapped(gru, weights)))
    tolerance = TOLERANCES["outputs"]
    error = np.abs(swapped - expected).max()
    assert error > 100 * (tolerance.atol + tolerance.rtol * np.abs(expected).max()), error


def test_stock_gru_cell_state_refuses_a_candidate_recurrent_bias() -> None:
    gru, weights = _gru_weights(seed=15)
    weights[gru.recurrent_bias][-1] = 0.25
    with pytest.raises(ValueError, match="candidate block must be zero"):
        jax_model.stock_gru_cell_state(weights, gru)


@pytest.mark.usefixtures("fresh_compiled_code")
def test_state_model_at_large_batches_takes_no_output_only_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From ``BATCH_LAST_MIN_BATCH`` and ``REMAT_MIN_BATCH`` on, the state model still runs
    batch-major and stores each step, and equals the reference."""
    batch = max(jax_model.BATCH_LAST_MIN_BATCH, jax_train.REMAT_MIN_BATCH)
    options: list[dict[str, object]] = []
    unroll = jax_model.unroll

    def recorded_unroll(*args: object, **kwargs: object) -> object:
        options.append(kwargs)
        return unroll(*args, **kwargs)

    monkeypatch.setattr(jax_model, "unroll", recorded_unroll)
    rng = np.random.default_rng(16)
    shape = (batch, 5, STATE_CONFIG.input_dim)
    x, y = (rng.uniform(-1.0, 1.0, shape).astype(np.float32) for _ in "xy")
    model = frae.create("jax_scan", STATE_CONFIG, seed=17)
    oracle = frae.create("reference", STATE_CONFIG, seed=17)
    assert_close("outputs", model.predict(x), oracle.predict(x))
    loss, grads = model.loss_and_grads(x, y)
    expected_loss, expected = oracle.loss_and_grads(x, y)
    assert_close("loss", np.float32(loss), np.float64(expected_loss))
    for name, grad in grads.items():
        assert_close("gradients", grad, expected[name], name)
    assert len(options) == 2
    assert not any(kwargs.get("batch_last") or kwargs.get("remat") for kwargs in options)


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


def _counted_traces(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """Traces of ``model.unroll`` by T, counted from now on."""
    traces: Counter[int] = Counter()
    unroll = jax_model.unroll

    def counted_unroll(*args: object, **kwargs: object) -> object:
        traces[args[2].shape[1]] += 1  # by T
        return unroll(*args, **kwargs)

    monkeypatch.setattr(jax_model, "unroll", counted_unroll)
    return traces


@pytest.mark.parametrize("call", TRACED_CALLS.values(), ids=TRACED_CALLS)
def test_one_trace_per_shape(
    monkeypatch: pytest.MonkeyPatch, call: Callable[[frae.Backend, np.ndarray], object]
) -> None:
    """Repeated calls with new values, new weights or a new instance reuse the compiled code."""
    traces = _counted_traces(monkeypatch)
    jax_backend.compiled.cache_clear()  # compile afresh, so that the first call must trace
    model = frae.create("jax_scan", CONFIG, seed=4)
    for seed in range(3):
        call(model, _inputs(seed=seed))
        model.set_weights(frae.initial_weights(CONFIG, seed=seed))
    call(frae.create("jax_scan", CONFIG, seed=5), _inputs(seed=4))
    assert traces == {STEPS: 1}
    call(model, _inputs(seed=5)[:, :3])
    assert traces == {STEPS: 1, 3: 1}, "a new shape should trace once more"


# the contract's "Streaming": the feedback a call starts from is an argument of the
# jitted functions, so one compilation per chunk length serves every state


@pytest.mark.parametrize("method", ["predict", "encode", "decode"])
@pytest.mark.parametrize("config", [CONFIG, STATE_CONFIG], ids=["output", "state"])
@pytest.mark.usefixtures("fresh_compiled_code")
def test_a_new_state_compiles_nothing(
    monkeypatch: pytest.MonkeyPatch, config: frae.FRAEConfig, method: str
) -> None:
    """A call without a state (zeros passed in), calls from two other states, with and
    without ``return_state``: one trace and one compiled program per T. The outputs differ,
    so the state is not ignored; a new T traces and compiles once more."""
    traces = _counted_traces(monkeypatch)
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
    assert traces == {STEPS: 1} and compiled._cache_size() == 1
    assert not np.allclose(from_first, from_second) and not np.allclose(from_zeros, from_first)
    call(sequences[:, :3], state=first)
    assert traces == {STEPS: 1, 3: 1} and compiled._cache_size() == 2


def _chained(model: frae.Backend, method: str, sequences: np.ndarray) -> tuple[object, object]:
    """``method`` over chunks of 1, 2 and 4 steps, each from the state the one before
    returned: the outputs joined, and the last state."""
    outputs, state = [], None
    for chunk in np.split(sequences, [1, 3], axis=1):
        output, state = getattr(model, method)(chunk, state=state, return_state=True)
        outputs.append(output)
    return np.concatenate(outputs, axis=1), state


@pytest.mark.parametrize(
    "batch", [BATCH, jax_model.BATCH_LAST_MIN_BATCH], ids=["batch_major", "batch_large"]
)
@pytest.mark.parametrize("config", [CONFIG, STATE_CONFIG], ids=["output", "state"])
def test_chained_chunks_equal_one_call_of_the_reference(
    config: frae.FRAEConfig, batch: int
) -> None:
    """predict, encode and decode in chained chunks equal the reference's one call, outputs
    and last state, and encode ends in decode's state; from ``BATCH_LAST_MIN_BATCH`` on the
    output model's loop runs batch-last, its state transposed in and out."""
    rng = np.random.default_rng(21)
    x = rng.uniform(-1.0, 1.0, (batch, STEPS, config.input_dim)).astype(np.float32)
    model = frae.create("jax_scan", config, seed=22)
    oracle = frae.create("reference", config, seed=22)
    for method, sequences in (("predict", x), ("encode", x), ("decode", oracle.encode(x))):
        expected, expected_state = getattr(oracle, method)(sequences, return_state=True)
        outputs, state = _chained(model, method, sequences)
        assert_close("outputs", outputs, expected, method)
        assert_close("outputs", state, expected_state, f"{method}: last state")
    codes, sender_state = model.encode(x, return_state=True)
    assert_close("self", sender_state, model.decode(codes, return_state=True)[1])


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
    """Weights live on the device: given inputs already there, the backend's calls send
    nothing to it, and those that return arrays bring nothing back (the loss, a float, is
    the interface's)."""
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


# A fresh process with none of this one's environment: this process has imported the
# backend, so a variable it sets would be inherited and look unchanged.
PROBE_ENVIRONMENT = {
    key: os.environ[key] for key in ("PATH", "HOME", "LANG", "PYTHONPATH") if key in os.environ
}


def _probe(code: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(code=code)],
        capture_output=True,
        text=True,
        timeout=600,
        env=PROBE_ENVIRONMENT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {**json.loads(result.stdout.splitlines()[-1]), "stderr": result.stderr}


USE_THE_BACKEND = """
import numpy as np, frae

model = frae.create("jax_scan")
x = frae.data.multi_sine(batch=2, steps=30, seed=1)
model.fit(x, epochs=2)
output = model.predict(x).tolist()
"""


def _expected_output() -> np.ndarray:
    """``USE_THE_BACKEND``'s output in this process."""
    namespace: dict[str, object] = {}
    exec(USE_THE_BACKEND, namespace)
    return np.float32(namespace["output"])


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
    assert_close("self", np.float32(used["output"]), _expected_output())


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow")
def test_the_backend_works_after_tensorflow_was_imported() -> None:
    used = _probe(f"import tensorflow\n{USE_THE_BACKEND}")
    assert "tensorflow" in used["modules"]
    assert_close("self", np.float32(used["output"]), _expected_output())


@pytest.fixture
def fresh_compiled_code() -> Iterator[None]:
    """Compile afresh in the test, and drop what it compiled afterwards (it may be broken)."""
    jax_backend.compiled.cache_clear()
    yield
    jax_backend.compiled.cache_clear()
