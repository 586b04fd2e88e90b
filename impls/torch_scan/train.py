"""Training in PyTorch: the loss (with the learned prior's bits, where the config has a
``rate_weight``), its gradient by autograd through the scan, the process
group data parallelism trains on, and the contract's SGD and Adam from ``torch.optim``."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from frae.codec.rate import FLOOR_BITS
from frae.optimizers import ADAM
from frae.params import Weights
from frae.training_state import TrainingState
from impls.torch_scan import model

Unroll = Callable[[model.Module, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
"""``module, x -> (x̂, ẑ)``: ``model.unroll``'s outputs and codes, compiled."""


def information(centred: torch.Tensor, log_scale: torch.Tensor, step: float) -> torch.Tensor:
    """I = −log2 p of codes at ``centred`` = u − μ ``(…, L)`` under the scales ρ, unfloored,
    in the product's form, no factor's log cancelling (``frae.codec.rate``)::

        s = exp(ρ),  a = (u − μ + Δ/2) / s,  −b = (μ − u + Δ/2) / s
        I = −(log σ(a) + log σ(−b) + log(−expm1(−Δ/s))) / ln 2

    1/s is exp(−ρ), a factor: a quotient's gradient would divide by s², which underflows to 0
    where ρ is far below 0."""
    inverse_scale = torch.exp(-log_scale)
    log_p = (
        nn.functional.logsigmoid((centred + step / 2) * inverse_scale)
        + nn.functional.logsigmoid((step / 2 - centred) * inverse_scale)
        + torch.log(-torch.expm1(-step * inverse_scale))
    )
    return log_p / -math.log(2.0)


def symbol_bits(
    codes: torch.Tensor, location: torch.Tensor, log_scale: torch.Tensor, step: float
) -> torch.Tensor:
    """Each code's bits min(P, I), P = ``FLOOR_BITS``, for codes u = ẑ ``(…, L)`` under the
    prior (μ, ρ) ``(L,)``. A floored symbol (I > P) passes no gradient to μ, ρ or u: its I is
    taken at u = μ with s = 1, whose slopes are finite, where its own may be 0 / 0 (Δ/s
    rounding to 0 for a very wide prior)."""
    centred = codes - location
    with torch.no_grad():
        floored = information(centred, log_scale, step) > FLOOR_BITS
    kept = information(
        torch.where(floored, 0.0, centred), torch.where(floored, 0.0, log_scale), step
    )
    return torch.where(floored, FLOOR_BITS, kept)


def loss(unrolled: Unroll, module: model.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """mean((x̂ - y)²) over ``(B, T, F)``, plus with λ = ``rate_weight`` λ·mean over ``(B, T)``
    of bits_t = Σ_l ``symbol_bits``, from the codes ẑ the scan stacked (straight through to z
    in its backward). Outside the compiled ``unrolled``: Inductor's C++ wrapper fails to
    compile a graph holding both (PyTorch 2.14)."""
    outputs, codes = unrolled(module, x)
    distortion = nn.functional.mse_loss(outputs, y)
    weight, step, prior = module.config.rate_weight, module.config.code_step, module.prior
    if weight is None or step is None or prior is None:
        return distortion
    bits = symbol_bits(codes, prior.location, prior.log_scale, step).sum(dim=-1)
    return distortion + weight * bits.mean()


Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class LossModule(nn.Module):
    """``loss(x, y)`` as a module whose parameters are ``frae``'s: what
    ``DistributedDataParallel`` wraps."""

    def __init__(self, frae: model.Module, loss: Loss) -> None:
        super().__init__()
        self.frae = frae
        self.loss = loss

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.loss(x, y)


def process_group_rank(devices: int) -> int:
    """This process's rank in the default ``torch.distributed`` process group, which must
    have ``devices`` processes (one device per process)."""
    joined = torch.distributed.is_available() and torch.distributed.is_initialized()
    present = torch.distributed.get_world_size() if joined else 1
    if devices != present:
        group = f"a process group of {present}" if joined else "no process group"
        raise ValueError(
            f"devices={devices}, but torch.distributed has {present} (one device per "
            f"process, {group}): DistributedDataParallel trains on every process of the "
            f"default group, so start {devices} processes that each call "
            f"torch.distributed.init_process_group(world_size={devices}) before create "
            "(see examples/data_parallel.py)"
        )
    return torch.distributed.get_rank()


def optimizer(name: str, module: model.Module, learning_rate: float) -> torch.optim.Optimizer:
    """The contract's optimizers over ``module``'s parameters: ``"sgd"``, w ← w - lr·g, or
    ``"adam"``, w ← w - lr·m̂/(√v̂ + ε); β rounded to float32 as in the other backends."""
    parameters = list(module.parameters())
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=learning_rate)
    beta_1, beta_2 = (float(beta) for beta in ADAM.float32_betas())
    return torch.optim.Adam(
        parameters, lr=learning_rate, betas=(beta_1, beta_2), eps=ADAM.epsilon, foreach=True
    )


def resume(update: torch.optim.Optimizer, module: model.Module, start: TrainingState) -> None:
    """``start``'s step and moments into ``torch.optim.Adam``'s state (none for SGD or a fresh
    start)."""
    if start.optimizer == "sgd" or start.step == 0:
        return
    first, second = (model.to_native(module.config, moment) for moment in (start.m, start.v))
    for name, parameter in model.named_parameters_of(module).items():
        update.state[parameter] = {
            "step": torch.tensor(float(start.step), dtype=torch.float32),
            "exp_avg": torch.from_numpy(first[name].copy()),
            "exp_avg_sq": torch.from_numpy(second[name].copy()),
        }


def moments(update: torch.optim.Optimizer, module: model.Module) -> tuple[Weights, Weights]:
    """Adam's m and v of every parameter, by canonical name (copies); empty for SGD."""
    if not isinstance(update, torch.optim.Adam):
        return {}, {}
    parameters = model.named_parameters_of(module)

    def canonical(key: str) -> Weights:
        native = {name: update.state[parameter][key] for name, parameter in parameters.items()}
        return {
            name: np.array(value)
            for name, value in model.to_canonical(module.config, native).items()
        }

    return canonical("exp_avg"), canonical("exp_avg_sq")


def apply_update(update: torch.optim.Optimizer) -> None:
    """``update.step()``; an update too large for float32 leaves the weights NaN, as the
    other backends' overflow does, where ``torch.optim.Adam`` would raise."""
    try:
        update.step()
    except RuntimeError as error:
        if "without overflow" not in str(error):
            raise
        with torch.no_grad():
            for group in update.param_groups:
                for parameter in group["params"]:
                    parameter.fill_(math.nan)
