"""The FRAE recurrence as an ``nn.Module``, stepped through time by PyTorch's scan operator.

A parameter's name is its canonical name with ``.`` for ``/`` and ``weight`` for ``kernel``
(``encoder.dense_0.weight``), each kernel stored ``(out, in)``; the GRU is ``nn.GRUCell``
(``frae.gru_layout``); with ``rate_weight`` set, the learned prior's μ and ρ are
``prior.location`` and ``prior.log_scale``, which only the loss reads. ``to_canonical`` and
``load_canonical`` are the one conversion.

The time loop is ``torch._higher_order_ops.scan``: under ``torch.compile`` Inductor lowers it
to one ``while`` loop, where a Python ``for`` loop would be unrolled into T copies.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping

import numpy as np

if (
    "tensorflow" in sys.modules
    and "triton" not in sys.modules
    and importlib.util.find_spec("triton") is not None
):
    # torch.compile imports Triton, which crashes the interpreter once TensorFlow is loaded
    raise ImportError(
        "torch_scan cannot start in this process: TensorFlow was imported before Triton "
        "(PyTorch's compiler), and Triton then crashes (tensorflow#124205); import "
        "torch._dynamo, or frae.quiet.load_triton_before_tensorflow(), before tensorflow"
    )

import torch
from torch import nn
from torch._higher_order_ops.scan import scan

from frae import gru_layout
from frae.config import FRAEConfig, Layer
from frae.quantization import SYMBOL_LIMIT

Step = tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]
"""A step's ``(carry, y)``: the new feedback, and ``(x̂_t, z_t)`` to stack over time."""

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "swish": nn.functional.silu,  # a·sigmoid(a)
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "linear": lambda pre: pre,
}


class Quantizer(nn.Module):
    """ẑ = Δ·clip(round(z / Δ), −Q, Q), round half to even, and straight through in the
    backward pass where ``|z / Δ| ≤ Q`` (the contract's "Quantized codes"); without a code
    step, z. Δ is a buffer, not a Python float: torch.compile makes a float an input of its
    graph, which the scan cannot carry."""

    code_step: torch.Tensor

    def __init__(self, code_step: float | None) -> None:
        super().__init__()
        self.enabled = code_step is not None
        step = torch.tensor(1.0 if code_step is None else code_step)
        self.register_buffer("code_step", step, persistent=False)

    def passes_gradient(self, code: torch.Tensor) -> torch.Tensor:
        """Where the straight-through estimator passes the gradient: ``|z / Δ| ≤ Q``."""
        return (code / self.code_step).abs() <= SYMBOL_LIMIT

    def forward(self, code: torch.Tensor) -> torch.Tensor:
        if not self.enabled:
            return code
        grid = torch.clamp(torch.round(code / self.code_step), -SYMBOL_LIMIT, SYMBOL_LIMIT)
        straight = torch.where(self.passes_gradient(code), code - code.detach(), 0.0)
        return (grid * self.code_step).detach() + straight


class Prior(nn.Module):
    """The learned prior's parameters, μ (``location``) and ρ = log s (``log_scale``), each
    ``(L,)`` (the contract's "Rate: training the codec for its bits"); the loss reads them,
    the recurrence never does."""

    def __init__(self, latent_dim: int) -> None:
        super().__init__()
        self.location = nn.Parameter(torch.zeros(latent_dim))
        self.log_scale = nn.Parameter(torch.zeros(latent_dim))


def prior_for(config: FRAEConfig) -> Prior | None:
    """A model's ``prior``: a ``Prior`` where ``config`` has a ``rate_weight``, else none."""
    return None if config.rate_weight is None else Prior(config.latent_dim)


GRU_MODULE = "decoder_gru"
"""``StateFRAE``'s attribute holding its ``nn.GRUCell``."""


