"""Training in PyTorch: the loss, its gradient by autograd through the scan, and the
contract's SGD and Adam from ``torch.optim``."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from frae.optimizers import ADAM
from impls.torch_scan import model

Unroll = Callable[[model.FRAE, torch.Tensor], torch.Tensor]
"""``module, x -> x̂``: ``model.unroll``'s outputs, compiled."""


def mean_squared_error(
    unrolled: Unroll, module: model.FRAE, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """mean((x̂ - y)²) over every element of ``(B, T, F)``, x̂ from ``unrolled`` (``unroll``
    compiled: the loss outside it, since Inductor's C++ wrapper fails to compile a graph
    holding both the scan and the loss in PyTorch 2.14, redeclaring a buffer)."""
    return nn.functional.mse_loss(unrolled(module, x), y)


def optimizer(name: str, module: model.FRAE, learning_rate: float) -> torch.optim.Optimizer:
    """The contract's optimizers over ``module``'s parameters: ``"sgd"``, w ← w - lr·g, or
    ``"adam"``, w ← w - lr·m̂/(√v̂ + ε), with ε outside the root as ``torch.optim.Adam``
    places it.

    β₁ and β₂ go in rounded to float32 (``ADAM.float32_betas``), so that the moment weights
    1 - β and the bias corrections 1 - βᵗ come from the same β as the other backends'.
    """
    parameters = list(module.parameters())
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=learning_rate)
    beta_1, beta_2 = (float(beta) for beta in ADAM.float32_betas())
    return torch.optim.Adam(
        parameters, lr=learning_rate, betas=(beta_1, beta_2), eps=ADAM.epsilon, foreach=True
    )


def apply_update(update: torch.optim.Optimizer) -> None:
    """``update.step()``; an update too large for float32 leaves the weights NaN.

    ``torch.optim.Adam`` forms lr/(1 - β₁ᵗ) as a float32 scalar before it multiplies, and
    refuses one beyond float32's range (a learning rate near 3.4e38) with a RuntimeError,
    where the other backends' updates overflow into the weights; both then end as
    ``TrainingDiverged``.
    """
    try:
        update.step()
    except RuntimeError as error:
        if "without overflow" not in str(error):
            raise
        with torch.no_grad():
            for group in update.param_groups:
                for parameter in group["params"]:
                    parameter.fill_(math.nan)
