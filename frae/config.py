"""The model's configuration (SPEC section 1)."""

from __future__ import annotations

from dataclasses import dataclass

from frae import validation

ACTIVATIONS = ("swish", "tanh", "sigmoid", "linear")

FUSED_PRODUCT_MAX_SIZE = 256
"""Kernels with at most this many entries are applied as ``sum(h[..., :, None] * kernel,
axis=-2)``, not as a matmul, in every compiled backend.

XLA fuses that broadcast product and its sum with the bias and the activation into one loop
per layer, where a matmul stays a call of its own; in a time step of tiny layers, each call
costs more than its few multiplies (docs/performance.md has the measurements). Larger
kernels keep the matmul and its tuned library kernel. Both forms are float32 products with
float32 sums, held to the same tolerances.
"""


@dataclass(frozen=True)
class FRAEConfig:
    """Sizes and activations of the feedback recurrent autoencoder.

    The defaults reproduce the original model: 2 features, encoder 4 -> 3 -> latent 1,
    decoder 3 -> output 2, swish everywhere. Invalid values raise on construction.
    """

    input_dim: int = 2
    encoder_units: tuple[int, ...] = (4, 3)
    latent_dim: int = 1
    decoder_units: tuple[int, ...] = (3,)
    activation: str = "swish"
    output_activation: str = "swish"

    def __post_init__(self) -> None:
        checked = {
            "input_dim": validation.check_positive_int(self.input_dim, "input_dim"),
            "encoder_units": validation.check_units(self.encoder_units, "encoder_units"),
            "latent_dim": validation.check_positive_int(self.latent_dim, "latent_dim"),
            "decoder_units": validation.check_units(self.decoder_units, "decoder_units"),
            "activation": validation.check_choice(self.activation, "activation", ACTIVATIONS),
            "output_activation": validation.check_choice(
                self.output_activation, "output_activation", ACTIVATIONS
            ),
        }
        for field, value in checked.items():
            object.__setattr__(self, field, value)

    @property
    def encoder_layers(self) -> tuple[tuple[str, int], ...]:
        """``(name, units)`` of each encoder layer, the latent layer last."""
        hidden = tuple((f"encoder/dense_{i}", u) for i, u in enumerate(self.encoder_units))
        return (*hidden, ("encoder/latent", self.latent_dim))

    @property
    def decoder_layers(self) -> tuple[tuple[str, int], ...]:
        """``(name, units)`` of each decoder layer, the output layer last."""
        hidden = tuple((f"decoder/dense_{i}", u) for i, u in enumerate(self.decoder_units))
        return (*hidden, ("decoder/output", self.input_dim))

    def parameter_shapes(self) -> dict[str, tuple[int, ...]]:
        """Canonical names and shapes (SPEC section 2), in the order initial weights are drawn."""
        shapes: dict[str, tuple[int, ...]] = {}
        for layers, fan_in in (
            (self.encoder_layers, 2 * self.input_dim),
            (self.decoder_layers, self.latent_dim + self.input_dim),
        ):
            for name, units in layers:
                shapes[f"{name}/kernel"] = (fan_in, units)
                shapes[f"{name}/bias"] = (units,)
                fan_in = units
        return shapes
