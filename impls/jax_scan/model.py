"""The FRAE recurrence in Flax NNX, stepped through time by ``jax.lax.scan``.

A parameter's NNX state path is its canonical name split at ``/``
(``("decoder", "gru", "recurrent_kernel")``), kernels ``(in, out)`` as canonical;
``state_from_weights`` and ``weights_from_state`` are the one conversion.

Functions take canonical weights; inside a trace ``nnx.merge`` rebuilds the modules from the
config's ``GraphDef``, which compiles away. The loop is a plain ``jax.lax.scan``, not
``nnx.scan``: the parameters are only read, so the only carry is the feedback.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx
from flax.typing import PathParts

from frae import gru_layout, routes
from frae.config import FUSED_PRODUCT_MAX_SIZE, GRU, FRAEConfig, Layer
from frae.quantization import SYMBOL_LIMIT

Array = jax.Array
Params = dict[str, Array]
"""Weights by canonical name."""
Step = tuple[Array, tuple[Array, Array]]
"""A step's ``(carry, y)``: the new feedback, and ``(x̂_t, z_t)`` to stack over time."""

# Full float32 products: a GPU's default TF32 is far outside the parity tolerances.
PRECISION = jax.lax.Precision.HIGHEST

# YNNPACK's fusions off: faster at B = 256, the same at B = 1 (docs/performance.md).
COMPILER_OPTIONS, ROUTES = routes.compiler_options(routes.YNNPACK_OFF)
"""The options passed and the settings they make (``frae.routes``)."""

# From this batch size on, the loop runs in (features, B) layout, each layer over B lanes:
# the faster layout from B = 48 for predict and B = 64 for a gradient (docs/performance.md).
BATCH_LAST_MIN_BATCH = 64


def runs_batch_last(config: FRAEConfig, batch: int) -> bool:
    """Whether the loop over ``batch`` sequences runs in ``(features, B)`` layout (output
    feedback only)."""
    return config.gru is None and batch >= BATCH_LAST_MIN_BATCH


ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "swish": nnx.swish,  # a·sigmoid(a)
    "tanh": jnp.tanh,
    "sigmoid": nnx.sigmoid,
    "linear": lambda pre: pre,
}


def product(h: Array, kernel: Array) -> Array:
    """``h @ kernel``, as one fused broadcast product and sum for small kernels
    (``FUSED_PRODUCT_MAX_SIZE``), else a full-precision matmul."""
    if kernel.size <= FUSED_PRODUCT_MAX_SIZE:
        return jnp.sum(h[..., :, None] * kernel, axis=-2)
    return jnp.matmul(h, kernel, precision=PRECISION)


def quantize(code: Array, code_step: float | None) -> Array:
    """ẑ = Δ·clip(round(z / Δ), −Q, Q), round half to even, and straight through in the
    backward pass where ``|z / Δ| ≤ Q`` (the contract's "Quantized codes"); ``None``: z."""
    if code_step is None:
        return code
    scaled = code / code_step
    grid = jnp.clip(jnp.round(scaled), -SYMBOL_LIMIT, SYMBOL_LIMIT) * code_step
    inside = jnp.abs(scaled) <= SYMBOL_LIMIT
    straight = jnp.where(inside, code - jax.lax.stop_gradient(code), 0.0)
    return jax.lax.stop_gradient(grid) + straight


class DenseStack(nnx.Module):
    """Dense layers applied in turn, ``h ← act(h @ kernel + bias)``, under their short names.
    ``rngs`` draws nothing: ``graphdef`` builds the modules abstractly."""

    def __init__(self, layers: Sequence[Layer], *, rngs: nnx.Rngs) -> None:
        self.layer_names = tuple(layer.short_name for layer in layers)
        self.activations = tuple(layer.activation for layer in layers)
        for layer in layers:
            linear = nnx.Linear(layer.fan_in, layer.units, precision=PRECISION, rngs=rngs)
            setattr(self, layer.short_name, linear)

    def __call__(self, h: Array, *, batch_last: bool = False) -> Array:
        for attribute, activation in zip(self.layer_names, self.activations, strict=True):
            h = ACTIVATIONS[activation](self.pre_activation(attribute, h, batch_last=batch_last))
        return h

    def pre_activation(self, attribute: str, h: Array, *, batch_last: bool = False) -> Array:
        """``h @ kernel + bias`` of the layer stored as ``attribute``; with ``batch_last``,
        ``h`` is ``(features, B)`` and so is the result: kernelᵀ h + bias."""
        layer = getattr(self, attribute)
        kernel, bias = layer.kernel.get_value(), layer.bias.get_value()
        if batch_last:
            if kernel.size <= FUSED_PRODUCT_MAX_SIZE:
                return jnp.sum(kernel[:, :, None] * h[:, None, :], axis=0) + bias[:, None]
            return jnp.matmul(kernel.T, h, precision=PRECISION) + bias[:, None]
        return product(h, kernel) + bias


