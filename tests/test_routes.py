"""How a route setting reaches a framework (``frae.routes``): set by default, the user's own
kept, ``FRAE_ROUTES=defaults`` honoured, a child process told apart from the user; and, in
fresh processes, that XLA really folds tf_while's gradient loops on its route and not
otherwise."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from frae import routes
from tests.processes import fresh_json

FOLDED = f"{routes.EXTRA_OPTIONS}{routes.LOOP_FOLDING}={routes.FOLDING_BYTES}"
USERS_OWN = f"{routes.EXTRA_OPTIONS}{routes.LOOP_FOLDING}=1000"
DUMP = "--xla_dump_to=/tmp/d"


@pytest.mark.parametrize(
    ("env", "flags", "value", "by"),
    [
        ({}, FOLDED, str(routes.FOLDING_BYTES), routes.BY_FRAE),
        ({"XLA_FLAGS": USERS_OWN}, USERS_OWN, "1000", routes.BY_USER),
        ({routes.ROUTES: routes.DEFAULTS, "XLA_FLAGS": DUMP}, DUMP, None, routes.BY_DEFAULT),
    ],
    ids=["fresh", "users-own", "defaults"],
)
def test_the_folding_is_set_by_frae_unless_the_user_or_the_defaults_say_otherwise(
    env: dict[str, str], flags: str, value: str | None, by: str
) -> None:
    setting = routes.fold_xla_loops(env)
    assert env["XLA_FLAGS"] == flags
    assert (setting.value, setting.by) == (value, by)


def test_other_flags_and_backend_options_are_kept() -> None:
    env = {"XLA_FLAGS": f"{DUMP} --xla_backend_extra_options=a=1,b"}
    routes.fold_xla_loops(env)
    assert env["XLA_FLAGS"] == (
        f"{DUMP} --xla_backend_extra_options=a=1,b,{routes.LOOP_FOLDING}={routes.FOLDING_BYTES}"
    )
    assert routes.extra_option(env["XLA_FLAGS"], "a") == "1"
    assert routes.extra_option(env["XLA_FLAGS"], "b") == ""


def test_a_second_backend_and_a_child_process_read_the_setting_as_frae_s() -> None:
    env = {"XLA_FLAGS": DUMP}
    routes.fold_xla_loops(env)
    child = dict(env)  # what a subprocess inherits
    assert routes.fold_xla_loops(env).by == routes.BY_FRAE
    assert routes.fold_xla_loops(child).by == routes.BY_FRAE
    assert child["XLA_FLAGS"] == env["XLA_FLAGS"]


def test_a_child_asked_for_defaults_takes_frae_s_setting_out_again() -> None:
    env = {"XLA_FLAGS": DUMP}
    routes.fold_xla_loops(env)
    child = {**env, routes.ROUTES: routes.DEFAULTS}
    assert routes.fold_xla_loops(child).by == routes.BY_DEFAULT
    assert child["XLA_FLAGS"] == DUMP


def test_a_user_who_changed_the_flags_after_frae_is_kept() -> None:
    env: dict[str, str] = {}
    routes.fold_xla_loops(env)
    env["XLA_FLAGS"] = f"--xla_backend_extra_options={routes.LOOP_FOLDING}=5"
    child = {**env, routes.ROUTES: routes.DEFAULTS}
    assert routes.fold_xla_loops(child) == routes.Setting(
        f"XLA_FLAGS {routes.LOOP_FOLDING}", "5", routes.BY_USER
    )


@pytest.mark.parametrize("value", ["fast", "", "BEST"])
def test_an_unknown_choice_of_routes_is_refused_naming_the_variable(value: str) -> None:
    env = {routes.ROUTES: value}
    with pytest.raises(ValueError, match=f"{routes.ROUTES} must be 'best' or 'defaults'"):
        routes.fold_xla_loops(env)
    assert "XLA_FLAGS" not in env


FOLDED_LOOPS = """
import json, frae
from impls.tf_while.model import tf

model, x = frae.create("tf_while"), tf.zeros((1, 37, 2))
gradient = model.compiled["loss_and_grads"]
hlo = gradient.experimental_get_compiler_ir(model.config, model.variables, x, x)("optimized_hlo")
print(json.dumps({"routes": [str(s) for s in model.routes],
                  "folded": hlo.count('xla_cpu_small_call="true"')}))
"""


def _fresh(script: str, *args: str, **environment: str) -> dict[str, Any]:
    """What ``script`` prints last, as JSON, in a fresh process without this one's XLA flags."""
    return dict(fresh_json(script, *args, without=("XLA_FLAGS", routes.BEFORE), **environment))


@pytest.mark.slow
@pytest.mark.backend_specific("tf_while")
@pytest.mark.parametrize(
    ("environment", "folded", "by"),
    [
        ({}, 2, routes.BY_FRAE),
        ({routes.ROUTES: routes.DEFAULTS}, 0, routes.BY_DEFAULT),
        ({"XLA_FLAGS": USERS_OWN}, 0, routes.BY_USER),
    ],
    ids=["best", "defaults", "users-own"],
)
def test_tf_while_s_gradient_loops_fold_on_its_route_alone(
    environment: dict[str, str], folded: int, by: str
) -> None:
    """The optimized HLO of tf_while's gradient: both loops (forward and backward) hoisted
    into one call each on the route, none under the defaults or a user's small threshold."""
    pytest.importorskip("tensorflow")
    seen = _fresh(FOLDED_LOOPS, **environment)
    assert seen["folded"] == folded
    assert [f"({by})" in setting for setting in seen["routes"]] == [True]


