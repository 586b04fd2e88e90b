"""Shapes, dtypes, and that every call starts afresh from x̂₀ = 0."""

from __future__ import annotations

import numpy as np
import pytest

from parity_tests.cases import BOTH_MODELS, CASE_PARAMS, Case
from parity_tests.conftest import MakeBackend
from parity_tests.tolerances import assert_close


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_shapes_and_dtypes(make_backend: MakeBackend, case: Case) -> None:
    model = make_backend(case.config)
    x = case.inputs()
    batch, steps, features = x.shape
    outputs = {
        "predict": (model.predict(x), (batch, steps, features)),
        "encode": (model.encode(x), (batch, steps, case.config.latent_dim)),
        "decode": (model.decode(model.encode(x)), (batch, steps, features)),
    }
    loss, grads = model.loss_and_grads(x)
    assert isinstance(loss, float)
    weights = model.get_weights()
    assert list(grads) == list(weights)
    for name, grad in grads.items():
        assert grad.shape == weights[name].shape, name
    arrays = {**{f"{method} output": value for method, (value, _) in outputs.items()}, **grads}
    for what, value in arrays.items():
        assert type(value) is np.ndarray, what
        assert value.dtype in (np.float32, np.float64), what
        assert value.flags.writeable, f"{what} is read-only"
    for method, (value, shape) in outputs.items():
        assert value.shape == shape, method


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_decode_of_encode_equals_predict(make_backend: MakeBackend, case: Case) -> None:
    model = make_backend(case.config, seed=1)
    x = case.inputs(seed=4)
    assert_close("self", model.decode(model.encode(x)), model.predict(x))


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_every_call_starts_from_zero_feedback(make_backend: MakeBackend, case: Case) -> None:
    model = make_backend(case.config, seed=2)
    x, other = case.inputs(seed=5), case.inputs(seed=6) * 3.0
    first = model.predict(x)
    model.predict(other)
    model.encode(other)
    model.decode(model.encode(other))
    model.loss_and_grads(other)
    np.testing.assert_array_equal(model.predict(x), first)


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_sequences_in_a_batch_are_independent(make_backend: MakeBackend, case: Case) -> None:
    model = make_backend(case.config, seed=2)
    x = case.inputs(seed=7)
    together = model.predict(x)
    for index in range(len(x)):
        alone = model.predict(x[index : index + 1])
        assert_close("self", alone[0], together[index], f"sequence {index}")


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_prefix_gives_the_same_first_steps(make_backend: MakeBackend, case: Case) -> None:
    model = make_backend(case.config, seed=2)
    x = case.inputs(seed=8)
    assert_close("self", model.predict(x[:, :3]), model.predict(x)[:, :3])


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_one_sequence_gives_two_dimensional_outputs(make_backend: MakeBackend, case: Case) -> None:
    model = make_backend(case.config, seed=2)
    x = case.inputs(seed=9)[0]
    assert model.predict(x).shape == x.shape
    assert model.encode(x).shape == (x.shape[0], case.config.latent_dim)
    np.testing.assert_array_equal(model.predict(x), model.predict(x[None])[0])
    np.testing.assert_array_equal(
        model.decode(model.encode(x)), model.decode(model.encode(x[None]))[0]
    )
