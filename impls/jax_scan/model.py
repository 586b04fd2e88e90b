"""The FRAE recurrence in Flax NNX, stepped through time by ``jax.lax.scan``.

The encoder and decoder are ``nnx.Module`` stacks of ``nnx.Linear`` layers (kernels
``(in, out)``, as the canonical layout), named so that a parameter's NNX state path is its
canonical name split at ``/``: ``("encoder", "dense_0", "kernel")``.

The graph/state split is done once per config: ``compiled`` keeps the static ``GraphDef``
and binds it into each jitted function. A call passes only the weights; inside the trace
they become the module's ``State`` (``state_from_weights``) and ``nnx.merge`` rebuilds the
modules, both of which compile away. The time loop is a plain ``jax.lax.scan`` over the
merged modules' cell, not ``nnx.scan``: the parameters are only read in the loop, never
written, so they enter the scan as constants and the only carry is the feedback x̂_{t-1};
``nnx.scan`` would split and merge the modules around the loop body for state that never
changes across steps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from frae.config import FUSED_PRODUCT_MAX_SIZE, FRAEConfig
from frae.validation import OPTIMIZERS

Array = jax.Array
Params = dict[str, Array]
"""Weights by canonical name (SPEC section 2)."""
Step = tuple[Array, tuple[Array, Array]]
"""A step's ``(carry, y)``: the new feedback x̂_t, and ``(x̂_t, z_t)`` to stack over time."""

ADAM_BETA_1 = 0.9
ADAM_BETA_2 = 0.999
ADAM_EPSILON = 1e-7

# Full float32 products: on GPUs the default precision of a float32 matmul may be TF32
# (10-bit mantissa), far outside the parity tolerances against the float64 reference.
PRECISION = jax.lax.Precision.HIGHEST

# The scan of a gradient steps this many time steps per loop iteration: back-propagation
# stores and reads a dozen arrays per step, and fewer iterations halve the per-iteration
# work around them at B=1 (2.4 -> 1.2 µs per step). The forward alone runs fastest unrolled
# by 1 (0.14 vs 0.35 at unroll 4), so ``predict`` does not unroll.
GRADIENT_UNROLL = 4

# From this batch size on, a gradient recomputes each step's forward in the backward loop
# (``jax.checkpoint`` on the cell) instead of storing its intermediates, and does not
# unroll: with large batches, writing and reading the stored arrays costs more than the
# arithmetic again (B=256: 68 -> 33 µs per step, B=64: 9.6 -> 6.9); below, storing is as
# fast or faster (B=32: 4.8 against 5.2; B=1, unrolled: 1.2 against 1.7).
REMAT_MIN_BATCH = 64

ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "swish": nnx.swish,  # a·sigmoid(a)
    "tanh": jnp.tanh,
    "sigmoid": nnx.sigmoid,
    "linear": lambda pre: pre,
}


class DenseStack(nnx.Module):
    """Dense layers applied in turn, ``h ← act(h @ kernel + bias)``.

    Args:
        layers: ``(canonical name, units)`` of each layer, as ``FRAEConfig.encoder_layers``;
            the layer is stored under the name's last part (``"dense_0"``, ``"latent"``).
        fan_in: width of the stack's input.
        activations: one activation name per layer.
        rngs: for NNX's initializers; ``compiled`` builds the modules abstractly, so nothing
            is drawn, and the values always come from canonical weights.
    """

    def __init__(
        self,
        layers: Sequence[tuple[str, int]],
        fan_in: int,
        activations: Sequence[str],
        *,
        rngs: nnx.Rngs,
    ) -> None:
        self.layer_names = tuple(name.rpartition("/")[2] for name, _ in layers)
        self.activations = tuple(activations)
        for attribute, (_, units) in zip(self.layer_names, layers, strict=True):
            setattr(self, attribute, nnx.Linear(fan_in, units, precision=PRECISION, rngs=rngs))
            fan_in = units

    def __call__(self, h: Array) -> Array:
        for attribute, activation in zip(self.layer_names, self.activations, strict=True):
            layer = getattr(self, attribute)
            kernel, bias = layer.kernel.get_value(), layer.bias.get_value()
            if kernel.size <= FUSED_PRODUCT_MAX_SIZE:
                pre = jnp.sum(h[..., :, None] * kernel, axis=-2) + bias
            else:
                pre = layer(h)
            h = ACTIVATIONS[activation](pre)
        return h