class Prior(nnx.Module):
    """The learned prior's parameters (the contract's "Rate: training the codec for its bits"),
    each ``(L,)``: ``location`` μ and ``log_scale`` ρ = log s. The recurrence never reads
    them; the loss does (``train.symbol_bits``)."""

    def __init__(self, latent_dim: int) -> None:
        self.location = nnx.Param(jnp.zeros((latent_dim,)))
        self.log_scale = nnx.Param(jnp.zeros((latent_dim,)))

    @classmethod
    def of(cls, config: FRAEConfig) -> Prior | None:
        """``config``'s prior, with ``rate_weight`` set, at the canonical paths
        ``prior/location`` and ``prior/log_scale`` of the model holding it; else ``None``."""
        return None if config.rate_weight is None else cls(config.latent_dim)


class FRAE(nnx.Module):
    """Encoder and decoder of one config; ``step`` is the recurrent cell, its carry the
    feedback x̂_{t-1} ``(B, F)``::

        z_t = encoder(concat(x_t, x̂_{t-1}))     # (B, L)
        x̂_t = decoder(concat(z_t, x̂_{t-1}))     # (B, F)
    """

    def __init__(self, config: FRAEConfig, *, rngs: nnx.Rngs) -> None:
        self.input_dim = config.input_dim
        self.code_step = config.code_step
        self.encoder = DenseStack(config.encoder_layers, rngs=rngs)
        self.decoder = DenseStack(config.decoder_layers, rngs=rngs)
        self.prior = Prior.of(config)

    def step(self, feedback: Array, x_t: Array, *, batch_last: bool = False) -> Step:
        """x̂_{t-1}, x_t -> x̂_t, (x̂_t, z_t); with ``batch_last``, on ``(features, B)`` arrays."""
        both = jnp.concatenate([x_t, feedback], 0 if batch_last else -1)
        z_t = self.encoder(both, batch_last=batch_last)
        return self.decode_step(feedback, z_t, batch_last=batch_last)

    def decode_step(self, feedback: Array, z_t: Array, *, batch_last: bool = False) -> Step:
        """x̂_{t-1}, z_t -> x̂_t, (x̂_t, ẑ_t): the decoder alone, on a given code."""
        z_t = quantize(z_t, self.code_step)
        both = jnp.concatenate([z_t, feedback], 0 if batch_last else -1)
        output = self.decoder(both, batch_last=batch_last)
        return output, (output, z_t)


class GRUCell(nnx.Module):
    """The contract's GRU, column blocks [r | p | n] of width H each::

        a = z_t @ kernel + bias;   c = s_{t-1} @ recurrent_kernel + recurrent_bias
        r = σ(a_r + c_r);   p = σ(a_p + c_p);   n = tanh(a_n + r ⊙ c_n)
        s_t = (1 - p) ⊙ n + p ⊙ s_{t-1}

    Flax's ``nnx.GRUCell`` has no recurrent bias, so this cell holds the canonical four.
    """

    def __init__(self, input_dim: int, state_dim: int) -> None:
        width = 3 * state_dim
        self.kernel = nnx.Param(jnp.zeros((input_dim, width)))
        self.recurrent_kernel = nnx.Param(jnp.zeros((state_dim, width)))
        self.bias = nnx.Param(jnp.zeros((width,)))
        self.recurrent_bias = nnx.Param(jnp.zeros((width,)))

    def __call__(self, state: Array, code: Array) -> tuple[Array, Array]:
        """s_{t-1}, z_t -> s_t, s_t."""
        a = product(code, self.kernel.get_value()) + self.bias.get_value()
        c = product(state, self.recurrent_kernel.get_value()) + self.recurrent_bias.get_value()
        a_r, a_p, a_n = jnp.split(a, 3, axis=-1)
        c_r, c_p, c_n = jnp.split(c, 3, axis=-1)
        reset, update = nnx.sigmoid(a_r + c_r), nnx.sigmoid(a_p + c_p)
        candidate = jnp.tanh(a_n + reset * c_n)
        new_state = (1.0 - update) * candidate + update * state
        return new_state, new_state


class GRUDecoder(DenseStack):
    """The state model's decoder: its ``gru``, and the dense layers that read its state."""

    def __init__(self, gru: GRU, layers: Sequence[Layer], *, rngs: nnx.Rngs) -> None:
        super().__init__(layers, rngs=rngs)
        self.gru = GRUCell(gru.input_dim, gru.state_dim)


