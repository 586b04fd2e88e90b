"""The other ways PyTorch 2 can run the FRAE loop on a CPU, each a benchmark variant.

``torch_scan`` (the backend) compiles the scan higher-order op whole with Inductor's C++
wrapper, for inference and gradients (``impls.torch_scan.backend.route``; under
``FRAE_ROUTES=defaults``, Inductor's Python wrapper: the variant ``torch_scan[defaults]``).
These are the other routes it was chosen over, with ``torch_scan``'s module, weights and
training, so that only the loop differs:

- ``TorchCompiledStepBackend``: ``torch.compile`` of one time step, called from a Python
  loop (the route a PyTorch user tries first);
- ``TorchScriptBackend``: the loop in TorchScript, run by its interpreter (TorchScript is
  deprecated in PyTorch 2, and kept here as what existing models use);
- ``TorchAOTIBackend``: ``torch.export`` of the scan, compiled ahead of time by
  AOTInductor into a shared library per input shape; inference only.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from typing import Any

import torch

from bench.baselines.layout import ACTIVATION_CODES
from bench.baselines.torch_eager import output_feedback, python_loop_functions
from frae.backend import Array, Moments, TrainStep
from frae.config import FRAEConfig
from frae.training_state import TrainingState
from impls.torch_scan import model
from impls.torch_scan.backend import Functions, TorchScanBackend


@functools.lru_cache(maxsize=16)
def compiled_cells(config: FRAEConfig) -> Functions:
    """``config``'s cells, each compiled by ``torch.compile``, in a Python loop."""
    compile_ = functools.partial(torch.compile, fullgraph=True, dynamic=True)
    return python_loop_functions(
        config, compile_(model.FRAE.step), compile_(model.FRAE.decode_step)
    )


class TorchCompiledStepBackend(TorchScanBackend):
    """A Python loop over ``torch.compile`` of one time step: the compiled cell is fast, but
    each call passes Dynamo's guards and autograd records each step."""

    name = "torch_compiled_step"

    def functions(self) -> Functions:
        return compiled_cells(self.config)

    def gradient_functions(self) -> Functions:
        return self.functions()


def _activate(pre: torch.Tensor, code: int) -> torch.Tensor:
    if code == 0:
        return torch.nn.functional.silu(pre)
    if code == 1:
        return torch.tanh(pre)
    if code == 2:
        return torch.sigmoid(pre)
    return pre


def _dense_stack(
    h: torch.Tensor, kernels: list[torch.Tensor], biases: list[torch.Tensor], codes: list[int]
) -> torch.Tensor:
    for i in range(len(kernels)):
        h = _activate(torch.nn.functional.linear(h, kernels[i], biases[i]), codes[i])
    return h


