"""``frae.create`` takes what the ``Backend`` protocol's users can call: an object that
delegates to a backend through ``__getattr__`` (a logging proxy) is a backend; an object
without the API is refused, naming what it lacks, delegated or not."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import frae
from frae.config import FRAEConfig
from frae.params import Weights
from frae.registry import BACKEND_ATTRIBUTES, BACKEND_METHODS

HERE = __name__


class LoggingProxy:
    """Passes every member on to the object it wraps, recording the name of each call."""

    def __init__(self, target: object) -> None:
        self.target = target
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        member = getattr(self.target, name)
        if not callable(member):
            return member

        def logged(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return member(*args, **kwargs)

        return logged


def logged_reference(
    config: FRAEConfig | None = None, *, seed: int = 0, weights: Weights | None = None
) -> LoggingProxy:
    return LoggingProxy(frae.create("reference", config, seed=seed, weights=weights))


class InferenceOnly:
    """``predict``, ``encode`` and ``decode`` of the reference, and nothing to train with."""

    def __init__(self, config: FRAEConfig | None, seed: int) -> None:
        reference = frae.create("reference", config, seed=seed)
        self.name, self.config = "inference_only", reference.config
        self.get_weights, self.set_weights = reference.get_weights, reference.set_weights
        self.predict, self.encode = reference.predict, reference.encode
        self.decode, self.initial_state = reference.decode, reference.initial_state


def inference_only(
    config: FRAEConfig | None = None, *, seed: int = 0, weights: Weights | None = None
) -> InferenceOnly:
    return InferenceOnly(config, seed)


def logged_inference_only(
    config: FRAEConfig | None = None, *, seed: int = 0, weights: Weights | None = None
) -> LoggingProxy:
    """A proxy that delegates to an object without the whole API."""
    return LoggingProxy(InferenceOnly(config, seed))


def test_a_proxy_that_delegates_through_getattr_is_a_backend() -> None:
    model = frae.create(f"{HERE}:logged_reference", seed=3)
    assert isinstance(model, LoggingProxy)
    x = np.random.default_rng(0).normal(size=(3, 4, model.config.input_dim))
    np.testing.assert_array_equal(model.predict(x), frae.create("reference", seed=3).predict(x))
    history = model.fit(x, epochs=2, learning_rate=1e-2)
    assert len(history["loss"]) == 2
    assert model.name == "reference"
    assert model.calls == ["predict", "fit"]


def test_the_protocol_alone_would_refuse_the_proxy() -> None:
    """Why ``create`` looks members up by ``getattr``: a runtime-checkable protocol's
    ``isinstance`` looks them up statically (Python 3.12 on), past ``__getattr__``."""
    assert not isinstance(logged_reference(), frae.Backend)


@pytest.mark.parametrize("factory", [inference_only, logged_inference_only])
def test_an_object_without_the_api_is_refused_naming_what_it_lacks(
    factory: Callable[..., object],
) -> None:
    with pytest.raises(TypeError, match=r"lacks the Backend API: it has no loss_and_grads, fit$"):
        frae.create(f"{HERE}:{factory.__name__}")


def test_the_members_checked_are_the_protocols() -> None:
    if not hasattr(typing, "get_protocol_members"):
        pytest.skip("typing.get_protocol_members is Python 3.13's")
    members = typing.get_protocol_members(frae.Backend)
    assert set(BACKEND_ATTRIBUTES) | set(BACKEND_METHODS) == members
