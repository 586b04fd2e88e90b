"""The FRAE recurrence in Flax NNX, stepped through time by ``jax.lax.scan``.

The encoder and decoder are ``nnx.Module`` stacks of ``nnx.Linear`` layers (kernels
``(in, out)``, as the canonical layout), named so that a parameter's NNX state path is its
canonical name split at ``/``: ``("encoder", "dense_0", "kernel")``. ``state_from_weights``
and ``weights_from_state`` are the one conversion between the two.

Functions take canonical weights, a plain dict of arrays; inside a trace they become the
module's ``State`` and ``nnx.merge`` rebuilds the modules from the config's ``GraphDef``
(built once per config, abstractly), both of which compile away. The time loop is a plain
``jax.lax.scan`` over the merged modules' cell, not ``nnx.scan``: the parameters are only
read in the loop, never written, so they enter the scan as constants and the only carry is
the feedback x̂_{t-1}; ``nnx.scan`` would split and merge the modules around the loop body
for state that never changes across steps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from frae.config import FUSED_PRODUCT_MAX_SIZE, FRAEConfig, Layer

Array = jax.Array
Params = dict[str, Array]
"""Weights by canonical name."""
Step = tuple[Array, tuple[Array, Array]]
"""A step's ``(carry, y)``: the new feedback x̂_t, and ``(x̂_t, z_t)`` to stack over time."""
TracedStep = tuple[Array, tuple[Array, list[Array], list[Array]]]
"""``traced_step``'s ``(carry, y)``: x̂_t, and ``(x̂_t, layer inputs, layer slopes)``."""

# Full float32 products: on GPUs the default precision of a float32 matmul may be TF32
# (10-bit mantissa), far outside the parity tolerances against the float64 reference.
PRECISION = jax.lax.Precision.HIGHEST

ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "swish": nnx.swish,  # a·sigmoid(a)
    "tanh": jnp.tanh,
    "sigmoid": nnx.sigmoid,
    "linear": lambda pre: pre,
}


def activation_slope(name: str, pre: Array, out: Array) -> Array:
    """d act(a) / da from the pre-activation a and the output act(a): swish
    σ(a) + a·σ(a)(1 - σ(a)) = out + σ(a)(1 - out), tanh 1 - out², sigmoid out(1 - out),
    linear 1."""
    if name == "swish":
        return out + nnx.sigmoid(pre) * (1.0 - out)
    if name == "tanh":
        return 1.0 - jnp.square(out)
    if name == "sigmoid":
        return out * (1.0 - out)
    return jnp.ones_like(pre)


class DenseStack(nnx.Module):
    """Dense layers applied in turn, ``h ← act(h @ kernel + bias)``.

    Args:
        layers: the config's layers of one side (``FRAEConfig.encoder_layers``); each is
            stored under its short name (``"dense_0"``, ``"latent"``).
        rngs: for NNX's initializers; ``graphdef`` builds the modules abstractly, so nothing
            is drawn, and the values always come from canonical weights.
    """

    def __init__(self, layers: Sequence[Layer], *, rngs: nnx.Rngs) -> None:
        self.layer_names = tuple(layer.short_name for layer in layers)
        self.activations = tuple(layer.activation for layer in layers)
        for layer in layers:
            linear = nnx.Linear(layer.fan_in, layer.units, precision=PRECISION, rngs=rngs)
            setattr(self, layer.short_name, linear)

    def __call__(self, h: Array) -> Array:
        for attribute, activation in zip(self.layer_names, self.activations, strict=True):
            h = ACTIVATIONS[activation](self.pre_activation(attribute, h))
        return h

    def pre_activation(self, attribute: str, h: Array) -> Array:
        """``h @ kernel + bias`` of the layer stored as ``attribute``."""
        layer = getattr(self, attribute)
        kernel, bias = layer.kernel.get_value(), layer.bias.get_value()
        if kernel.size <= FUSED_PRODUCT_MAX_SIZE:
            return jnp.sum(h[..., :, None] * kernel, axis=-2) + bias
        return layer(h)

    def traced(self, h: Array) -> tuple[Array, list[Array], list[Array]]:
        """``self(h)``, with each layer's input and activation slope act'(a), for a
        backward pass written by hand: ``(output, inputs, slopes)``, in layer order."""
        inputs, slopes = [], []
        for attribute, activation in zip(self.layer_names, self.activations, strict=True):
            inputs.append(h)
            pre = self.pre_activation(attribute, h)
            h = ACTIVATIONS[activation](pre)
            slopes.append(activation_slope(activation, pre, h))
        return h, inputs, slopes


