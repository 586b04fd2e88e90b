"""PyTorch-specific promises of ``torch_scan``: the ``nn.Linear`` and ``nn.GRUCell`` layouts
and their one transpose, the scan equal to the cell stepped in Python, float32, one
compilation for every shape and state, chunks chained through their states equal to one
call, and nothing global changed in the user's process."""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest

import frae
from impls.reference.model import gru_step
from parity_tests.cases import CASES
from parity_tests.tolerances import TOLERANCES, assert_close

pytestmark = pytest.mark.backend_specific("torch_scan")
torch = pytest.importorskip("torch")
torch_model = pytest.importorskip("impls.torch_scan.model")
torch_backend = pytest.importorskip("impls.torch_scan.backend")

# every size different, no square kernel: a swapped axis or transposed kernel fails; the
# kit's configs, whose compiled graphs the run's graph caches hold once either compiled them
CONFIG = CASES["wide"].config
STATE_CONFIG = CASES["state_deep"].config
CONFIGS = {"output": CONFIG, "state": STATE_CONFIG}
KIT_CONFIGS = {"output": CASES["default"].config, "state": CASES["state"].config}
"""The kit's configs of both models, whose graphs (B = 1's too) the run's caches hold once
the kit or this file compiled them (``make test-fast`` checks the kit on these): a test that
makes Dynamo forget, or only reads dtypes, gets them back."""
BATCH, STEPS = 4, 7


def _inputs(seed: int, config: frae.FRAEConfig = CONFIG, batch: int = BATCH) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=(batch, STEPS, config.input_dim)).astype(np.float32)


def test_weights_round_trip_through_the_module() -> None:
    """Each canonical kernel is its ``nn.Linear``'s weight transposed, each bias its bias."""
    weights = frae.initial_weights(CONFIG, seed=1)
    module = torch_model.FRAE(CONFIG)
    torch_model.load_canonical(module, weights)
    parameters = torch_model.named_parameters_of(module)
    assert len(parameters) == len(weights)
    for name, value in weights.items():
        layer, _, kind = name.rpartition("/")
        linear = module.get_submodule(layer.replace("/", ".layers.", 1))
        assert isinstance(linear, torch.nn.Linear), name
        stored = linear.weight if kind == "kernel" else linear.bias
        assert stored is parameters[torch_model.parameter_name(name)], name
        expected = value.T if kind == "kernel" else value
        np.testing.assert_array_equal(stored.detach().numpy(), expected, err_msg=name)
    back = torch_model.to_canonical(CONFIG, parameters)
    assert list(back) == list(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)


def test_gru_weights_round_trip_through_the_module() -> None:
    """Each canonical GRU parameter is ``nn.GRUCell``'s under its ``gru_layout.TORCH_NAMES`` name,
    the kernels transposed; the whole state model round-trips bit for bit."""
    weights = frae.initial_weights(STATE_CONFIG, seed=1)
    module = torch_model.module_for(STATE_CONFIG)
    torch_model.load_canonical(module, weights)
    gru = STATE_CONFIG.gru
    cell = module.decoder_gru
    assert type(cell) is torch.nn.GRUCell
    for name, native in [
        (gru.kernel, cell.weight_ih.T),
        (gru.recurrent_kernel, cell.weight_hh.T),
        (gru.bias, cell.bias_ih),
        (gru.recurrent_bias, cell.bias_hh),
    ]:
        np.testing.assert_array_equal(native.detach().numpy(), weights[name], err_msg=name)
    parameters = torch_model.named_parameters_of(module)
    assert len(parameters) == len(weights)
    back = torch_model.to_canonical(STATE_CONFIG, parameters)
    assert list(back) == list(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)


def _swapped_gates(
    weights: dict[str, np.ndarray], first: int, second: int
) -> dict[str, np.ndarray]:
    """``weights`` with the GRU's gate blocks ``first`` and ``second`` (of [r | p | n])
    exchanged in K, U, b_K and b_U alike."""
    swapped = {}
    for name, value in weights.items():
        blocks = np.split(value, 3, axis=-1)
        blocks[first], blocks[second] = blocks[second], blocks[first]
        swapped[name] = np.concatenate(blocks, axis=-1)
    return swapped


