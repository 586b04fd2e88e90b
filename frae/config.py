"""The model's configuration (the contract's "The model") and its layer table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from frae import validation

ACTIVATIONS = ("swish", "tanh", "sigmoid", "linear")
FEEDBACKS = ("output", "state")
"""What each step feeds back: the reconstruction x̂_{t-1} (the contract's "The model") or
the decoder's GRU state s_{t-1} (the contract's "State feedback")."""

PRIOR_LOCATION = "prior/location"
PRIOR_LOG_SCALE = "prior/log_scale"
"""The learned prior's parameters μ and ρ = log s, each (L,), with ``rate_weight`` set (the
contract's "Rate: training the codec for its bits"): initially zeros, never drawn."""

FUSED_PRODUCT_MAX_SIZE = 256
"""Kernels with at most this many entries are applied as ``sum(h[..., :, None] * kernel,
axis=-2)``, not as a matmul, in every compiled backend: XLA fuses it with the bias and the
activation, where a matmul's call costs more than a tiny layer's multiplies
(docs/performance.md)."""


@dataclass(frozen=True)
class Layer:
    """One dense layer of the step, ``h ← activation(h @ kernel + bias)``, its weights
    ``name + "/kernel"`` ``(fan_in, units)`` and ``name + "/bias"`` ``(units,)``."""

    name: str
    fan_in: int
    units: int
    activation: str

    @property
    def kernel(self) -> str:
        return f"{self.name}/kernel"

    @property
    def bias(self) -> str:
        return f"{self.name}/bias"

    @property
    def short_name(self) -> str:
        """The name within its side: ``"dense_0"``, ``"latent"``, ``"output"``."""
        return self.name.rpartition("/")[2]


@dataclass(frozen=True)
class GRU:
    """The decoder's GRU of a state-feedback model (the contract's "State feedback").

    ``a = z_t @ kernel + bias`` and ``c = s_{t-1} @ recurrent_kernel + recurrent_bias``, each
    of width 3H in column blocks [reset | update | candidate] (``GATES``); ``input_dim`` is
    L, ``state_dim`` H.
    """

    name: str
    input_dim: int
    state_dim: int

    GATES = ("reset", "update", "candidate")

    @property
    def kernel(self) -> str:
        return f"{self.name}/kernel"

    @property
    def recurrent_kernel(self) -> str:
        return f"{self.name}/recurrent_kernel"

    @property
    def bias(self) -> str:
        return f"{self.name}/bias"

    @property
    def recurrent_bias(self) -> str:
        return f"{self.name}/recurrent_bias"

    def parameter_shapes(self) -> dict[str, tuple[int, ...]]:
        """K, U, b_K, b_U: the order in which their initial values are drawn."""
        width = 3 * self.state_dim
        return {
            self.kernel: (self.input_dim, width),
            self.recurrent_kernel: (self.state_dim, width),
            self.bias: (width,),
            self.recurrent_bias: (width,),
        }