class FRAE(nnx.Module):
    """Encoder and decoder of one config; ``step`` is the recurrent cell.

    The cell follows ``lax.scan``'s ``(carry, x) -> (carry, y)``, the carry being the
    feedback x̂_{t-1} of shape ``(B, F)``::

        z_t = encoder(concat(x_t, x̂_{t-1}))     # (B, L)
        x̂_t = decoder(concat(z_t, x̂_{t-1}))     # (B, F)
    """

    def __init__(self, config: FRAEConfig, *, rngs: nnx.Rngs) -> None:
        hidden, output = config.activation, config.output_activation
        self.input_dim = config.input_dim
        self.encoder = DenseStack(
            config.encoder_layers,
            2 * config.input_dim,
            [hidden] * len(config.encoder_layers),
            rngs=rngs,
        )
        self.decoder = DenseStack(
            config.decoder_layers,
            config.latent_dim + config.input_dim,
            [hidden] * len(config.decoder_units) + [output],
            rngs=rngs,
        )

    def step(self, feedback: Array, x_t: Array) -> Step:
        """x̂_{t-1}, x_t -> x̂_t, (x̂_t, z_t)."""
        return self.decode_step(feedback, self.encoder(jnp.concatenate([x_t, feedback], -1)))

    def decode_step(self, feedback: Array, z_t: Array) -> Step:
        """x̂_{t-1}, z_t -> x̂_t, (x̂_t, z_t): the decoder alone, on a given code."""
        output = self.decoder(jnp.concatenate([z_t, feedback], -1))
        return output, (output, z_t)


def run(
    model: FRAE,
    sequences: Array,
    *,
    codes_given: bool = False,
    unroll: int = 1,
    remat: bool = False,
) -> tuple[Array, Array]:
    """Step the recurrence from x̂₀ = 0; returns ``(x̂, z)``, each ``(B, T, ·)``.

    ``sequences`` is x, or with ``codes_given`` the codes z for the decoder alone; ``unroll``
    time steps run per iteration of the scan's loop; with ``remat`` a gradient recomputes
    each step instead of storing its intermediates. The one transpose of each array:
    batch-major at the edges, time-major for the scan.
    """
    cell = model.decode_step if codes_given else model.step
    if remat:
        cell = jax.checkpoint(cell)
    feedback = jnp.zeros((sequences.shape[0], model.input_dim), sequences.dtype)
    _, (outputs, codes) = jax.lax.scan(cell, feedback, jnp.swapaxes(sequences, 0, 1), unroll=unroll)
    return jnp.swapaxes(outputs, 0, 1), jnp.swapaxes(codes, 0, 1)


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


def optimizer(name: str, learning_rate: float | Array) -> optax.GradientTransformation:
    """SPEC's optimizers: ``"sgd"``, w ← w - lr·g, or ``"adam"`` with ε outside the root,
    w ← w - lr·m̂/(√v̂ + ε), as optax places it.

    β₁ and β₂ go in as float32 so that optax forms the moment weight 1 - β and the bias
    correction 1 - βᵗ from the same rounded β. From Python floats it rounds 1 - 0.999 from
    double but takes 1 - βᵗ in float32 from β = 0.99900001: v̂ then errs by 1.3e-5 relative
    at every early step, which moves 50 Adam steps outside the parity tolerance.
    """
    if name == "sgd":
        return optax.sgd(learning_rate)
    # flattened: one update of one vector of every weight, not ten updates of tiny arrays
    # (a training step at T=10: 115 -> 88 µs)
    return optax.flatten(
        optax.adam(
            learning_rate,
            b1=np.float32(ADAM_BETA_1),
            b2=np.float32(ADAM_BETA_2),
            eps=ADAM_EPSILON,
        )
    )


def _merged(graphdef: nnx.GraphDef[FRAE], params: Params) -> FRAE:
    return nnx.merge(graphdef, state_from_weights(params))