def _script_loop(
    sequences: torch.Tensor,
    feedback: torch.Tensor,
    layers: list[list[torch.Tensor]],
    encoder_codes: list[int],
    decoder_codes: list[int],
    codes_given: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``model.unroll`` in the subset of Python that TorchScript compiles, from the feedback
    x̂₀ ``(B, F)``; ``layers`` is ``[encoder kernels, encoder biases, decoder kernels,
    decoder biases]``. Returns x̂, z and the feedback after the last step."""
    outputs: list[torch.Tensor] = []
    codes: list[torch.Tensor] = []
    for t in range(sequences.shape[1]):
        z = sequences[:, t]
        if not codes_given:
            z = _dense_stack(torch.cat([z, feedback], 1), layers[0], layers[1], encoder_codes)
        feedback = _dense_stack(torch.cat([z, feedback], 1), layers[2], layers[3], decoder_codes)
        outputs.append(feedback)
        codes.append(z)
    return torch.stack(outputs, 1), torch.stack(codes, 1), feedback


@functools.cache
def script_loop() -> Any:
    """``_script_loop`` compiled by TorchScript (once per process)."""
    return torch.jit.script(_script_loop)


def scripted_functions(config: FRAEConfig) -> Functions:
    """``Functions`` running the TorchScript loop over a module's parameters."""
    if config.gru is not None:
        raise NotImplementedError(
            'the TorchScript loop has no GRU: it runs feedback="output" models only'
        )
    encoder_codes, decoder_codes = (
        [ACTIVATION_CODES[layer.activation] for layer in layers]
        for layers in (config.encoder_layers, config.decoder_layers)
    )

    def run(
        module: model.Module, x: torch.Tensor, state: torch.Tensor | None, codes_given: bool
    ) -> Any:
        module = output_feedback(module)
        layers = [
            [linear.weight for linear in module.encoder.layers.values()],
            [linear.bias for linear in module.encoder.layers.values()],
            [linear.weight for linear in module.decoder.layers.values()],
            [linear.bias for linear in module.decoder.layers.values()],
        ]
        feedback = x.new_zeros(x.shape[0], config.input_dim) if state is None else state
        return script_loop()(x, feedback, layers, encoder_codes, decoder_codes, codes_given)

    return Functions(
        unroll=lambda module, x, state: run(module, x, state, False),
        decode=lambda module, z, state: run(module, z, state, True)[::2],
    )


class TorchScriptBackend(TorchScanBackend):
    """The loop in TorchScript: no Python per step, but its interpreter dispatches each
    operator of each step, and autograd records them."""

    name = "torch_script"

    def functions(self) -> Functions:
        return scripted_functions(self.config)

    def gradient_functions(self) -> Functions:
        return self.functions()


class TorchAOTIBackend(TorchScanBackend):
    """``torch.export`` + AOTInductor: the scan compiled ahead of time into a shared library
    per input shape (Inductor's C++ wrapper, without Dynamo's guards at each call); the
    weights and the state are inputs of the library, so neither ``set_weights`` nor a new
    state needs a recompilation. Inference only: AOTInductor compiles no backward."""

    name = "torch_aoti"

    def functions(self) -> Functions:
        return Functions(unroll=self._ahead_of_time(False), decode=self._ahead_of_time(True))

    def gradient_functions(self) -> Functions:
        return self.functions()

    def _ahead_of_time(self, codes_given: bool) -> Callable[..., Any]:
        packages: dict[tuple[int, ...], Any] = {}

        def run(module: model.Module, x: torch.Tensor, state: torch.Tensor | None) -> Any:
            if state is None:
                state = x.new_zeros(x.shape[0], self.config.feedback_dim)
            weights = tuple(p.detach() for p in module.parameters())
            key = tuple(x.shape)
            if key not in packages:
                packages[key] = _aoti_package(module, x, state, weights, codes_given)
            outputs, codes, last = packages[key](x, state, *weights)
            return (outputs, last) if codes_given else (outputs, codes, last)

        return run

    def _loss_and_grads(self, x: Array, y: Array) -> Any:
        raise NotImplementedError("AOTInductor compiles inference only")

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        raise NotImplementedError("AOTInductor compiles inference only")


class _Unrolled(torch.nn.Module):
    """``model.unroll`` of a module whose state and parameters are passed in, for
    ``torch.export``: both are inputs of the library, so neither a new state nor new
    weights compile it again."""

    def __init__(self, module: model.Module, codes_given: bool) -> None:
        super().__init__()
        self.module, self.codes_given = module, codes_given
        self.names = [name for name, _ in module.named_parameters()]

    def forward(self, sequences: torch.Tensor, state: torch.Tensor, *weights: torch.Tensor) -> Any:
        parameters = dict(zip(self.names, weights, strict=True))
        return torch.func.functional_call(
            self.module,
            parameters,
            (sequences,),
            {"codes_given": self.codes_given, "state": state},
        )


def _aoti_package(
    module: model.Module,
    x: torch.Tensor,
    state: torch.Tensor,
    weights: tuple[torch.Tensor, ...],
    codes_given: bool,
) -> Callable[..., Any]:
    """Export, compile and load the loop for the shapes of ``x`` and ``state``."""
    # AOTInductor's entry points, as PyTorch documents them (a private module, public names)
    from torch._inductor import aoti_compile_and_package, aoti_load_package

    program = torch.export.export(_Unrolled(module, codes_given), (x, state, *weights))
    # the loader unpacks the package where it keeps it: the package file is not needed after
    with tempfile.TemporaryDirectory(prefix="frae-aoti-") as folder:
        path = os.path.join(folder, "unroll.pt2")
        return aoti_load_package(aoti_compile_and_package(program, package_path=path))