def parameter_name(canonical: str) -> str:
    """``"encoder/dense_0/kernel"`` -> ``"encoder.dense_0.weight"``; the GRU's
    ``"decoder/gru/kernel"`` -> ``"decoder_gru.weight_ih"`` (``gru_layout.TORCH_NAMES``)."""
    layer, _, kind = canonical.rpartition("/")
    if layer == "decoder/gru":
        return f"{GRU_MODULE}.{gru_layout.TORCH_NAMES[kind]}"
    return f"{layer.replace('/', '.')}.{'weight' if kind == 'kernel' else kind}"


class DenseStack(nn.Module):
    """Dense layers applied in turn, ``h ← act(h @ kernel + bias)``, under their short names."""

    def __init__(self, layers: tuple[Layer, ...]) -> None:
        super().__init__()
        self.layers = nn.ModuleDict(
            {layer.short_name: nn.Linear(layer.fan_in, layer.units) for layer in layers}
        )
        self.activations = [ACTIVATIONS[layer.activation] for layer in layers]

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for linear, activation in zip(self.layers.values(), self.activations, strict=True):
            h = activation(linear(h))
        return h


class FRAE(nn.Module):
    """Encoder and decoder of one config; ``step`` is the recurrent cell, the carry being the
    feedback x̂_{t-1} ``(B, F)``::

        z_t = encoder(concat(x_t, x̂_{t-1}))     # (B, L)
        x̂_t = decoder(concat(z_t, x̂_{t-1}))     # (B, F)
    """

    def __init__(self, config: FRAEConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = DenseStack(config.encoder_layers)
        self.quantize = Quantizer(config.code_step)
        self.decoder = DenseStack(config.decoder_layers)
        self.prior = prior_for(config)

    def step(self, feedback: torch.Tensor, x_t: torch.Tensor) -> Step:
        """x̂_{t-1}, x_t -> x̂_t, (x̂_t, z_t)."""
        z_t = self.quantize(self.encoder(torch.cat([x_t, feedback], dim=-1)))
        output = self.decoder(torch.cat([z_t, feedback], dim=-1))
        # the scan forbids outputs that alias each other or a value saved for the gradient
        # (tanh's backward saves its output): copies, which Inductor writes from its kernel
        return output.clone(), (output.clone(), z_t.clone())

    def decode_step(
        self, feedback: torch.Tensor, z_t: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x̂_{t-1}, z_t -> x̂_t, x̂_t: the decoder alone, on a given code."""
        z_t = self.quantize(z_t)
        output = self.decoder(torch.cat([z_t, feedback], dim=-1))
        return output.clone(), output.clone()


class StateFRAE(nn.Module):
    """The state-feedback FRAE: encoder, the decoder's GRU and its dense layers; the carry is
    the GRU's state s_{t-1} ``(B, H)``::

        z_t = encoder(concat(x_t, s_{t-1}))                       # (B, L)
        a = z_t @ K + b_K;  c = s_{t-1} @ U + b_U                 # (B, 3H): [r | p | n]
        r = σ(a_r + c_r);  p = σ(a_p + c_p);  n = tanh(a_n + r ⊙ c_n)
        s_t = (1 - p) ⊙ n + p ⊙ s_{t-1}                          # (B, H)
        x̂_t = decoder(s_t)                                      # (B, F)
    """

    def __init__(self, config: FRAEConfig) -> None:
        super().__init__()
        gru = config.gru
        if gru is None:
            raise ValueError(f'StateFRAE needs feedback="state", got {config.feedback!r}')
        self.config = config
        self.encoder = DenseStack(config.encoder_layers)
        self.quantize = Quantizer(config.code_step)
        self.decoder_gru = nn.GRUCell(gru.input_dim, gru.state_dim)  # GRU_MODULE
        self.decoder = DenseStack(config.decoder_layers)
        self.prior = prior_for(config)

    def step(self, state: torch.Tensor, x_t: torch.Tensor) -> Step:
        """s_{t-1}, x_t -> s_t, (x̂_t, z_t)."""
        z_t = self.quantize(self.encoder(torch.cat([x_t, state], dim=-1)))
        state = self.decoder_gru(z_t, state)
        output = self.decoder(state)
        # copies, as in ``FRAE.step``: the state is saved for the gradient of the decoder's
        # first product, the code for the GRU's
        return state.clone(), (output.clone(), z_t.clone())

    def decode_step(
        self, state: torch.Tensor, z_t: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """s_{t-1}, z_t -> s_t, x̂_t: the GRU and the decoder alone, on a given code."""
        state = self.decoder_gru(self.quantize(z_t), state)
        return state.clone(), self.decoder(state).clone()


Module = FRAE | StateFRAE


def module_for(config: FRAEConfig) -> Module:
    """``FRAE`` for output feedback, ``StateFRAE`` for state feedback."""
    return FRAE(config) if config.gru is None else StateFRAE(config)


def named_parameters_of(module: Module) -> dict[str, nn.Parameter]:
    """The module's parameters by name, with the ``layers`` level of ``DenseStack`` elided:
    ``encoder.dense_0.weight``."""
    return {
        name.replace(".layers.", "."): parameter for name, parameter in module.named_parameters()
    }


def to_canonical(config: FRAEConfig, tensors: Mapping[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Parameters (or their gradients) by the module's names -> NumPy by canonical name."""
    gru, prefix = config.gru, f"{GRU_MODULE}."
    cell = {
        name.removeprefix(prefix): tensor.detach().numpy()
        for name, tensor in tensors.items()
        if name.startswith(prefix)
    }
    from_cell = {} if gru is None else gru_layout.from_torch(gru, cell)
    canonical = {}
    for name in config.parameter_shapes():
        if name in from_cell:
            canonical[name] = from_cell[name]
            continue
        value = tensors[parameter_name(name)].detach().numpy()
        canonical[name] = value.T if name.endswith("kernel") else value
    return canonical


def to_native(config: FRAEConfig, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``to_canonical``'s inverse, for weights or anything of their layout (Adam's moments)."""
    gru = config.gru
    cell_names = () if gru is None else tuple(gru.parameter_shapes())
    native = {
        parameter_name(name): value.T if name.endswith("kernel") else value
        for name, value in weights.items()
        if name not in cell_names
    }
    if gru is not None and any(name in weights for name in cell_names):
        cell = gru_layout.to_torch(gru, weights)
        native |= {f"{GRU_MODULE}.{name}": value for name, value in cell.items()}
    return {name: np.ascontiguousarray(value) for name, value in native.items()}


def load_canonical(module: Module, weights: Mapping[str, np.ndarray]) -> None:
    """Copy canonical weights into ``module`` (``to_native``)."""
    parameters = named_parameters_of(module)
    with torch.no_grad():
        for name, value in to_native(module.config, weights).items():
            parameters[name].copy_(torch.from_numpy(value))


def unroll(
    config: FRAEConfig,
    weights: Module,
    sequences: torch.Tensor,
    *,
    codes_given: bool = False,
    state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Step the recurrence of the module ``weights`` from ``state`` ``(B, S)`` (zeros for
    ``None``) over x, or with ``codes_given`` over the codes z for the decoder alone.

    Returns:
        ``(x̂, z, feedback)``: x̂ and z each ``(B, T, ·)``, and the scan's final carry
        x̂_T (or s_T) ``(B, S)``.
    """
    if state is None:
        state = sequences.new_zeros(sequences.shape[0], config.feedback_dim)
    time_major = sequences.transpose(0, 1)
    if codes_given:
        last, outputs = scan(weights.decode_step, state, time_major)
        return outputs.transpose(0, 1), sequences, last
    last, (outputs, codes) = scan(weights.step, state, time_major)
    return outputs.transpose(0, 1), codes.transpose(0, 1), last


def one_step(
    weights: Module, sequences: torch.Tensor, state: torch.Tensor, *, codes_given: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``unroll`` of sequences with T = 1: the cell called once, without the scan."""
    frame = sequences[:, 0]
    if codes_given:
        last, output = weights.decode_step(state, frame)
        return output[:, None], sequences, last
    last, (output, code) = weights.step(state, frame)
    return output[:, None], code[:, None], last