def _predict(graphdef: nnx.GraphDef[FRAE], params: Params, x: Array) -> Array:
    return run(_merged(graphdef, params), x)[0]


def _encode(graphdef: nnx.GraphDef[FRAE], params: Params, x: Array) -> Array:
    return run(_merged(graphdef, params), x)[1]


def _decode(graphdef: nnx.GraphDef[FRAE], params: Params, z: Array) -> Array:
    return run(_merged(graphdef, params), z, codes_given=True)[0]


def _loss(state: nnx.State, graphdef: nnx.GraphDef[FRAE], x: Array, y: Array) -> Array:
    """mean((x̂ - y)²) over every element of ``(B, T, F)``."""
    large = x.shape[0] >= REMAT_MIN_BATCH
    model = nnx.merge(graphdef, state)
    outputs = run(model, x, unroll=1 if large else GRADIENT_UNROLL, remat=large)[0]
    return jnp.mean(jnp.square(outputs - y))


def _loss_and_grads(
    graphdef: nnx.GraphDef[FRAE], params: Params, x: Array, y: Array
) -> tuple[Array, Params]:
    """The loss and its gradient with respect to the module state, by canonical name."""
    loss, grads = jax.value_and_grad(_loss)(state_from_weights(params), graphdef, x, y)
    return loss, weights_from_state(grads)


def _init_optimizer(optimizer_name: str, params: Params) -> optax.OptState:
    """Fresh optimizer state for ``params`` (zero moments, step 0); the rate is not part of it."""
    return optimizer(optimizer_name, 0.0).init(params)


def _train_step(
    graphdef: nnx.GraphDef[FRAE],
    optimizer_name: str,
    params: Params,
    optimizer_state: optax.OptState,
    learning_rate: Array,
    x: Array,
    y: Array,
) -> tuple[Params, optax.OptState, Array]:
    """Forward, back-propagation through time and one update; the loss is from before it."""
    loss, grads = _loss_and_grads(graphdef, params, x, y)
    updates, optimizer_state = optimizer(optimizer_name, learning_rate).update(
        grads, optimizer_state, params
    )
    return optax.apply_updates(params, updates), optimizer_state, loss


@dataclass(frozen=True)
class Compiled:
    """One config's graph and its jitted functions, shared by every backend of that config.

    Each function is jitted once here, with the graph bound, so a call hashes no static
    argument and a repeated call with the same shapes reuses the compiled code. They take
    and return canonical weights, a plain dict of arrays that jit flattens at little cost
    per call (an ``nnx.State`` argument costs some 10 µs more); the NNX state is built
    from it inside the trace, where the conversion compiles away.
    """

    graphdef: nnx.GraphDef[FRAE]
    predict: Callable[[Params, Array], Array]
    encode: Callable[[Params, Array], Array]
    decode: Callable[[Params, Array], Array]
    loss_and_grads: Callable[[Params, Array, Array], tuple[Array, Params]]
    optimizer_inits: Mapping[str, Callable[[Params], optax.OptState]]
    train_steps: Mapping[str, Callable[..., tuple[Params, optax.OptState, Array]]]


@functools.lru_cache(maxsize=64)
def compiled(config: FRAEConfig) -> Compiled:
    """The graph of ``FRAE(config)``, built abstractly (no weights drawn), and its functions."""
    graphdef = nnx.graphdef(nnx.eval_shape(lambda: FRAE(config, rngs=nnx.Rngs(0))))
    return Compiled(
        graphdef=graphdef,
        predict=jax.jit(functools.partial(_predict, graphdef)),
        encode=jax.jit(functools.partial(_encode, graphdef)),
        decode=jax.jit(functools.partial(_decode, graphdef)),
        loss_and_grads=jax.jit(functools.partial(_loss_and_grads, graphdef)),
        optimizer_inits={
            name: jax.jit(functools.partial(_init_optimizer, name)) for name in OPTIMIZERS
        },
        train_steps={
            name: jax.jit(functools.partial(_train_step, graphdef, name)) for name in OPTIMIZERS
        },
    )
