"""PyTorch's eager loop, as a PyTorch user writes it first: ``torch_scan``'s ``nn.Module`` and
``torch.optim`` stepped by a Python ``for`` loop over time, nothing compiled, every operator
of every step dispatched from Python and recorded by autograd.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from frae.config import FRAEConfig
from impls.torch_scan import model
from impls.torch_scan.backend import Decoded, Functions, TorchScanBackend, Unrolled

Cell = Callable[[model.FRAE, torch.Tensor, torch.Tensor], tuple[torch.Tensor, Any]]
"""``(module, x̂_{t-1}, x_t) -> (x̂_t, y_t)``: ``model.FRAE.step`` or ``decode_step``."""


def python_loop(
    config: FRAEConfig,
    module: model.Module,
    sequences: torch.Tensor,
    cell: Cell,
    codes_given: bool,
    state: torch.Tensor | None = None,
) -> Unrolled:
    """``model.unroll`` as a Python loop over ``cell``, for an output-feedback ``module``,
    from ``state`` (x̂₀, zeros for ``None``): x̂, z and the feedback after the last step;
    ``TypeError`` for a state-feedback one."""
    if not isinstance(module, model.FRAE):
        raise TypeError(
            f"module: expected an output-feedback model.FRAE, got {type(module).__name__}"
        )
    feedback = sequences.new_zeros(sequences.shape[0], config.input_dim) if state is None else state
    outputs, codes = [], []
    for t in range(sequences.shape[1]):
        feedback, y_t = cell(module, feedback, sequences[:, t])
        outputs.append(y_t if codes_given else y_t[0])
        codes.append(sequences[:, t] if codes_given else y_t[1])
    return torch.stack(outputs, dim=1), torch.stack(codes, dim=1), feedback


def python_loop_functions(config: FRAEConfig) -> Functions:
    """``Functions`` that run ``python_loop`` over ``model.FRAE.step`` (or, decoding,
    ``model.FRAE.decode_step``)."""
    if config.gru is not None:
        raise NotImplementedError(
            'the Python loop has no GRU: it runs feedback="output" models only'
        )

    def decode(module: model.Module, z: torch.Tensor, state: torch.Tensor | None) -> Decoded:
        outputs, _, last = python_loop(config, module, z, model.FRAE.decode_step, True, state)
        return outputs, last

    return Functions(
        unroll=lambda module, x, state: python_loop(
            config, module, x, model.FRAE.step, False, state
        ),
        decode=decode,
    )


class TorchEagerBackend(TorchScanBackend):
    """``torch_scan``'s module and training, the loop in Python, nothing compiled."""

    name = "torch_eager"

    def functions(self) -> Functions:
        return python_loop_functions(self.config)

    def gradient_functions(self) -> Functions:
        return self.functions()