@dataclass(frozen=True)
class FRAEConfig:
    """Sizes and activations of the feedback recurrent autoencoder.

    The defaults reproduce the original model: 2 features, encoder 4 -> 3 -> latent 1,
    decoder 3 -> output 2, swish everywhere, the reconstruction fed back. With
    ``feedback="state"`` the decoder is a GRU of ``state_dim`` units followed by its dense
    layers, and its state is fed back (the contract's "State feedback"). With ``code_step`` Δ the
    code is quantized to multiples of Δ inside the recurrence (the contract's "Quantized
    codes"); with ``rate_weight`` λ as well, the loss adds λ times the code's bits a frame under
    a learned prior (the contract's "Rate: training the codec for its bits"). Invalid values
    raise on construction.
    """

    input_dim: int = 2
    encoder_units: tuple[int, ...] = (4, 3)
    latent_dim: int = 1
    decoder_units: tuple[int, ...] = (3,)
    activation: str = "swish"
    output_activation: str = "swish"
    feedback: str = "output"
    state_dim: int | None = None
    code_step: float | None = None
    rate_weight: float | None = None

    def __post_init__(self) -> None:
        checked = {
            "input_dim": validation.check_int(self.input_dim, "input_dim"),
            "encoder_units": validation.check_units(self.encoder_units, "encoder_units"),
            "latent_dim": validation.check_int(self.latent_dim, "latent_dim"),
            "decoder_units": validation.check_units(self.decoder_units, "decoder_units"),
            "activation": validation.check_choice(self.activation, "activation", ACTIVATIONS),
            "output_activation": validation.check_choice(
                self.output_activation, "output_activation", ACTIVATIONS
            ),
            "feedback": validation.check_choice(self.feedback, "feedback", FEEDBACKS),
            "code_step": validation.check_code_step(self.code_step),
        }
        checked["rate_weight"] = validation.check_rate_weight(
            self.rate_weight, validation.check_code_step(self.code_step)
        )
        if checked["feedback"] == "state":
            checked["state_dim"] = validation.check_int(self.state_dim, "state_dim")
        elif self.state_dim is not None:
            raise ValueError(
                'state_dim must be None with feedback="output" (it sizes the GRU state of '
                f'feedback="state"), got {validation.describe(self.state_dim)}'
            )
        for field, value in checked.items():
            object.__setattr__(self, field, value)

    @property
    def feedback_dim(self) -> int:
        """Width of what is fed back: F (the reconstruction) or H (the GRU state)."""
        return self.state_dim if self.state_dim is not None else self.input_dim

    @property
    def gru(self) -> GRU | None:
        """The decoder's GRU with state feedback; ``None`` with output feedback."""
        if self.state_dim is None:
            return None
        return GRU("decoder/gru", self.latent_dim, self.state_dim)

    @property
    def encoder_layers(self) -> tuple[Layer, ...]:
        """The encoder, ``[x_t, feedback]`` (width F + F, or F + H) in, the latent layer
        (width L) last."""
        return _stack(
            "encoder",
            self.input_dim + self.feedback_dim,
            self.encoder_units,
            ("latent", self.latent_dim),
            self.activation,
            self.activation,
        )

    @property
    def decoder_layers(self) -> tuple[Layer, ...]:
        """The decoder's dense layers, the output layer (width F) last, the only one with
        ``output_activation``. They read ``[z_t, x̂_{t-1}]`` (width L + F), or with state
        feedback the GRU's new state s_t (width H)."""
        return _stack(
            "decoder",
            self.state_dim if self.state_dim is not None else self.latent_dim + self.input_dim,
            self.decoder_units,
            ("output", self.input_dim),
            self.activation,
            self.output_activation,
        )

    @property
    def layers(self) -> tuple[Layer, ...]:
        """Every dense layer of a time step in order: the encoder's, then the decoder's (a
        state-feedback model's GRU, between them, is ``gru``)."""
        return self.encoder_layers + self.decoder_layers

    def parameter_shapes(self) -> dict[str, tuple[int, ...]]:
        """Canonical names and shapes, in the order initial weights are drawn."""
        shapes: dict[str, tuple[int, ...]] = {}
        for layer in self.encoder_layers:
            shapes |= _dense_shapes(layer)
        if self.gru is not None:
            shapes |= self.gru.parameter_shapes()
        for layer in self.decoder_layers:
            shapes |= _dense_shapes(layer)
        if self.rate_weight is not None:
            shapes |= dict.fromkeys(self.prior_parameters, (self.latent_dim,))
        return shapes

    @property
    def prior_parameters(self) -> tuple[str, ...]:
        """The learned prior's canonical names, μ then ρ; none without ``rate_weight``."""
        return () if self.rate_weight is None else (PRIOR_LOCATION, PRIOR_LOG_SCALE)

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON values (unit tuples as lists)."""
        fields = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> FRAEConfig:
        """The config ``to_dict`` described; unknown fields are a ``ValueError``."""
        if not isinstance(fields, Mapping):
            raise TypeError(f"config fields must be a dict, got {type(fields).__name__}")
        unknown = sorted(set(fields) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(
                f"config fields must be among {list(cls.__dataclass_fields__)}, got {unknown}"
            )
        return cls(**fields)


def _dense_shapes(layer: Layer) -> dict[str, tuple[int, ...]]:
    return {layer.kernel: (layer.fan_in, layer.units), layer.bias: (layer.units,)}


def _stack(
    side: str,
    fan_in: int,
    hidden_units: tuple[int, ...],
    last: tuple[str, int],
    hidden_activation: str,
    last_activation: str,
) -> tuple[Layer, ...]:
    """The layers of one side: ``dense_i`` of ``hidden_units``, then ``last`` (name, units)."""
    names = [f"{side}/dense_{i}" for i in range(len(hidden_units))] + [f"{side}/{last[0]}"]
    units = [*hidden_units, last[1]]
    activations = [hidden_activation] * len(hidden_units) + [last_activation]
    fan_ins = [fan_in, *units[:-1]]  # each layer reads the one before
    return tuple(map(Layer, names, fan_ins, units, activations))
