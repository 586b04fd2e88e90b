"""PyTorch-specific promises of ``torch_scan``: the ``nn.Linear`` and ``nn.GRUCell`` layouts
and their one transpose, float32, one compilation for every shape and state (the rate term's
train steps too), chunks chained through their states equal to one call, nothing global changed
in the user's process; its route (``frae.routes``: Inductor's C++ wrapper by default, Python
for T = 1's gradient, a user's ``TORCHINDUCTOR_CPP_WRAPPER`` kept, ``FRAE_ROUTES=defaults``
honoured); and its export refusals pinned, each retried against the installed PyTorch, so an
upgrade that lifts one fails here and shows that the format can be made."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import frae
from frae import routes
from frae.codec import rate
from parity_tests.cases import CASES, RATE
from parity_tests.checks import assert_same_weights
from parity_tests.tolerances import assert_close
from tests.bench_cases import check_streaming
from tests.processes import (
    assert_as_here,
    bare_environment,
    fresh_json,
    last_json,
    python,
    use_the_backend,
)

pytestmark = pytest.mark.backend_specific("torch_scan")
torch = pytest.importorskip("torch")
torch_model = pytest.importorskip("impls.torch_scan.model")
torch_backend = pytest.importorskip("impls.torch_scan.backend")
torch_export = pytest.importorskip("impls.torch_scan.export", exc_type=ImportError)
torch_train = pytest.importorskip("impls.torch_scan.train")

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


LAYOUT_CONFIGS = CONFIGS | {
    f"{name}_rate": dataclasses.replace(config, code_step=2**-3, rate_weight=0.05)
    for name, config in CONFIGS.items()
}


@pytest.mark.parametrize("config", LAYOUT_CONFIGS.values(), ids=LAYOUT_CONFIGS)
def test_weights_load_into_the_modules_layers_transposed(config: frae.FRAEConfig) -> None:
    """Each canonical parameter is its ``nn.Linear``'s, ``nn.GRUCell``'s under its
    ``gru_layout.TORCH_NAMES`` name, or with a rate weight the ``Prior``'s at ``prior``, each
    kernel transposed."""
    weights = frae.initial_weights(config, seed=1)
    for index, name in enumerate(config.prior_parameters):  # each its own, not the zeros
        weights[name] = np.arange(config.latent_dim, dtype=np.float32) + 0.5 + index
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
        kinds = {"decoder/gru": torch.nn.GRUCell, "prior": torch_model.Prior}
        assert type(owner) is kinds.get(layer, torch.nn.Linear), name
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


RATE_CONFIGS = {name: case.config for name, case in RATE.items()}
"""The kit's rate cases' configs (the contract's "Rate: training the codec for its bits")."""


def _compilations() -> tuple[int, int, int]:
    """What this process has traced and compiled so far: Dynamo's graphs, AOTAutograd's joint
    graphs, and Inductor's (each forward and backward looked up in its cache, hit or not)."""
    counters = torch._dynamo.utils.counters
    inductor = sum(n for name, n in counters["inductor"].items() if name.startswith("fxgraph"))
    return counters["stats"]["unique_graphs"], counters["aot_autograd"]["total"], inductor


@pytest.mark.slow
@pytest.mark.parametrize("config", RATE_CONFIGS.values(), ids=RATE_CONFIGS)
def test_train_steps_with_a_rate_weight_compile_nothing_more(config: frae.FRAEConfig) -> None:
    """The bits are summed outside the compiled scan, from the codes it returns: after a first
    step, gradients and steps of SGD and Adam at the same shapes, with a new prior, trace and
    compile nothing, and the new prior changes the loss."""
    model = frae.create("torch_scan", config, seed=1)
    x = _inputs(seed=6, config=config)
    model.fit(x, optimizer="sgd")
    before = _compilations()
    assert before[0] > 0
    losses = []
    for location in (0.25, -0.5):
        prior = dict.fromkeys(config.prior_parameters, np.full(config.latent_dim, location))
        model.set_weights({**model.get_weights(), **prior})
        losses.append(model.loss_and_grads(x)[0])
        for optimizer in ("sgd", "adam"):
            model.fit(x, epochs=2, optimizer=optimizer)
    assert losses[0] != losses[1], "the loss did not read the new prior"
    assert _compilations() == before, "a repeated train step with a rate weight compiled again"


# a floored symbol passes no gradient, which float32 autograd of min(FLOOR_BITS, I) breaks
# where I's own slopes are 0 / 0
OVERFLOWING_LOCATION, OVERFLOWING_LOG_SCALE = [0.3, 0.0], [-60.0, 110.0]
"""Priors whose float32 slopes break: s = e^−60, whose s² (a quotient's slope) underflows to
0, under which every code costs far past the floor but μ's own symbol, 0 bits; and s = e^110,
past float32's range (Δ/s rounds to 0), under which every code is floored."""


def test_floored_symbols_pass_no_gradient_where_their_slopes_break() -> None:
    """``train.symbol_bits`` and its gradients in the codes, μ and ρ equal
    ``frae.codec.rate``'s, exactly: the floor or 0 bits, and zero slopes, none NaN."""
    step = 2**-3
    codes = (step * np.arange(-3, 5)[:, None] * np.ones(2)).astype(np.float32)  # (8, L = 2)
    prior = (
        np.array(OVERFLOWING_LOCATION, np.float32),
        np.array(OVERFLOWING_LOG_SCALE, np.float32),
    )
    tensors = [torch.tensor(value, requires_grad=True) for value in (codes, *prior)]
    bits = torch_train.symbol_bits(*tensors, step)
    grads = torch.autograd.grad(bits.sum(), tensors)
    with np.errstate(over="ignore"):  # float64's expm1(Δ/s) is infinite too: c / expm1(c) = 0
        expected = rate.slopes(codes, *prior, step)
    np.testing.assert_array_equal(bits.detach().numpy(), rate.symbol_bits(codes, *prior, step))
    assert (bits == rate.FLOOR_BITS).any() and (bits == 0.0).any()
    for name, grad, slope in zip(("code", "μ", "ρ"), grads, expected, strict=True):
        np.testing.assert_array_equal(grad, slope if name == "code" else slope.sum(0), name)


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

# the run's graph caches, once torch runs
USE_THE_BACKEND = use_the_backend(
    "torch_scan", "from tests.compile_caches import cache_compiled_scans\ncache_compiled_scans()"
)


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
    assert_as_here(found["output"], USE_THE_BACKEND)


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
    assert_as_here(last_json(both)["output"], USE_THE_BACKEND)


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


CPP, PYTHON = torch_backend.COMPILE_OPTIONS, torch_backend.PYTHON_WRAPPER
KINDS = ("inference", "gradients", "gradients, T = 1")
FRAE, USER, USERS_WRAPPER = routes.BY_FRAE, routes.BY_USER, torch_backend.USER_CPP_WRAPPER
NO_OPTIONS = ((), (), ())
ROUTES = {
    # the C++ wrapper, but the Python one for a one-step gradient, which it cannot compile
    "best": ({}, (CPP, CPP, PYTHON), [("True", FRAE), ("True", FRAE), ("False", FRAE)]),
    "defaults": ({routes.ROUTES: routes.DEFAULTS}, NO_OPTIONS, [(None, routes.BY_DEFAULT)] * 3),
    # the user's Python wrapper kept everywhere, whatever route is chosen
    "users-python": (
        {USERS_WRAPPER: "0", routes.ROUTES: routes.BEST},
        NO_OPTIONS,
        [("0", USER)] * 3,
    ),
    "users-python-defaults": (
        {USERS_WRAPPER: "0", routes.ROUTES: routes.DEFAULTS},
        NO_OPTIONS,
        [("0", USER)] * 3,
    ),
    # the user's C++ wrapper kept but where it cannot compile
    "users-cpp": (
        {USERS_WRAPPER: "1"},
        ((), (), PYTHON),
        [("1", USER), ("1", USER), ("False", FRAE)],
    ),
}
"""Environment -> its route's options (inference, gradients, gradients at T = 1), and the
value of each and whose it is, as ``routes`` reports them."""


@pytest.mark.parametrize("case", list(ROUTES))
def test_each_environment_gets_its_route(case: str) -> None:
    environment, options, reported = ROUTES[case]
    route = torch_backend.route(environment)
    assert (route.inference, route.gradients, route.one_step_gradients) == options
    assert [s.option for s in route.settings] == [f"inductor cpp_wrapper ({k})" for k in KINDS]
    assert [(s.value, s.by) for s in route.settings] == reported


def test_an_unknown_choice_of_routes_is_refused() -> None:
    with pytest.raises(ValueError, match=routes.ROUTES):
        torch_backend.route({routes.ROUTES: "fast"})


def test_a_one_step_call_takes_the_one_step_functions() -> None:
    def functions(name: str) -> object:
        return torch_backend.Functions(
            unroll=lambda module, x, state: name, decode=lambda module, z, state: name
        )

    many, one = functions("many"), functions("one")
    both = torch_backend.one_step_apart(many, one)
    for steps, expected in [(1, "one"), (2, "many")]:
        x = torch.zeros(3, steps, 2)
        assert both.unroll(None, x, None) == both.decode(None, x, None) == expected
    assert torch_backend.one_step_apart(many, many) is many


@pytest.mark.parametrize("batch", [1, 3])
def test_a_one_step_gradient_compiles_and_equals_the_reference(batch: int) -> None:
    """The fallback for T = 1 (B = 1, which Dynamo specializes, and B > 1) on the route:
    it compiles, and its loss and gradients are the reference's."""
    config = CASES["default"].config
    weights = frae.initial_weights(config, seed=2)
    rng = np.random.default_rng(3)
    x, y = (rng.uniform(-1.0, 1.0, (batch, 1, config.input_dim)) for _ in range(2))
    model = frae.create("torch_scan", config, weights=weights)
    assert isinstance(model, torch_backend.TorchScanBackend)
    assert model.routes == torch_backend.route().settings
    loss, grads = model.loss_and_grads(x.astype(np.float32), y.astype(np.float32))
    expected_loss, expected = frae.create("reference", config, weights=weights).loss_and_grads(x, y)
    assert_close("loss", np.asarray(loss, np.float32), np.asarray(expected_loss))
    for name, grad in expected.items():
        assert_close("gradients", grads[name], grad, name)


REPORT = """
import json, frae, torch._inductor.config as inductor
model = frae.create("torch_scan")
print(json.dumps({"routes": [[s.value, s.by] for s in model.routes],
                  "inductor": inductor.cpp_wrapper}))
"""


@pytest.mark.slow  # a fresh interpreter importing PyTorch
@pytest.mark.parametrize(
    ("case", "inductor"), [("best", False), ("defaults", False), ("users-cpp", True)]
)
def test_a_backend_reports_its_route_and_leaves_inductor_s_own_setting(
    case: str, inductor: bool
) -> None:
    """In each environment ``routes`` are as ``route`` makes them, and Inductor's process-wide
    ``cpp_wrapper`` is the environment's."""
    environment, _, reported = ROUTES[case]
    hidden = (routes.ROUTES, USERS_WRAPPER)
    seen = fresh_json(REPORT, without=hidden, **environment)
    assert seen["routes"] == [list(pair) for pair in reported]
    assert seen["inductor"] is inductor


@pytest.mark.slow
def test_aot_inductor_still_cannot_compile_the_scan_over_a_symbolic_t(tmp_path: Path) -> None:
    from torch._inductor.exc import InductorError

    config = frae.FRAEConfig()
    with pytest.raises(InductorError, match="KeyError"):
        torch_export.aoti_package(config, frae.initial_weights(config, 0), tmp_path / "m.pt2")


def test_pt2_is_refused_with_the_upstream_error(tmp_path: Path) -> None:
    model = frae.create("torch_scan")
    with pytest.raises(ValueError, match="AOTInductor cannot compile the scan"):
        frae.export(model, tmp_path / "artifact", format="pt2")
    assert list(tmp_path.iterdir()) == []
