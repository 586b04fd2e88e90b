"""``bench.twins.jax_scan``: ``jax.value_and_grad`` runs the backward pass written by hand."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

import frae
from bench.kernels import loop_carries
from parity_tests.tolerances import assert_close

TWIN = "bench.twins.jax_scan:JaxScanBPTTBackend"
"""The twin, by import path: also the name of the worker group its tests share."""
pytestmark = pytest.mark.backend_specific(TWIN)
pytest.importorskip("jax")
pytest.importorskip("flax")
jax_train = pytest.importorskip("impls.jax_scan.train")
jax_backend = pytest.importorskip("impls.jax_scan.backend")
twin = pytest.importorskip("bench.twins.jax_scan")

# every size different, no square kernel: a swapped axis or transposed kernel fails
CONFIG = frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2, decoder_units=(4, 6))
STATE_CONFIG = dataclasses.replace(CONFIG, feedback="state", state_dim=9)


@pytest.fixture
def fresh_compiled_code() -> Iterator[None]:
    """Compile afresh in the test, and drop what it compiled afterwards (it may be broken)."""
    for cache in (jax_backend.compiled, twin.compiled_by_hand):
        cache.cache_clear()
    yield
    for cache in (jax_backend.compiled, twin.compiled_by_hand):
        cache.cache_clear()


def _break_the_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    """Double every ``d_pre @ kernelᵀ`` of the hand-written backward (autodiff never calls it)."""
    times_transpose = twin._times_transpose
    monkeypatch.setattr(twin, "_times_transpose", lambda *a: 2.0 * times_transpose(*a))


@pytest.mark.usefixtures("fresh_compiled_code")
def test_the_state_model_is_differentiated_by_autodiff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The twin's state model takes jax_scan's own jitted functions and autodiff's gradient, at
    a batch where the output model changes layout: it equals the reference."""
    batch = max(jax_backend.model.BATCH_LAST_MIN_BATCH, jax_train.REMAT_MIN_BATCH)
    _break_the_backward(monkeypatch)
    rng = np.random.default_rng(16)
    shape = (batch, 5, STATE_CONFIG.input_dim)
    x, y = (rng.uniform(-1.0, 1.0, shape).astype(np.float32) for _ in "xy")
    model = frae.create(TWIN, STATE_CONFIG, seed=17)
    assert model.compiled is jax_backend.compiled(STATE_CONFIG)  # type: ignore[attr-defined]
    oracle = frae.create("reference", STATE_CONFIG, seed=17)
    assert_close("outputs", model.predict(x), oracle.predict(x))
    loss, grads = model.loss_and_grads(x, y)
    expected_loss, expected = oracle.loss_and_grads(x, y)
    assert_close("loss", np.float32(loss), np.float64(expected_loss))
    for name, grad in grads.items():
        assert_close("gradients", grad, expected[name], name)


