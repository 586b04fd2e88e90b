"""PyTorch's eager loop, as a PyTorch user writes it: a benchmark baseline.

An ``nn.Module`` of ``nn.Linear`` layers, a Python ``for`` loop over time, autograd for the
gradients and ``torch.optim.Adam`` with the contract's constants (PyTorch, too, adds ε
outside √v̂).
No ``torch.compile``, no scripting: the code a PyTorch user writes first. The harness runs
it only where ``torch`` is importable; it is not part of any extra.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from frae.backend import Array, BaseBackend, TrainStep
from frae.config import FRAEConfig
from frae.optimizers import ADAM
from frae.params import Weights

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "swish": nn.functional.silu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "linear": lambda pre: pre,
}


class FRAEModule(nn.Module):
    """Encoder and decoder as ``nn.Linear`` stacks; ``forward`` loops over time in Python."""

    def __init__(self, config: FRAEConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder, self.decoder = (
            nn.ModuleList(nn.Linear(layer.fan_in, layer.units) for layer in layers)
            for layers in (config.encoder_layers, config.decoder_layers)
        )
        self.encoder_activations, self.decoder_activations = (
            [ACTIVATIONS[layer.activation] for layer in layers]
            for layers in (config.encoder_layers, config.decoder_layers)
        )

    def decode_step(self, code: torch.Tensor, feedback: torch.Tensor) -> torch.Tensor:
        h = torch.cat([code, feedback], dim=1)
        for layer, activation in zip(self.decoder, self.decoder_activations, strict=True):
            h = activation(layer(h))
        return h

    def forward(
        self, sequences: torch.Tensor, codes_given: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x̂, z)`` from x (B, T, F), or from codes z (B, T, L) with ``codes_given``."""
        feedback = sequences.new_zeros(sequences.shape[0], self.config.input_dim)
        outputs, codes = [], []
        for t in range(sequences.shape[1]):
            if codes_given:
                code = sequences[:, t]
            else:
                code = torch.cat([sequences[:, t], feedback], dim=1)
                for layer, activation in zip(self.encoder, self.encoder_activations, strict=True):
                    code = activation(layer(code))
            feedback = self.decode_step(code, feedback)
            outputs.append(feedback)
            codes.append(code)
        return torch.stack(outputs, dim=1), torch.stack(codes, dim=1)


class TorchEagerBackend(BaseBackend):
    """``FRAEModule`` behind the contract, float32 on the CPU."""

    name = "torch_eager"

    def _build(self, weights: Weights) -> None:
        self.module = FRAEModule(self.config)
        self._write_weights(weights)

    def _layers(self) -> dict[str, nn.Linear]:
        """Canonical layer name -> its ``nn.Linear`` (whose weight is the kernel transposed)."""
        names = [layer.name for layer in self.config.layers]
        layers = [*self.module.encoder, *self.module.decoder]
        return dict(zip(names, layers, strict=True))  # type: ignore[arg-type]

    def _read_weights(self) -> Mapping[str, Any]:
        weights = {}
        for name, layer in self._layers().items():
            weights[f"{name}/kernel"] = layer.weight.detach().numpy().T
            weights[f"{name}/bias"] = layer.bias.detach().numpy()
        return weights

    def _write_weights(self, weights: Weights) -> None:
        with torch.no_grad():
            for name, layer in self._layers().items():
                layer.weight.copy_(torch.from_numpy(weights[f"{name}/kernel"].T.copy()))
                layer.bias.copy_(torch.from_numpy(weights[f"{name}/bias"]))

    def _run(self, sequences: Array, codes_given: bool) -> tuple[Array, Array]:
        with torch.no_grad():
            outputs, codes = self.module(torch.from_numpy(sequences), codes_given)
        return outputs.numpy(), codes.numpy()

    def _predict(self, x: Array) -> Array:
        return self._run(x, codes_given=False)[0]

    def _encode(self, x: Array) -> Array:
        return self._run(x, codes_given=False)[1]

    def _decode(self, z: Array) -> Array:
        return self._run(z, codes_given=True)[0]

    def _loss(self, x: Array, y: Array) -> torch.Tensor:
        outputs, _ = self.module(torch.from_numpy(x))
        return nn.functional.mse_loss(outputs, torch.from_numpy(y))

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        self.module.zero_grad()
        loss = self._loss(x, y)
        loss.backward()
        grads = {}
        for name, layer in self._layers().items():
            assert layer.weight.grad is not None and layer.bias.grad is not None
            grads[f"{name}/kernel"] = layer.weight.grad.numpy().T.copy()
            grads[f"{name}/bias"] = layer.bias.grad.numpy().copy()
        return float(loss.detach()), grads

    def _train_step(self, optimizer: str, learning_rate: float) -> TrainStep:
        parameters = self.module.parameters()
        update = (
            torch.optim.SGD(parameters, lr=learning_rate)
            if optimizer == "sgd"
            else torch.optim.Adam(
                parameters, lr=learning_rate, betas=(ADAM.beta_1, ADAM.beta_2), eps=ADAM.epsilon
            )
        )

        def step(x: Array, y: Array) -> float:
            update.zero_grad()
            loss = self._loss(x, y)
            loss.backward()
            update.step()
            return float(loss.item())

        return step
