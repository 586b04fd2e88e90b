"""JAX-specific promises of ``jax_scan``: the NNX layout, float32, one trace per shape,
transfers only at the interface, and nothing global changed in the user's process."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

import frae
from parity_tests.tolerances import assert_close

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


def test_scan_equals_the_cell_stepped_in_a_python_loop() -> None:
    weights = frae.initial_weights(CONFIG, seed=2)
    module = nnx.merge(jax_model.graphdef(CONFIG), jax_model.state_from_weights(weights))
    x = _inputs(seed=3)
    outputs, codes = jax_model.unroll(CONFIG, weights, x)
    feedback = np.zeros((BATCH, CONFIG.input_dim), np.float32)
    for t in range(STEPS):
        feedback, (output, code) = module.step(feedback, x[:, t])
        assert_close("self", np.asarray(output), np.asarray(outputs[:, t]), f"x̂ at {t}")
        assert_close("self", np.asarray(code), np.asarray(codes[:, t]), f"z at {t}")


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


def _device_results(model: frae.Backend) -> dict[str, object]:
    """Every array the jitted functions return, before any conversion to NumPy."""
    compiled = jax_backend.compiled(model.config)
    params = model.params  # type: ignore[attr-defined]
    x, y = _inputs(seed=4), _inputs(seed=5)
    results: dict[str, object] = {
        "predict": compiled.predict(params, x),
        "encode": compiled.encode(params, x),
        "decode": compiled.decode(params, _inputs(seed=6, width=CONFIG.latent_dim)),
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


@pytest.mark.parametrize("call", TRACED_CALLS.values(), ids=TRACED_CALLS)
def test_one_trace_per_shape(
    monkeypatch: pytest.MonkeyPatch, call: Callable[[frae.Backend, np.ndarray], object]
) -> None:
    """Repeated calls with new values, new weights or a new instance reuse the compiled code."""
    traces: Counter[int] = Counter()
    unroll = jax_model.unroll

    def counted_unroll(*args: object, **kwargs: object) -> object:
        traces[args[2].shape[1]] += 1  # by T
        return unroll(*args, **kwargs)

    monkeypatch.setattr(jax_model, "unroll", counted_unroll)
    jax_backend.compiled.cache_clear()  # compile afresh, so that the first call must trace
    model = frae.create("jax_scan", CONFIG, seed=4)
    for seed in range(3):
        call(model, _inputs(seed=seed))
        model.set_weights(frae.initial_weights(CONFIG, seed=seed))
    call(frae.create("jax_scan", CONFIG, seed=5), _inputs(seed=4))
    assert traces == {STEPS: 1}
    call(model, _inputs(seed=5)[:, :3])
    assert traces == {STEPS: 1, 3: 1}, "a new shape should trace once more"


def test_compiled_calls_move_nothing_between_host_and_device() -> None:
    """Weights live on the device: given inputs already there, the backend's calls send
    nothing to it, and those that return arrays bring nothing back (the loss, a float, is
    the interface's)."""
    model = frae.create("jax_scan", CONFIG, seed=6)
    x, y = (jax.device_put(_inputs(seed)) for seed in (8, 9))
    z = jax.device_put(_inputs(seed=10, width=CONFIG.latent_dim))
    for call in (model._predict, model._encode, lambda _: model._decode(z)):
        call(x)  # compile outside the guard
        with jax.transfer_guard("disallow"):
            call(x).block_until_ready()
    model._loss_and_grads(x, y)
    model._train_step("adam", 1e-2)(x, y)
    with jax.transfer_guard_host_to_device("disallow"):
        model._loss_and_grads(x, y)
        step = model._train_step("adam", 1e-2)
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


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow")
def test_the_backend_works_after_tensorflow_was_imported() -> None:
    used = _probe(f"import tensorflow\n{USE_THE_BACKEND}")
    assert "tensorflow" in used["modules"]
    assert_close("self", np.float32(used["output"]), _expected_output())
