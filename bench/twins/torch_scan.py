"""``TorchScanBPTTBackend``: ``torch_scan`` with back-propagation through time written by
hand."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import cast

import torch
from torch import nn
from torch._higher_order_ops.scan import scan

from bench.twins import refuse_rate_weight
from frae.activations import activation_slope
from frae.config import FRAEConfig, Layer
from frae.params import Weights
from impls.torch_scan import model
from impls.torch_scan.backend import PYTHON_WRAPPER, TorchScanBackend, shapes_apart

Records = tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]
"""What the forward keeps for the backward, per layer in ``config.layers`` order, time-major:
each layer's input ``(T, B, fan_in)`` and its activation's slope act'(a) ``(T, B, units)``."""


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
        slopes.append(activation_slope(layer.activation, pre, h, torch.sigmoid, torch.ones_like))
    return h, inputs, slopes


def recorded_unroll(module: model.FRAE, x: torch.Tensor) -> tuple[torch.Tensor, Records]:
    """``module.step`` scanned from x̂₀ = 0: x̂ time-major ``(T, B, F)`` and the records."""
    config = module.config

    def step(
        feedback: torch.Tensor, x_t: torch.Tensor
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]]:
        code, encoder_inputs, encoder_slopes = _recorded_stack(
            module.encoder, config.encoder_layers, torch.cat([x_t, feedback], dim=-1)
        )
        if config.code_step is not None:  # straight through: the clip's mask joins the slope
            encoder_slopes[-1] = encoder_slopes[-1] * module.quantize.passes_gradient(code)
            code = module.quantize(code)
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
    """Each layer's d_pre = d loss / d a at every step, ``(T, B, units)``, from ``d_outputs``
    = d loss / d x̂. One reverse loop carries only g = d loss / d x̂_t; through each layer
    d_pre = d_out · act'(a), d_in = d_pre @ kernelᵀ, and the new g is both sides' feedback rows.
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
    """d kernel = Σ_{t,b} input[t, b]ᵀ d_pre[t, b] and d bias = Σ_{t,b} d_pre[t, b], one
    product over all steps, in ``parameters_in_layer_order``."""
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
    """mean((x̂ - y)²) whose backward runs ``reverse_loop`` and ``weight_gradients``.

    The parameters are passed only so that autograd knows the leaves. The loss and the weight
    products stay outside the compiled loops: Inductor guards a reduction on its size, which
    would compile the loops again for a large B·T.
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


@functools.lru_cache(maxsize=64)
def compiled_hand_written(config: FRAEConfig) -> tuple[RecordedUnroll, ReverseLoop]:
    """``recorded_unroll`` and ``reverse_loop``, each compiled apart (there is no joint graph)
    with the Python wrapper: the C++ wrapper fails on a one-step reverse loop in PyTorch 2.14.
    """
    compile_ = functools.partial(
        torch.compile, fullgraph=True, dynamic=True, options=dict(PYTHON_WRAPPER)
    )
    # each call under the settings: autograd calls the backward outside the backend's ``with``
    return shapes_apart()(compile_(recorded_unroll)), shapes_apart()(compile_(reverse_loop))


class TorchScanBPTTBackend(TorchScanBackend):
    """``torch_scan`` whose gradients (``loss_and_grads``, ``fit``, DDP too) come from
    ``hand_written_loss``; a state-feedback model keeps ``torch_scan``'s autograd. A config
    with ``rate_weight`` is refused: ``HandWrittenBPTT`` has no rate term."""

    name = "torch_scan_bptt"

    def _build(self, weights: Weights) -> None:
        refuse_rate_weight(self.config, self.name)
        super()._build(weights)

    def _tensor_loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The loss, with autograd's record of it: one ``HandWrittenBPTT`` node (output
        feedback, its module an ``FRAE``), or ``torch_scan``'s (state feedback)."""
        if not isinstance(self.module, model.FRAE):
            return super()._tensor_loss(x, y)
        return hand_written_loss(*compiled_hand_written(self.config), self.module, x, y)