def test_a_compiler_option_is_passed_unless_the_user_or_the_defaults_say_otherwise() -> None:
    wanted = {"xla_cpu_experimental_ynn_fusion_type": ""}
    option = "jax.jit compiler_options xla_cpu_experimental_ynn_fusion_type"
    assert routes.compiler_options(wanted, {}) == (
        wanted,
        (routes.Setting(option, "''", routes.BY_FRAE),),
    )
    users = {"XLA_FLAGS": "--xla_dump_to=/d --xla_cpu_experimental_ynn_fusion_type=reduce"}
    assert routes.compiler_options(wanted, users) == (
        {},
        (routes.Setting(option, "reduce", routes.BY_USER),),
    )
    defaults = {routes.ROUTES: routes.DEFAULTS}
    assert routes.compiler_options(wanted, defaults) == (
        {},
        (routes.Setting(option, None, routes.BY_DEFAULT),),
    )


ROUTE_RUN = """
import json, sys, numpy as np, frae

results = {}
configs = {
    "default": frae.FRAEConfig(),
    "state": frae.FRAEConfig(feedback="state", state_dim=8),
    "wide": frae.FRAEConfig(encoder_units=(64,), latent_dim=16, decoder_units=(64,)),
}
for label, config in configs.items():
    model = frae.create(sys.argv[1], config, seed=1)
    x = frae.data.multi_sine(batch=3, steps=200, features=config.input_dim)
    results[f"{label} predict"] = model.predict(x).tolist()
    loss, grads = model.loss_and_grads(x)
    results[f"{label} loss"] = [loss]
    results[f"{label} gradients"] = np.concatenate([g.ravel() for g in grads.values()]).tolist()
print(json.dumps(results))
"""


def _route_results(backend: str, **environment: str) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in _fresh(ROUTE_RUN, backend, **environment).items()}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "environment"),
    [("tf_while", {}), ("keras_rnn", {"KERAS_BACKEND": "tensorflow"})],
    ids=["tf_while", "keras_rnn-tensorflow"],
)
def test_xla_s_loop_folding_changes_float32_rounding_alone(
    backend: str, environment: dict[str, str]
) -> None:
    """The same outputs, loss and gradients on the route and on XLA's defaults, to within
    float32 rounding of each array's largest entry (printed: the figure docs/performance.md
    quotes, ``pytest -s -k rounding``)."""
    pytest.importorskip("tensorflow")
    best = _route_results(backend, **environment)
    defaults = _route_results(backend, **environment, **{routes.ROUTES: routes.DEFAULTS})
    worst = {
        name: float(np.max(np.abs(best[name] - defaults[name])) / np.max(np.abs(best[name])))
        for name in best
    }
    print(f"\n{backend}: largest difference over the largest entry, route against defaults:")
    print("\n".join(f"  {name}: {value:.2g}" for name, value in worst.items()))
    assert max(worst.values()) <= 1e-6, worst


REMAT_RUN = """
import json, keras, numpy as np, frae

calls = []
remat = keras.remat
keras.remat = lambda function: calls.append(function) or remat(function)
model = frae.create("keras_rnn", frae.FRAEConfig(), seed=1)
results = {"routes": [str(setting) for setting in model.routes]}
for batch in (1, 64):
    x = frae.data.multi_sine(batch=batch, steps=50, features=2)
    traced_before = len(calls)
    loss, grads = model.loss_and_grads(x)
    results[f"B={batch} recomputed"] = len(calls) > traced_before
    results[f"B={batch} loss"] = [loss]
    results[f"B={batch} gradients"] = np.concatenate([g.ravel() for g in grads.values()]).tolist()
print(json.dumps(results))
"""


@pytest.mark.slow
def test_keras_on_jax_recomputes_from_b_64_on_its_route_alone_with_the_same_bits() -> None:
    """On its route alone Keras on JAX recomputes a gradient's step from B = 64, with equal loss
    and gradients; its routes say so, YNNPACK's fusions off."""
    pytest.importorskip("jax")
    best = _fresh(REMAT_RUN, KERAS_BACKEND="jax")
    defaults = _fresh(REMAT_RUN, KERAS_BACKEND="jax", **{routes.ROUTES: routes.DEFAULTS})
    assert (best["B=1 recomputed"], best["B=64 recomputed"]) == (False, True)
    assert (defaults["B=1 recomputed"], defaults["B=64 recomputed"]) == (False, False)
    for option in ("keras.remat", "ynn_fusion_type"):
        assert any(option in s and "(frae)" in s for s in best["routes"])
        assert any(option in s and "(framework default)" in s for s in defaults["routes"])
    for name in ("B=1 loss", "B=1 gradients", "B=64 loss", "B=64 gradients"):
        np.testing.assert_allclose(best[name], defaults[name], rtol=1e-6, atol=0, err_msg=name)
