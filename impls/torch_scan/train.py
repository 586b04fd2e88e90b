"""Training in PyTorch: the loss, its gradient by autograd through the scan, the process
group data parallelism trains on, and the contract's SGD and Adam from ``torch.optim``; then,
for output feedback only, the back-propagation through time written by hand."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np
import torch
from torch import nn
from torch._higher_order_ops.scan import scan

from frae import activations
from frae.config import Layer
from frae.optimizers import ADAM
from frae.params import Weights
from frae.training_state import TrainingState
from impls.torch_scan import model

Unroll = Callable[[model.Module, torch.Tensor], torch.Tensor]
"""``module, x -> x̂``: ``model.unroll``'s outputs, compiled."""


def mean_squared_error(
    unrolled: Unroll, module: model.Module, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """mean((x̂ - y)²) over every element of ``(B, T, F)``, x̂ from ``unrolled`` (``unroll``
    compiled: the loss outside it, since Inductor's C++ wrapper fails to compile a graph
    holding both the scan and the loss in PyTorch 2.14, redeclaring a buffer)."""
    return nn.functional.mse_loss(unrolled(module, x), y)


Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``x, y -> mean((x̂ - y)²)``, x̂ from the FRAE a ``LossModule`` holds."""


class LossModule(nn.Module):
    """``loss(x, y)`` as a module whose parameters are ``frae``'s: what
    ``DistributedDataParallel`` wraps. DDP averages the gradients of the parameters of the
    module it wraps, by hooks on their accumulation, once per forward it runs."""

    def __init__(self, frae: model.Module, loss: Loss) -> None:
        super().__init__()
        self.frae = frae
        self.loss = loss

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.loss(x, y)


def process_group_rank(devices: int) -> int:
    """This process's rank in the default ``torch.distributed`` process group, which must
    have ``devices`` processes: PyTorch's data parallelism runs one device per process, and
    ``DistributedDataParallel`` trains on every process of its group."""
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


def resume(update: torch.optim.Optimizer, module: model.Module, start: TrainingState) -> None:
    """``start``'s step and moments into ``torch.optim.Adam``'s state of each parameter, in
    the module's layout (``model.to_native``); nothing for SGD or a fresh start, which
    ``torch.optim`` begins itself."""
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


# --- Back-propagation through time written by hand (output feedback) -------------------------

Records = tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]
"""What the forward keeps for the backward, per layer in ``config.layers`` order, time-major:
each layer's input ``(T, B, fan_in)`` and its activation's slope act'(a) ``(T, B, units)``."""


def activation_slope(name: str, pre: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """d act(a) / da from the pre-activation a and the output act(a)
    (``frae.activations``)."""
    return activations.activation_slope(name, pre, out, torch.sigmoid, torch.ones_like)


def _linears(module: model.FRAE) -> list[nn.Linear]:
    """The module's layers in ``config.layers`` order: the encoder's, then the decoder's."""
    layers = [*module.encoder.layers.values(), *module.decoder.layers.values()]
    return cast(list[nn.Linear], layers)  # a ModuleDict's values are typed as any Module


def parameters_in_layer_order(module: model.FRAE) -> list[torch.Tensor]:
    """Each layer's weight and then its bias, in ``config.layers`` order: the order of
    ``module.parameters()`` and of the gradients ``reverse_loop`` returns."""
    return [p for linear in _linears(module) for p in (linear.weight, linear.bias)]


def _recorded_stack(
    stack: model.DenseStack, table: tuple[Layer, ...], h: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """``stack(h)``, its layers described by ``table``, with each layer's input and act'(a)
    recorded on the way."""
    inputs, slopes = [], []
    for linear, activation, layer in zip(
        stack.layers.values(), stack.activations, table, strict=True
    ):
        # a copy: the scan forbids a recorded input that aliases another output
        inputs.append(h.clone())
        pre = linear(h)
        h = activation(pre)
        slopes.append(activation_slope(layer.activation, pre, h))
    return h, inputs, slopes


def recorded_unroll(module: model.FRAE, x: torch.Tensor) -> tuple[torch.Tensor, Records]:
    """The forward for the hand-written backward: x̂ time-major ``(T, B, F)`` and the records.

    The cell is ``module.step``'s, its layers ``module``'s, stepped by the scan from
    x̂₀ = 0; only the records are added, two more outputs per layer and step.
    """
    config = module.config

    def step(
        feedback: torch.Tensor, x_t: torch.Tensor
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]]:
        code, encoder_inputs, encoder_slopes = _recorded_stack(
            module.encoder, config.encoder_layers, torch.cat([x_t, feedback], dim=-1)
        )
        output, decoder_inputs, decoder_slopes = _recorded_stack(
            module.decoder, config.decoder_layers, torch.cat([code, feedback], dim=-1)
        )
        return output.clone(), (
            output.clone(),
            encoder_inputs + decoder_inputs,
            encoder_slopes + decoder_slopes,
        )

    feedback = x.new_zeros(x.shape[0], config.input_dim)
    _, (outputs, inputs, slopes) = scan(step, feedback, x.transpose(0, 1))
    return outputs, (tuple(inputs), tuple(slopes))


def reverse_loop(
    module: model.FRAE, d_outputs: torch.Tensor, slopes: tuple[torch.Tensor, ...]
) -> list[torch.Tensor]:
    """Each layer's d loss / d a (its d_pre) at every step, ``(T, B, units)`` in
    ``config.layers`` order, from ``d_outputs`` = d loss / d x̂ (``(T, B, F)``) and the
    slopes the forward recorded.

    One loop from t = T down to 1 carries only the feedback's gradient g = d loss / d x̂_t
    (``(B, F)``, 0 after the last step): the gradient reaching x̂_t is d_outputs[t] + g, and
    through each layer, last first, d_pre = d_out · act'(a) and d_in = d_pre @ kernelᵀ; the
    decoder's d_in splits into the code's rows (on into the encoder) and the feedback's,
    and the new g is the decoder's and the encoder's feedback rows summed.
    """
    config = module.config
    linears = _linears(module)
    encoder_depth = len(config.encoder_layers)

    def back_through(
        layers: range, d_out: torch.Tensor, slopes_t: tuple[torch.Tensor, ...]
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        d_pres = []
        for index in reversed(layers):
            d_pre = d_out * slopes_t[index]
            d_pres.append(d_pre)
            kernel_t = linears[index].weight  # (units, fan_in): the kernel transposed
            if index == 0:  # of the encoder's input, only the feedback's rows flow on
                kernel_t = kernel_t[:, config.input_dim :]
            d_out = d_pre @ kernel_t
        return d_out, d_pres[::-1]

    def step(
        d_feedback: torch.Tensor, xs: tuple[torch.Tensor, tuple[torch.Tensor, ...]]
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        d_output_t, slopes_t = xs
        d_decoder_in, decoder_d_pres = back_through(
            range(encoder_depth, len(linears)), d_output_t + d_feedback, slopes_t
        )
        d_encoder_feedback, encoder_d_pres = back_through(
            range(encoder_depth), d_decoder_in[:, : config.latent_dim], slopes_t
        )
        d_feedback = d_decoder_in[:, config.latent_dim :] + d_encoder_feedback
        return d_feedback, encoder_d_pres + decoder_d_pres

    d_feedback = d_outputs.new_zeros(d_outputs.shape[1:])
    _, d_pres = scan(step, d_feedback, (d_outputs, slopes), reverse=True)
    return d_pres


def weight_gradients(
    d_pres: list[torch.Tensor], inputs: tuple[torch.Tensor, ...]
) -> list[torch.Tensor]:
    """Each layer's weight and bias gradients, in ``parameters_in_layer_order``, each one
    product over all steps: d kernel = Σ_{t,b} input[t, b]ᵀ d_pre[t, b] and
    d bias = Σ_{t,b} d_pre[t, b], where summing inside the loop would add ten gradients
    per step."""
    grads = []
    for d_pre, layer_input in zip(d_pres, inputs, strict=True):
        # (units, T·B) @ (T·B, fan_in): nn.Linear's (out, in), the kernel transposed
        grads.append(d_pre.flatten(0, 1).T @ layer_input.flatten(0, 1))
        grads.append(d_pre.sum(dim=(0, 1)))
    return grads


RecordedUnroll = Callable[[model.FRAE, torch.Tensor], tuple[torch.Tensor, Records]]
"""``recorded_unroll``, compiled."""
ReverseLoop = Callable[[model.FRAE, torch.Tensor, tuple[torch.Tensor, ...]], list[torch.Tensor]]
"""``reverse_loop``, compiled."""


class HandWrittenBPTT(torch.autograd.Function):
    """mean((x̂ - y)²) over ``(B, T, F)`` whose backward is written by hand: autograd's
    ``backward`` and ``grad`` on this loss run ``reverse_loop`` and ``weight_gradients``,
    not a gradient derived by autograd or AOTAutograd.

    ``apply(forward, backward, module, x, y, *parameters_in_layer_order(module))``, with
    ``forward`` ``recorded_unroll`` and ``backward`` ``reverse_loop``, each compiled or
    not: the parameters are passed so that autograd knows the leaves the loss depends on,
    the loops read them from ``module``. x and y get no gradient. The loss and the weight
    gradients' products are single operations outside the compiled loops: Inductor's C++
    code guards a reduction on its size (at most 4096 elements or more), which would
    compile the loops again for a large B·T.
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        forward: RecordedUnroll,
        backward: ReverseLoop,
        module: model.FRAE,
        x: torch.Tensor,
        y: torch.Tensor,
        *parameters: torch.Tensor,
    ) -> torch.Tensor:
        outputs, (inputs, slopes) = forward(module, x)
        error = outputs - y.transpose(0, 1)
        ctx.save_for_backward(error, *inputs, *slopes)
        ctx.backward, ctx.module = backward, module  # type: ignore[attr-defined]
        return (error * error).mean()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: torch.autograd.function.FunctionCtx, d_loss: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        error, *records = ctx.saved_tensors  # type: ignore[attr-defined]
        depth = len(records) // 2
        inputs, slopes = tuple(records[:depth]), tuple(records[depth:])
        d_outputs = error * (2.0 * d_loss / error.numel())  # d loss / d x̂, time-major
        d_pres = ctx.backward(ctx.module, d_outputs, slopes)  # type: ignore[attr-defined]
        return (None, None, None, None, None, *weight_gradients(d_pres, inputs))


def hand_written_loss(
    forward: RecordedUnroll,
    backward: ReverseLoop,
    module: model.FRAE,
    x: torch.Tensor,
    y: torch.Tensor,
) -> torch.Tensor:
    """mean((x̂ - y)²), whose gradient autograd takes by ``HandWrittenBPTT.backward``."""
    return HandWrittenBPTT.apply(
        forward, backward, module, x, y, *parameters_in_layer_order(module)
    )
