"""What a ``KerasRNNBackend`` builds for its config, and its reuse by the next backend of that
config once the backend that built it is gone.

Keras compiles a model's functions for that model object alone: its predict function, the
gradient function over it and each trainer's train step are traced and compiled again for
every new object, though an object of the same config computes the same program. So the
models of a dropped backend wait here (``LIMIT`` of them, the least recently dropped going
first), and a new backend of an equal config takes them, writes its own weights into them and
zeroes their optimizers (``KerasRNNBackend.trainer``): what it computes is what a fresh build
computes, without the compilation. Models a caller was given (``keras_model``) may still be in
the caller's hands, so they are never reused; nor are those of a data-parallel engine, which
belong to its devices.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from frae.config import FRAEConfig
from impls.keras_rnn.model import build_models, canonical_name, keras
from impls.keras_rnn.train import Gradients, gradient_function, squared_error_model

LIMIT = 8
"""Built models kept for reuse, at most, over every config."""


@dataclass
class Built:
    """The Keras models of one config, their variables by canonical name, and the functions
    and trainers compiled over them."""

    keras_model: keras.Model
    encoder: keras.Model
    decoder: keras.Model
    cell: Any
    squared_error_model: keras.Model
    variables: dict[str, keras.Variable]
    gradients: Gradients
    trainers: dict[str, keras.Model] = field(default_factory=dict)
    handed_out: bool = False
    """Whether ``keras_model`` was given to a caller, who may still hold it."""


Key = tuple[FRAEConfig, bool | str]
"""A config and the ``jit_compile`` its models were compiled with."""
_idle: OrderedDict[int, tuple[Key, Built]] = OrderedDict()
_lock = threading.Lock()


def build(config: FRAEConfig, jit_compile: bool | str) -> Built:
    """The models of ``config``, their variables zeros, compiled with ``jit_compile``."""
    keras_model, encoder, decoder = build_models(config)
    cell = keras_model.get_layer("frae_rnn").cell
    error_model = squared_error_model(config, cell)
    if jit_compile != "auto":  # predicting needs no compile(), nor an optimizer
        for model in (keras_model, encoder, decoder):
            model.jit_compile = jit_compile
    return Built(
        keras_model,
        encoder,
        decoder,
        cell,
        error_model,
        {canonical_name(v): v for v in keras_model.weights},
        gradient_function(error_model, jit_compile is not False),
    )


def take(key: Key) -> Built | None:
    """The models a dropped backend built for ``key``, its config and ``jit_compile``, if
    any wait."""
    with _lock:
        for handle, (kept_for, built) in _idle.items():
            if kept_for == key:
                del _idle[handle]
                return built
    return None


def reuse_when_gone(owner: object, key: Key, built: Built) -> None:
    """Keep ``built`` for the next backend of ``key`` once ``owner`` is gone."""
    weakref.finalize(owner, _keep, key, built).atexit = False


def _keep(key: Key, built: Built) -> None:
    if built.handed_out:
        return
    with _lock:
        _idle[id(built)] = (key, built)
        while len(_idle) > LIMIT:
            _idle.popitem(last=False)


def forget() -> None:
    """Drop every model kept for reuse: the next backend of any config builds and compiles
    its own."""
    with _lock:
        _idle.clear()
