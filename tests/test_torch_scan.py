"""PyTorch-specific promises of ``torch_scan``: the ``nn.Linear`` and ``nn.GRUCell`` layouts
and their one transpose, float32, one compilation for every shape and state, chunks chained
through their states equal to one call, and nothing global changed in the user's process."""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
from collections.abc import Callable

import numpy as np
import pytest

import frae
from parity_tests.cases import CASES
from parity_tests.checks import assert_same_weights
from parity_tests.tolerances import assert_close
from tests.bench_cases import check_streaming
from tests.processes import bare_environment, last_json, output_here, python

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


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS)
def test_weights_load_into_the_modules_layers_transposed(config: frae.FRAEConfig) -> None:
    """Each canonical parameter is its ``nn.Linear``'s, or ``nn.GRUCell``'s under its
    ``gru_layout.TORCH_NAMES`` name, each kernel transposed."""
    weights = frae.initial_weights(config, seed=1)
    module = torch_model.module_for(config)
    torch_model.load_canonical(module, weights)
    parameters = torch_model.named_parameters_of(module)
    assert len(parameters) == len(weights)
    for name, value in weights.items():
        layer, kind = name.rpartition("/")[0], torch_model.parameter_name(name).rpartition(".")[2]
        gru = layer == "decoder/gru"
        owner = (
            module.decoder_gru if gru else module.get_submodule(layer.replace("/", ".layers.", 1))
        )
        assert type(owner) is (torch.nn.GRUCell if gru else torch.nn.Linear), name
        stored = getattr(owner, kind)
        assert stored is parameters[torch_model.parameter_name(name)], name
        expected = value.T if name.endswith("kernel") else value
        np.testing.assert_array_equal(stored.detach().numpy(), expected, err_msg=name)


def test_a_square_kernel_left_untransposed_fails_parity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A port skipping the transpose of square kernels round-trips its weights bit for bit, but
    the output tolerance against the reference rejects it."""
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
    assert_same_weights(model.get_weights(), weights)
    x = frae.data.multi_sine(batch=2, steps=20, seed=7)
    expected = frae.create("reference", config, weights=weights).predict(x)
    with pytest.raises(AssertionError):
        assert_close("outputs", model.predict(x), expected)


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
    assert_same_weights(model.get_weights(), start)


@pytest.mark.slow
@pytest.mark.parametrize("config", KIT_CONFIGS.values(), ids=KIT_CONFIGS)
@pytest.mark.parametrize("call", COMPILED_CALLS.values(), ids=COMPILED_CALLS)
def test_one_compilation_for_every_shape(call: Call, config: frae.FRAEConfig) -> None:
    """New values, states, weights, instances and T reuse the compiled code; B = 1, which Dynamo
    specializes, compiles once more (the gradient's shown on the output model alone)."""
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
    """The first chunk as long as the state's width S (a duck-shape trap): chained chunks give
    the reference's one call, and later lengths compile nothing more (unroll and decoder)."""
    torch._dynamo.reset()
    graphs = torch._dynamo.utils.counters["stats"]
    before = graphs["unique_graphs"]
    width = config.feedback_dim
    model = frae.create("torch_scan", config, seed=3)
    check_streaming(model, config, batch=BATCH, cuts=(width, width + 2), steps=width + 5)
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
    # the run's compile settings (conftest.py) pass too: Inductor's cache on disk, which holds
    # the scan's graphs, and compiling in the process rather than in a pool it starts
    env = bare_environment("TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_COMPILE_THREADS")
    return python("-c", PROBE.format(code=code), env=env, check=False)


@pytest.mark.slow
def test_the_backend_changes_nothing_global_and_prints_nothing() -> None:
    """Environment, PyTorch's settings (threads, grad mode, dtype, Dynamo's limits) are as
    before, and compiling writes nothing to stderr."""
    baseline = _probe("torch.compile(lambda x: x + 1)(torch.ones(3))\noutput = None")
    used = _probe(USE_THE_BACKEND)
    assert used.returncode == 0, used.stderr[-3000:]
    found = last_json(used)
    assert found["env"] == last_json(baseline)["env"]
    assert found["state"][0] == found["state"][1]
    assert found["limit"] == 8
    assert used.stderr == ""
    assert_close("self", np.float32(found["output"]), np.float32(output_here(USE_THE_BACKEND)))


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
        "self", np.float32(last_json(both)["output"]), np.float32(output_here(USE_THE_BACKEND))
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