@pytest.mark.parametrize("first, second", [(0, 1), (1, 2), (0, 2)], ids=["rp", "pn", "rn"])
def test_a_stock_gru_cell_steps_as_the_reference(first: int, second: int) -> None:
    """Random, non-symmetric canonical GRU weights loaded by ``load_canonical`` into the
    module's ``nn.GRUCell`` step it as the reference's ``gru_step``, for several steps; the
    check is sharp: the same weights with two gate blocks swapped are loaded just as well
    but miss the reference by over a thousand times the tolerance."""
    gru = STATE_CONFIG.gru
    rng = np.random.default_rng(12)
    # N(0, 1), not the initial N(0, 0.05): gates far from σ(0) = 1/2, so blocks differ
    weights = {name: rng.normal(0.0, 1.0, shape) for name, shape in gru.parameter_shapes().items()}
    codes = rng.uniform(-1.0, 1.0, size=(STEPS, BATCH, gru.input_dim))
    expected, state = [], np.zeros((BATCH, gru.state_dim))
    for code in codes:
        state, _ = gru_step(weights, gru, code, state)
        expected.append(state)

    def stepped(canonical: dict[str, np.ndarray]) -> np.ndarray:
        """The states of the module's own ``nn.GRUCell`` loaded with ``canonical``."""
        module = torch_model.module_for(STATE_CONFIG)
        torch_model.load_canonical(module, {k: np.float32(v) for k, v in canonical.items()})
        cell, state = module.decoder_gru, torch.zeros(BATCH, gru.state_dim)
        assert type(cell) is torch.nn.GRUCell
        states = []
        with torch.no_grad():
            for code in torch.from_numpy(np.float32(codes)):
                state = cell(code, state)
                states.append(state.numpy())
        return np.stack(states)

    assert_close("outputs", stepped(weights), np.stack(expected))
    wrong = stepped(_swapped_gates(weights, first, second))
    assert TOLERANCES["outputs"].fraction_used(wrong, np.stack(expected)) > 1000


def test_a_square_kernel_left_untransposed_fails_parity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The boundary's one transpose is checked: a port that skipped it for square kernels
    (the shape check cannot see those) in both directions round-trips its weights bit for
    bit, but the suite's output tolerance against the reference rejects it."""
    load, read = torch_model.load_canonical, torch_model.to_canonical

    def untransposed(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {
            k: v.T if k.endswith("kernel") and v.shape == v.shape[::-1] else v
            for k, v in weights.items()
        }

    monkeypatch.setattr(torch_model, "load_canonical", lambda m, w: load(m, untransposed(w)))
    monkeypatch.setattr(torch_model, "to_canonical", lambda c, t: untransposed(read(c, t)))
    config = frae.FRAEConfig()  # encoder/dense_0 is 4 × 4
    weights = frae.initial_weights(config, seed=6)
    model = frae.create("torch_scan", config, weights=weights)
    for name, value in model.get_weights().items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)
    x = frae.data.multi_sine(batch=2, steps=20, seed=7)
    expected = frae.create("reference", config, weights=weights).predict(x)
    with pytest.raises(AssertionError):
        assert_close("outputs", model.predict(x), expected)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS)
def test_scan_equals_the_cell_stepped_in_a_python_loop(config: frae.FRAEConfig) -> None:
    weights = frae.initial_weights(config, seed=2)
    module = torch_model.module_for(config)
    torch_model.load_canonical(module, weights)
    x = torch.from_numpy(_inputs(3, config))
    with torch.no_grad():
        outputs, codes, last = torch_model.unroll(config, module, x)
        feedback = torch.zeros(BATCH, config.feedback_dim)
        for t in range(STEPS):
            feedback, (output, code) = module.step(feedback, x[:, t])
            assert_close("self", output.numpy(), outputs[:, t].numpy(), f"x̂ at {t}")
            assert_close("self", code.numpy(), codes[:, t].numpy(), f"z at {t}")
        assert_close("self", feedback.numpy(), last.numpy(), "the last feedback")