class FRAE(nnx.Module):
    """Encoder and decoder of one config; ``step`` is the recurrent cell.

    The cell follows ``lax.scan``'s ``(carry, x) -> (carry, y)``, the carry being the
    feedback x̂_{t-1} of shape ``(B, F)``::

        z_t = encoder(concat(x_t, x̂_{t-1}))     # (B, L)
        x̂_t = decoder(concat(z_t, x̂_{t-1}))     # (B, F)
    """

    def __init__(self, config: FRAEConfig, *, rngs: nnx.Rngs) -> None:
        self.input_dim = config.input_dim
        self.encoder = DenseStack(config.encoder_layers, rngs=rngs)
        self.decoder = DenseStack(config.decoder_layers, rngs=rngs)

    def step(self, feedback: Array, x_t: Array) -> Step:
        """x̂_{t-1}, x_t -> x̂_t, (x̂_t, z_t)."""
        return self.decode_step(feedback, self.encoder(jnp.concatenate([x_t, feedback], -1)))

    def traced_step(self, feedback: Array, x_t: Array) -> TracedStep:
        """``step``, recording for a backward pass written by hand: x̂_{t-1}, x_t -> x̂_t,
        (x̂_t, each layer's input, each layer's slope act'(a)), encoder's layers then
        decoder's."""
        z_t, encoder_inputs, encoder_slopes = self.encoder.traced(
            jnp.concatenate([x_t, feedback], -1)
        )
        output, decoder_inputs, decoder_slopes = self.decoder.traced(
            jnp.concatenate([z_t, feedback], -1)
        )
        return output, (output, encoder_inputs + decoder_inputs, encoder_slopes + decoder_slopes)

    def decode_step(self, feedback: Array, z_t: Array) -> Step:
        """x̂_{t-1}, z_t -> x̂_t, (x̂_t, z_t): the decoder alone, on a given code."""
        output = self.decoder(jnp.concatenate([z_t, feedback], -1))
        return output, (output, z_t)


@functools.lru_cache(maxsize=64)
def graphdef(config: FRAEConfig) -> nnx.GraphDef[FRAE]:
    """The static graph of ``FRAE(config)``, built abstractly (no weights drawn)."""
    return nnx.graphdef(nnx.eval_shape(lambda: FRAE(config, rngs=nnx.Rngs(0))))


def state_from_weights(weights: Mapping[str, Array]) -> nnx.State:
    """Canonical weights to the NNX state of ``FRAE``: ``"encoder/dense_0/kernel"`` goes to
    the path ``("encoder", "dense_0", "kernel")``, an ``nnx.Param``."""
    return nnx.from_flat_state(
        {tuple(name.split("/")): nnx.Param(jnp.asarray(value)) for name, value in weights.items()}
    )


def weights_from_state(state: nnx.State) -> Params:
    """The NNX state of ``FRAE`` (its parameters, or their gradients) to canonical names."""
    return {
        "/".join(map(str, path)): variable.get_value()
        for path, variable in nnx.to_flat_state(state)
    }


def unroll(
    config: FRAEConfig,
    weights: Mapping[str, Array],
    sequences: Array,
    *,
    codes_given: bool = False,
    steps_per_iteration: int = 1,
    remat: bool = False,
) -> tuple[Array, Array]:
    """Step the recurrence from x̂₀ = 0; returns ``(x̂, z)``, each ``(B, T, ·)``.

    ``weights`` are canonical (arrays or tracers); ``sequences`` is x, or with
    ``codes_given`` the codes z for the decoder alone; ``steps_per_iteration`` time steps
    run per iteration of the scan's loop (its ``unroll``); with ``remat`` a gradient
    recomputes each step instead of storing its intermediates. The one transpose of each
    array: batch-major at the edges, time-major for the scan.
    """
    model = nnx.merge(graphdef(config), state_from_weights(weights))
    cell = model.decode_step if codes_given else model.step
    if remat:
        cell = jax.checkpoint(cell)
    feedback = jnp.zeros((sequences.shape[0], config.input_dim), sequences.dtype)
    _, (outputs, codes) = jax.lax.scan(
        cell, feedback, jnp.swapaxes(sequences, 0, 1), unroll=steps_per_iteration
    )
    return jnp.swapaxes(outputs, 0, 1), jnp.swapaxes(codes, 0, 1)