@pytest.mark.parametrize("batch", [3, jax_train.REMAT_MIN_BATCH], ids=["unrolled", "large"])
@pytest.mark.usefixtures("fresh_compiled_code")
def test_value_and_grad_runs_the_hand_written_backward(
    monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """A broken backward breaks the twin's gradients and SGD updates alone: the framework's
    gradient call runs it, and only it."""
    rng = np.random.default_rng(11)
    x, y = (rng.uniform(-1.0, 1.0, (batch, 5, CONFIG.input_dim)).astype(np.float32) for _ in "xy")
    expected_loss, expected = frae.create("reference", CONFIG, seed=12).loss_and_grads(x, y)
    _break_the_backward(monkeypatch)
    model = frae.create(TWIN, CONFIG, seed=12)
    loss, grads = model.loss_and_grads(x, y)
    assert_close("loss", np.float32(loss), np.float64(expected_loss))
    feedback_free = {"decoder/output/kernel", "decoder/output/bias"}  # no d_pre @ kernelᵀ in them
    for name in set(grads) - feedback_free:
        with pytest.raises(AssertionError):
            assert_close("gradients", grads[name], expected[name], name)
    autodiff = frae.create("jax_scan", CONFIG, seed=12).loss_and_grads(x, y)[1]
    for name, grad in autodiff.items():
        assert_close("gradients", grad, expected[name], name)
    start, rate = model.get_weights(), 0.5
    model.fit(x, y, optimizer="sgd", learning_rate=rate)
    for name, weight in model.get_weights().items():
        assert_close("self", (start[name] - weight) / rate, grads[name], name)


Shapes = list[tuple[int, ...]]


def _reverse_scan_carries(jaxpr: object) -> list[Shapes]:
    """The carries' shapes of each reverse ``lax.scan`` in a jaxpr, nested ones included."""
    found = []
    for equation in jaxpr.eqns:  # type: ignore[attr-defined]
        params = equation.params
        if equation.primitive.name == "scan" and params["reverse"]:
            # JAX 0.12 describes the operands as (consts, carries, xs); earlier, by counts
            consts, carry, _ = (
                [len(part.vals) for part in params["ft_in"].unpack()]
                if "ft_in" in params
                else (params["num_consts"], params["num_carry"], None)
            )
            carries = equation.invars[consts : consts + carry]
            found.append([variable.aval.shape for variable in carries])
        for value in params.values():
            for inner in value if isinstance(value, tuple) else (value,):
                inner = getattr(inner, "jaxpr", inner)
                if hasattr(inner, "eqns"):
                    found += _reverse_scan_carries(inner)
    return found


def _loop_carries(hlo: str) -> list[list[str]]:
    """Per ``while`` loop of an optimized HLO module: the float32 parts of its state that its
    body changes, other than the time-long stacks it reads or writes (rank 3 and up)."""
    return [
        [shape for shape in carries if shape.startswith("f32[") and shape.count(",") < 2]
        for carries in loop_carries(hlo)
    ]


def _programs(batch: int, *, by_hand: bool) -> dict[str, object]:
    """The jitted gradient and training steps (``by_hand``: the twin's), on a batch of
    ``batch`` sequences of 37 steps (a length no other axis has)."""
    compiled = (twin.compiled_by_hand if by_hand else jax_backend.compiled)(CONFIG)
    params = frae.initial_weights(CONFIG)
    x = np.zeros((batch, 37, CONFIG.input_dim), np.float32)
    programs = {"loss_and_grads": (compiled.loss_and_grads, (params, x, x))}
    for name, train_step in compiled.train_steps.items():
        state = compiled.optimizer_inits[name](params)
        programs[f"{name} step"] = (train_step, (params, state, np.float32(0.1), x, x))
    return programs


@pytest.mark.parametrize("batch", [11, jax_train.REMAT_MIN_BATCH], ids=["unrolled", "large"])
def test_the_reverse_loop_carries_only_the_feedback_gradient(batch: int) -> None:
    """One reverse scan carrying only d loss / d x̂_t, (B, F), in the jaxpr and the compiled
    program; autodiff's (jax_scan), which sums the weights' gradients there, fails."""
    feedback = (batch, CONFIG.input_dim)
    for what, (function, args) in _programs(batch, by_hand=True).items():
        assert _reverse_scan_carries(function.trace(*args).jaxpr) == [[feedback]], what
    function, args = _programs(batch, by_hand=True)["adam step"]
    hlo = function.lower(*args).compile().as_text()
    expected = f"f32[{batch},{CONFIG.input_dim}]"
    assert _loop_carries(hlo) == [[expected]] * 2  # the forward's and the backward's
    function, args = _programs(batch, by_hand=False)["loss_and_grads"]
    [autodiff_carries] = _reverse_scan_carries(function.trace(*args).jaxpr)
    assert {tuple(shape) for shape in CONFIG.parameter_shapes().values()} <= set(autodiff_carries)
    assert any(
        len(carries) > 1 for carries in _loop_carries(function.lower(*args).compile().as_text())
    )