def test_float32_throughout() -> None:
    config = KIT_CONFIGS["output"]
    model = frae.create("torch_scan", config, seed=3)
    assert all(p.dtype == torch.float32 for p in model.module.parameters())
    x = _inputs(seed=4, config=config)
    for output in (model.predict(x), model.encode(x), model.decode(model.encode(x))):
        assert output.dtype == np.float32
    _, grads = model.loss_and_grads(x)
    assert all(g.dtype == np.float32 for g in grads.values())


Call = Callable[[frae.Backend, np.ndarray, np.ndarray | None], object]
COMPILED_CALLS: dict[str, Call] = {
    "predict": lambda model, x, state: model.predict(x, state=state, return_state=True),
    "decode": lambda model, x, state: model.decode(
        x[..., : model.config.latent_dim], state=state, return_state=True
    ),
    "loss_and_grads": lambda model, x, state: model.loss_and_grads(x),  # from zeros: no state
}


def _state(config: frae.FRAEConfig, seed: int, batch: int = BATCH) -> np.ndarray | None:
    """A feedback entering the first step, ``(batch, S)``; ``None`` (zeros) for seed 0."""
    if seed == 0:
        return None
    rng = np.random.default_rng(100 + seed)
    return rng.uniform(-1.0, 1.0, size=(batch, config.feedback_dim)).astype(np.float32)


