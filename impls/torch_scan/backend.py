"""``TorchScanBackend``: the contract in PyTorch, the scan compiled whole by Inductor."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch._functorch.config
import torch.distributed
import torch.fx.experimental._config
from torch.nn.parallel import DistributedDataParallel

from frae import routes
from frae.backend import Array, BaseBackend, Moments, TrainStep, kept_slot
from frae.config import FRAEConfig
from frae.export import made_where_installed
from frae.params import Weights
from frae.routes import Setting
from frae.training_state import TrainingState
from impls.torch_scan import export, model, train

_COMPILER_NOTICES = ("No CUDA runtime is found", "is missing a c-shim implementation")
"""Two warnings Inductor logs on a CPU that are not about this model: dropped."""
for _logger in ("torch.utils.cpp_extension", "torch._inductor.ir"):
    logging.getLogger(_logger).addFilter(
        lambda record: not any(notice in record.getMessage() for notice in _COMPILER_NOTICES)
    )
# Dynamo's advice to leave Python 3.13.0 for faster guards: they run once per call here,
# not per time step
warnings.filterwarnings("ignore", "Guards may run slower on Python 3.13.0", RuntimeWarning)
# and PyTorch's CUDA wheels' notice, on a machine without a GPU, that no CUDA driver answers
warnings.filterwarnings("ignore", "CUDA initialization", UserWarning)

Options = tuple[tuple[str, bool], ...]
"""Inductor options, as ``torch.compile(options=...)`` takes them, hashable for the cache."""
CPP_WRAPPER = "cpp_wrapper"
"""Inductor's option: the scan's loop runs in C++ (True) or from Python (False, the default)."""
USER_CPP_WRAPPER = "TORCHINDUCTOR_CPP_WRAPPER"
"""The user's own setting of ``cpp_wrapper``, which Inductor reads at import: kept."""
COMPILE_OPTIONS: Options = ((CPP_WRAPPER, True),)
PYTHON_WRAPPER: Options = ((CPP_WRAPPER, False),)


@dataclass(frozen=True)
class Route:
    """The Inductor options ``torch_scan`` compiles with: ``inference``, ``gradients`` (the
    forward whose backward autograd takes, compiled together), and ``one_step_gradients``
    for a gradient one time step long (T = 1); ``settings`` says which, and whose."""

    inference: Options
    gradients: Options
    one_step_gradients: Options
    settings: tuple[Setting, ...]


def route(environ: Mapping[str, str] | None = None) -> Route:
    """``torch_scan``'s route (``frae.routes``): Inductor's C++ wrapper (a gradient step 1.7x
    to 2.5x faster: docs/performance.md), but the Python wrapper for the gradient of a
    one-step scan, which PyTorch 2.14's C++ wrapper fails to compile.

    A user's ``TORCHINDUCTOR_CPP_WRAPPER`` is kept (a one-step gradient still takes the
    Python wrapper); ``FRAE_ROUTES=defaults`` passes no option.
    """
    env = os.environ if environ is None else environ
    chosen = routes.chosen(dict(env))
    users = env.get(USER_CPP_WRAPPER)

    def settings(*values: tuple[str | None, str]) -> tuple[Setting, ...]:
        return tuple(
            Setting(f"inductor {CPP_WRAPPER} ({kind})", value, by)
            for kind, (value, by) in zip(
                ("inference", "gradients", "gradients, T = 1"), values, strict=True
            )
        )

    if users is not None:
        theirs = (users, routes.BY_USER)
        if users == "1":
            fallback = (str(False), routes.BY_FRAE)
            return Route((), (), PYTHON_WRAPPER, settings(theirs, theirs, fallback))
        return Route((), (), (), settings(theirs, theirs, theirs))
    if chosen == routes.DEFAULTS:
        default = (None, routes.BY_DEFAULT)
        return Route((), (), (), settings(default, default, default))
    cpp, python = (str(True), routes.BY_FRAE), (str(False), routes.BY_FRAE)
    return Route(COMPILE_OPTIONS, COMPILE_OPTIONS, PYTHON_WRAPPER, settings(cpp, cpp, python))


# Dynamo keeps its compiled code on the Python function compiled (``_unroll``) for
# every config together, and stops at 8 (``recompile_limit``): each config, and each of
# inference, gradients and B = 1, takes one.
RECOMPILE_LIMIT = 256


Unrolled = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""``(x̂, z, feedback)``: ``model.unroll``'s outputs, the feedback after the last step."""
Decoded = tuple[torch.Tensor, torch.Tensor]
"""``(x̂, feedback)``: the decoder's outputs and its feedback after the last step."""


