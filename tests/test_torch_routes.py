"""``torch_scan``'s route (``frae.routes``): Inductor's C++ wrapper by default (Python for T = 1's
gradient), a user's ``TORCHINDUCTOR_CPP_WRAPPER`` kept, ``FRAE_ROUTES=defaults`` honoured."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from frae import routes
from parity_tests.cases import CASES
from parity_tests.tolerances import assert_close
from tests.processes import fresh_json

pytestmark = pytest.mark.backend_specific("torch_scan")
torch_backend = pytest.importorskip("impls.torch_scan.backend")

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
    torch = pytest.importorskip("torch")

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