@pytest.mark.slow
def test_an_adam_step_beyond_float32_ends_as_divergence() -> None:
    """``torch.optim.Adam`` refuses a step size lr/(1 - β₁) beyond float32 (a RuntimeError);
    the backend lets it overflow into the weights as the others do, and ``fit`` rolls back."""
    model = frae.create("torch_scan", seed=4)
    x = frae.data.multi_sine(batch=2, steps=5, seed=1)
    start = model.get_weights()
    with pytest.raises(frae.TrainingDiverged) as raised:
        model.fit(x, epochs=3, optimizer="adam", learning_rate=3e38)
    assert (raised.value.step, raised.value.restored_step) == (2, 1)
    for name, value in model.get_weights().items():
        np.testing.assert_array_equal(value, start[name], err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("config", KIT_CONFIGS.values(), ids=KIT_CONFIGS)
@pytest.mark.parametrize("call", COMPILED_CALLS.values(), ids=COMPILED_CALLS)
def test_one_compilation_for_every_shape(call: Call, config: frae.FRAEConfig) -> None:
    """New values, new states (and none: the zeros are passed in), new weights, a new
    instance and a new T reuse the compiled code: the state is an input of the graph, not a
    constant in it; B = 1, which Dynamo specializes, compiles once more (for a gradient,
    shown on the output model: the state model's gradient at B = 1 would be a graph no
    other test compiles, for the same specialization)."""
    torch._dynamo.reset()  # forget the code compiled so far, so that the first call compiles
    graphs = torch._dynamo.utils.counters["stats"]
    model = frae.create("torch_scan", config, seed=4)
    before = graphs["unique_graphs"]
    for seed in range(3):
        call(model, _inputs(seed, config), _state(config, seed))
        model.set_weights(frae.initial_weights(config, seed=seed))
    call(frae.create("torch_scan", config, seed=5), _inputs(4, config), _state(config, 4))
    call(model, _inputs(5, config)[:, :3], _state(config, 5))
    call(model, _inputs(6, config, batch=3), _state(config, 6, batch=3))
    assert graphs["unique_graphs"] - before == 1
    if call is COMPILED_CALLS["loss_and_grads"] and config.feedback == "state":
        return
    call(model, _inputs(7, config, batch=1), _state(config, 7, batch=1))
    call(model, _inputs(8, config, batch=1)[:, :4], _state(config, 8, batch=1))
    assert graphs["unique_graphs"] - before == 2, "B = 1 should compile once more"


@pytest.mark.parametrize("config", KIT_CONFIGS.values(), ids=KIT_CONFIGS)
def test_chained_chunks_equal_one_call_and_compile_once(config: frae.FRAEConfig) -> None:
    """Chunks chained through ``return_state`` from a given state give the reference's one
    call over the whole sequence: x̂, z, decode's x̂ from those z, and the last state, which
    ``encode`` and ``decode`` end in alike. The first chunk's T is the state's width S,
    which duck shapes would make one symbol, then a constant: the later lengths compile
    nothing more (one graph for the unroll, one for the decoder)."""
    torch._dynamo.reset()
    graphs = torch._dynamo.utils.counters["stats"]
    before = graphs["unique_graphs"]
    width = config.feedback_dim
    bounds = (0, width, width + 2, width + 5)
    rng = np.random.default_rng(11)
    x = rng.uniform(-1.0, 1.0, size=(BATCH, bounds[-1], config.input_dim)).astype(np.float32)
    start = rng.uniform(-1.0, 1.0, size=(BATCH, width)).astype(np.float32)
    # N(0, 0.3): weights large enough that the state visibly changes every step
    weights = {
        name: rng.normal(0.0, 0.3, shape).astype(np.float32)
        for name, shape in config.parameter_shapes().items()
    }
    model = frae.create("torch_scan", config, weights=weights)
    reference = frae.create("reference", config, weights=weights)
    expected, last = reference.predict(x, state=start, return_state=True)
    chunks: dict[str, list[np.ndarray]] = {"predict": [], "encode": [], "decode": []}
    states = {call: start for call in chunks}
    for low, high in itertools.pairwise(bounds):
        chunk = x[:, low:high]
        output, states["predict"] = model.predict(chunk, state=states["predict"], return_state=True)
        code, states["encode"] = model.encode(chunk, state=states["encode"], return_state=True)
        decoded, states["decode"] = model.decode(code, state=states["decode"], return_state=True)
        for call, value in zip(chunks, (output, code, decoded), strict=True):
            chunks[call].append(value)
    joined = {call: np.concatenate(outputs, axis=1) for call, outputs in chunks.items()}
    assert_close("outputs", joined["predict"], expected, "predict")
    assert_close("outputs", joined["encode"], reference.encode(x, state=start), "encode")
    assert_close("outputs", joined["decode"], expected, "decode")
    for call, state in states.items():
        assert_close("outputs", state, last, f"{call}'s last state")
    assert graphs["unique_graphs"] - before == 2


PROBE = """
import json, os, sys
before = dict(os.environ)
import torch
state = lambda: {{
    "threads": torch.get_num_threads(),
    "grad": torch.is_grad_enabled(),
    "dtype": str(torch.get_default_dtype()),
    "deterministic": torch.are_deterministic_algorithms_enabled(),
}}
state_before = state()
{code}
changed = sorted(k for k in {{*before, *os.environ}} if before.get(k) != os.environ.get(k))
limit = torch._dynamo.config.recompile_limit  # imported here: it loads Triton
found = {{"env": changed, "state": [state_before, state()], "limit": limit, "output": output}}
print(json.dumps(found))
"""

# A fresh process with none of this one's environment: this process has imported the
# backend, so a variable it sets would be inherited and look unchanged. Only the run's
# compile settings (conftest.py) pass: Inductor's cache on disk, shared with every other
# process of the run, with the scan's graphs in it, and compiling in the process rather than
# in a pool it starts.
PROBE_ENVIRONMENT = {
    key: os.environ[key]
    for key in (
        "PATH",
        "HOME",
        "LANG",
        "PYTHONPATH",
        "TORCHINDUCTOR_CACHE_DIR",
        "TORCHINDUCTOR_COMPILE_THREADS",
    )
    if key in os.environ
}

USE_THE_BACKEND = """
import numpy as np, frae

model = frae.create("torch_scan")
from tests.compile_caches import cache_compiled_scans  # the run's graph caches, once torch runs
cache_compiled_scans()
x = frae.data.multi_sine(batch=2, steps=30, seed=1)
model.fit(x, epochs=2)
output = model.predict(x).tolist()
"""


def _probe(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(code=code)],
        capture_output=True,
        text=True,
        timeout=600,
        env=PROBE_ENVIRONMENT,
    )