@dataclass(frozen=True)
class Functions:
    """``model.unroll`` as ``(module, x, state) -> (x̂, z, feedback)`` and with
    ``codes_given`` as ``(module, z, state) -> (x̂, feedback)``; ``state=None`` is zeros."""

    unroll: Callable[[model.Module, torch.Tensor, torch.Tensor | None], Unrolled]
    decode: Callable[[model.Module, torch.Tensor, torch.Tensor | None], Decoded]


def _unroll(
    config: FRAEConfig, module: model.Module, x: torch.Tensor, state: torch.Tensor | None
) -> Unrolled:
    return model.unroll(config, module, x, state=state)


def _decode(
    config: FRAEConfig, module: model.Module, z: torch.Tensor, state: torch.Tensor | None
) -> Decoded:
    outputs, _, last = model.unroll(config, module, z, codes_given=True, state=state)
    return outputs, last


@functools.lru_cache(maxsize=128)
def compiled(config: FRAEConfig, options: Options = COMPILE_OPTIONS) -> Functions:
    """``config``'s functions compiled by Inductor with ``options``, shared by every backend
    of that config.

    The module is an argument (Dynamo guards on its structure, not its identity), sizes are
    dynamic from the first call (B = 1 and T = 1 still compile once more each), and the
    state is a graph input, so one compilation serves every module, size and state.
    """
    compile_ = functools.partial(torch.compile, fullgraph=True, dynamic=True, options=dict(options))
    return Functions(
        unroll=compile_(functools.partial(_unroll, config)),
        decode=compile_(functools.partial(_decode, config)),
    )


def eager_frames(functions: Functions) -> Functions:
    """``functions``, but an inference call with T = 1 runs the cell once eagerly
    (``model.one_step``), cheaper than the compiled graph's call (docs/performance.md)."""

    def one_frame(sequences: torch.Tensor) -> bool:
        return sequences.shape[1] == 1 and not torch.is_grad_enabled()

    def unroll(module: model.Module, x: torch.Tensor, state: torch.Tensor | None) -> Unrolled:
        if state is not None and one_frame(x):
            return model.one_step(module, x, state)
        return functions.unroll(module, x, state)

    def decode(module: model.Module, z: torch.Tensor, state: torch.Tensor | None) -> Decoded:
        if state is not None and one_frame(z):
            outputs, _, last = model.one_step(module, z, state, codes_given=True)
            return outputs, last
        return functions.decode(module, z, state)

    return Functions(unroll=unroll, decode=decode)


def one_step_apart(functions: Functions, one_step: Functions) -> Functions:
    """``functions``, but a call with T = 1 runs ``one_step`` (``Route.one_step_gradients``)."""
    if functions is one_step:
        return functions

    def pick(sequences: torch.Tensor) -> Functions:
        return one_step if sequences.shape[1] == 1 else functions

    return Functions(
        unroll=lambda module, x, state: pick(x).unroll(module, x, state),
        decode=lambda module, z, state: pick(z).decode(module, z, state),
    )