class StateFRAE(nnx.Module):
    """Encoder and GRU decoder of a state-feedback config; ``step`` is the recurrent cell,
    its carry the GRU's state s_{t-1} of shape ``(B, H)``::

        z_t = encoder(concat(x_t, s_{t-1}))     # (B, L)
        s_t = gru(s_{t-1}, z_t)                 # (B, H)
        x̂_t = decoder(s_t)                     # (B, F)
    """

    def __init__(self, config: FRAEConfig, *, rngs: nnx.Rngs) -> None:
        assert config.gru is not None, "a state-feedback config"
        self.code_step = config.code_step
        self.encoder = DenseStack(config.encoder_layers, rngs=rngs)
        self.decoder = GRUDecoder(config.gru, config.decoder_layers, rngs=rngs)
        self.prior = Prior.of(config)

    def step(self, state: Array, x_t: Array) -> Step:
        """s_{t-1}, x_t -> s_t, (x̂_t, z_t)."""
        return self.decode_step(state, self.encoder(jnp.concatenate([x_t, state], -1)))

    def decode_step(self, state: Array, z_t: Array) -> Step:
        """s_{t-1}, z_t -> s_t, (x̂_t, ẑ_t): the GRU and the decoder, on a given code."""
        z_t = quantize(z_t, self.code_step)
        state, _ = self.decoder.gru(state, z_t)
        return state, (self.decoder(state), z_t)


Model = FRAE | StateFRAE


@functools.lru_cache(maxsize=64)
def graphdef(config: FRAEConfig) -> nnx.GraphDef[Model]:
    """The static graph of ``config``'s model, built abstractly (no weights drawn)."""
    model = FRAE if config.gru is None else StateFRAE
    return nnx.graphdef(nnx.eval_shape(lambda: model(config, rngs=nnx.Rngs(0))))


def packed(config: FRAEConfig, weights: Mapping[str, Array]) -> Array:
    """The weights raveled end to end in canonical order: one argument for a jitted call."""
    return jnp.concatenate([weights[name].ravel() for name in config.parameter_shapes()])


def unpacked(config: FRAEConfig, packed_weights: Array) -> Params:
    """``packed``'s inverse, canonical weights as slices of ``packed_weights``."""
    weights, start = {}, 0
    for name, shape in config.parameter_shapes().items():
        size = math.prod(shape)
        weights[name] = packed_weights[start : start + size].reshape(shape)
        start += size
    return weights


def state_from_weights(weights: Mapping[str, Any]) -> nnx.State:
    """Canonical weights to the NNX state of the model, each name split at ``/``."""
    flat: dict[PathParts, nnx.Param[Array]] = {
        tuple(name.split("/")): nnx.Param(jnp.asarray(value)) for name, value in weights.items()
    }
    return nnx.from_flat_state(flat)


def weights_from_state(state: nnx.State) -> Params:
    """The NNX state of the model (its parameters, or their gradients) to canonical names."""
    return {
        "/".join(map(str, path)): variable.get_value()
        for path, variable in nnx.to_flat_state(state)
    }


def stock_gru_cell_state(weights: Mapping[str, Any], gru: GRU) -> nnx.State:
    """Canonical GRU weights as the state of Flax's ``nnx.GRUCell(L, H)``
    (``gru_layout.to_flax``).

    Raises:
        ValueError: b_U's candidate block is not zero, which ``nnx.GRUCell`` cannot hold.
    """
    return state_from_weights(gru_layout.to_flax(gru, weights))


def unroll(
    config: FRAEConfig,
    weights: Mapping[str, Array],
    sequences: Array,
    *,
    codes_given: bool = False,
    state: Array | None = None,
    steps_per_iteration: int = 1,
    remat: bool = False,
    batch_last: bool = False,
) -> tuple[Array, Array, Array]:
    """Step the recurrence from ``state`` ``(B, S)`` (zeros for ``None``) over x, or with
    ``codes_given`` over the codes z for the decoder alone.

    Args:
        steps_per_iteration: the scan's ``unroll``.
        remat: a gradient recomputes each step instead of storing its intermediates.
        batch_last: the loop runs on ``(features, B)`` arrays (``runs_batch_last``).

    Returns:
        ``(x̂, z, feedback)``: x̂ and z each ``(B, T, ·)``, and x̂_T (or s_T) ``(B, S)``.
    """
    model = nnx.merge(graphdef(config), state_from_weights(weights))
    if state is None:
        state = jnp.zeros((sequences.shape[0], config.feedback_dim), sequences.dtype)
    feedback = jnp.asarray(state, sequences.dtype)
    cell: Callable[[Array, Array], Step]  # the scan's (carry, x) -> (carry, y)
    if batch_last:  # (T, features, B) in the loop, the feedback (F, B)
        assert isinstance(model, FRAE)  # output feedback alone runs batch-last
        step = model.decode_step if codes_given else model.step
        cell = functools.partial(step, batch_last=True)
        feedback = feedback.T
        into_loop, out_of_loop = (1, 2, 0), (2, 0, 1)
    else:  # (T, B, features)
        cell = model.decode_step if codes_given else model.step
        into_loop = out_of_loop = (1, 0, 2)
    if remat:
        cell = jax.checkpoint(cell)
    last, (outputs, codes) = jax.lax.scan(
        cell, feedback, jnp.transpose(sequences, into_loop), unroll=steps_per_iteration
    )
    return (
        jnp.transpose(outputs, out_of_loop),
        jnp.transpose(codes, out_of_loop),
        last.T if batch_last else last,
    )