def _expected_output() -> np.ndarray:
    """``USE_THE_BACKEND``'s output in this process."""
    namespace: dict[str, object] = {}
    exec(USE_THE_BACKEND, namespace)
    return np.float32(namespace["output"])


@pytest.mark.slow
def test_the_backend_changes_nothing_global_and_prints_nothing() -> None:
    """Environment, PyTorch's settings (threads, grad mode, dtype, Dynamo's limits) are as
    before, and compiling writes nothing to stderr."""
    baseline = _probe("torch.compile(lambda x: x + 1)(torch.ones(3))\noutput = None")
    used = _probe(USE_THE_BACKEND)
    assert used.returncode == 0, used.stderr[-3000:]
    found = json.loads(used.stdout.splitlines()[-1])
    assert found["env"] == json.loads(baseline.stdout.splitlines()[-1])["env"]
    assert found["state"][0] == found["state"][1]
    assert found["limit"] == 8
    assert used.stderr == ""
    assert_close("self", np.float32(found["output"]), _expected_output())


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow")
def test_tensorflow_first_gives_an_error_not_a_crash() -> None:
    """TensorFlow loaded before Triton makes Triton crash the interpreter (tensorflow#124205):
    the backend refuses to start with an error that says so; through ``frae``'s own
    TensorFlow import (which loads Triton first), both work in one process."""
    crashed = _probe(f"import tensorflow\n{USE_THE_BACKEND}")
    assert crashed.returncode == 1, crashed.stderr[-3000:]
    assert "tensorflow#124205" in crashed.stderr
    both = _probe(
        f"frae_tf = __import__('frae.quiet').quiet.import_quietly('tensorflow')\n{USE_THE_BACKEND}"
    )
    assert both.returncode == 0, both.stderr[-3000:]
    assert_close(
        "self", np.float32(json.loads(both.stdout.splitlines()[-1])["output"]), _expected_output()
    )


@pytest.mark.slow
def test_a_first_call_runs_the_compiled_loop_without_a_python_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AOTAutograd's custom-operator check runs a graph's first call under a Python dispatch
    mode that sees each step's slicing of the input: off in every call of the backend (the
    gradient's forward takes the same setting), so a first call on a long recording runs
    the compiled loop. Shown to count: the same kind of first call (B = 1, a graph of its
    own) with the setting left on."""
    import torch._dynamo  # noqa: F401  (before AOTAutograd's wrappers, which it imports)
    from torch._functorch._aot_autograd import runtime_wrappers

    seen = {"operators": 0}
    original = runtime_wrappers._AnalyzeCustomOpInputOutputMode.__torch_dispatch__

    def counting(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        seen["operators"] += 1
        return original(self, func, types, args, kwargs)

    monkeypatch.setattr(
        runtime_wrappers._AnalyzeCustomOpInputOutputMode, "__torch_dispatch__", counting
    )
    config = frae.FRAEConfig(input_dim=3, encoder_units=(6,), latent_dim=2, decoder_units=(5,))
    model = frae.create("torch_scan", config, seed=1)
    x = np.ones((3, 40, 3), np.float32)
    model.predict(x)
    # T = 41 compiles T symbolic (Dynamo's automatic dynamic shapes); T = 42 is the first
    # call that graph's compiled code serves without compiling
    model.predict(np.ones((3, 41, 3), np.float32))
    model.predict(np.ones((3, 42, 3), np.float32))
    assert seen["operators"] == 0
    monkeypatch.setattr(torch_backend, "no_first_call_analysis", contextlib.nullcontext)
    model.predict(x[:1])
    assert seen["operators"] >= 40  # at least one operator a step