class TorchScanBackend(BaseBackend):
    """float32 on the CPU; ``torch.compile`` of the scan with ``route()``'s options, autograd
    for back-propagation, ``torch.optim`` for the updates. With ``devices=N``, ``fit`` trains
    under ``DistributedDataParallel`` on the N processes of the default process group."""

    name = "torch_scan"
    export_formats, export_refusals = made_where_installed(
        {"onnx": ("onnxscript", "onnxruntime")}, refused={"pt2": export.AOTI_REFUSAL}
    )
    routes: tuple[Setting, ...] = route().settings  # as at import; each object has its own
    data_parallel: DistributedDataParallel | None = None
    rank = 0

    def _place(self, devices: int) -> None:
        self.rank = train.process_group_rank(devices)

    def _build(self, weights: Weights) -> None:
        self.route = route()
        self.routes = self.route.settings
        self.module = model.module_for(self.config)
        self.compiled = self.functions()
        self.compiled_for_gradients = self.gradient_functions()
        self._write_weights(weights)
        if self.devices > 1:
            # a collective: every process creates its backend together, and DDP starts
            # them all from rank 0's weights
            self.data_parallel = DistributedDataParallel(
                train.LossModule(self.module, self._tensor_loss)
            )

    def functions(self) -> Functions:
        """The loop for inference."""
        return eager_frames(compiled(self.config, self.route.inference))

    def gradient_functions(self) -> Functions:
        """The loop whose gradient autograd takes."""
        return one_step_apart(
            compiled(self.config, self.route.gradients),
            compiled(self.config, self.route.one_step_gradients),
        )

    def _export(self, format: str, folder: Path) -> str:
        return export.WRITERS[format](self.config, self._read_weights(), folder)

    def _read_weights(self) -> Mapping[str, Any]:
        return model.to_canonical(self.config, model.named_parameters_of(self.module))

    def _write_weights(self, weights: Weights) -> None:
        model.load_canonical(self.module, weights)

    def _infer(self, function: Callable[..., Any], x: Array, state: Array) -> Any:
        with torch.no_grad():
            return compiled_call(
                function, self.module, torch.from_numpy(x), torch.from_numpy(state)
            )

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        outputs, _, last = self._infer(self.compiled.unroll, x, state)
        return outputs.numpy(), last.numpy()

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        _, codes, last = self._infer(self.compiled.unroll, x, state)
        return codes.numpy(), last.numpy()

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        outputs, last = self._infer(self.compiled.decode, z, state)
        return outputs.numpy(), last.numpy()

    def _loss(self, x: Array, y: Array) -> torch.Tensor:
        return self._tensor_loss(torch.from_numpy(x), torch.from_numpy(y))

    def _tensor_loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        functions = self.compiled_for_gradients
        with shapes_apart():
            return train.loss(
                lambda module, x: functions.unroll(module, x, None)[:2], self.module, x, y
            )

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        parameters = model.named_parameters_of(self.module)
        loss = self._loss(x, y)
        grads = torch.autograd.grad(loss, list(parameters.values()))
        return loss.item(), model.to_canonical(
            self.config, dict(zip(parameters, grads, strict=True))
        )

    def _keep_weights(self, step: int) -> None:
        """Clones of the parameters (tensors, not NumPy: a tenth of the cost)."""
        kept = {
            name: p.detach().clone() for name, p in model.named_parameters_of(self.module).items()
        }
        self._kept[kept_slot(step)] = model.to_canonical(self.config, kept)

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        update = train.optimizer(optimizer, self.module, learning_rate)
        train.resume(update, self.module, start)
        moments = functools.partial(train.moments, update, self.module)
        if self.data_parallel is not None:
            return self._data_parallel_step(self.data_parallel, update), moments

        def step(x: Array, y: Array) -> float:
            update.zero_grad()
            loss = self._loss(x, y)
            loss.backward()
            train.apply_update(update)
            return loss.item()

        return step, moments

    def _data_parallel_step(
        self, data_parallel: DistributedDataParallel, update: torch.optim.Optimizer
    ) -> TrainStep:
        """This process's equal part of the mini-batch through DDP's forward and
        ``backward()`` (DDP averages gradients in hooks that only ``backward()`` runs), then
        the same update in every process.

        Dynamo's DDP optimizer is off: the scan's backward yields every gradient at once,
        leaving nothing to overlap. The loss is all-reduced too, so that every process stops
        at the same non-finite loss and rolls back together.
        """
        parts = self.devices

        def step(x: Array, y: Array) -> float:
            rows = slice(self.rank * len(x) // parts, (self.rank + 1) * len(x) // parts)
            update.zero_grad()
            with torch._dynamo.config.patch(optimize_ddp=False):
                loss = data_parallel(torch.from_numpy(x[rows]), torch.from_numpy(y[rows]))
            loss.backward()
            train.apply_update(update)
            total = loss.detach().clone()
            torch.distributed.all_reduce(total)
            return total.item() / parts

        return step


COMPILER_SETTINGS = threading.RLock()
"""Held while the process-wide compiler settings or Dynamo's stance are changed."""
RECOMPILE = "Detected recompile when torch.compile stance is 'fail_on_recompile'"


def compiled_call(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, under ``shapes_apart`` only when Dynamo must compile it: entering
    the settings costs more than a compiled call on one frame, so a call first tries under
    the stance ``fail_on_recompile`` and runs again under them if it would compile.
    """
    with COMPILER_SETTINGS:
        try:
            with torch.compiler.set_stance("fail_on_recompile"), no_first_call_analysis():
                return function(*args)
        except RuntimeError as error:
            if not str(error).startswith(RECOMPILE):
                raise
        with shapes_apart():
            return function(*args)


@contextlib.contextmanager
def shapes_apart() -> Iterator[None]:
    """This backend's Dynamo limit, and no duck shapes (which would make a B or T equal to a
    layer's width at the first trace a constant), while the ``with`` lasts."""
    with (
        COMPILER_SETTINGS,
        torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT),
        # a config module whose patch is installed when it loads: untyped
        torch.fx.experimental._config.patch(use_duck_shape=False),  # type: ignore[attr-defined]
        no_first_call_analysis(),
    ):
        yield


def no_first_call_analysis() -> contextlib.AbstractContextManager[None]:
    """AOTAutograd's check that custom operators' outputs alias no input, off: it ran a
    compiled scan's first call many times slower (docs/performance.md), and the model calls
    no custom operator. It is read at each call until one runs it."""
    return torch._functorch.config.patch(check_custom_op_aliasing=False)
