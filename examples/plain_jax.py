"""A port of the FRAE in plain ``jax.numpy``, both feedbacks and quantized codes: no Flax,
about eighty lines.

It shows what a port of your own needs to pass the parity suite:

    make parity BACKEND=examples.plain_jax:PlainJaxFRAE

``frae.BaseBackend`` supplies the interface, input validation and the ``fit`` loop; a port
writes the ``_``-prefixed methods on checked float32 ``(B, T, ·)`` NumPy arrays; predict,
encode and decode also get the feedback entering their first step, a ``(B, S)`` state
(zeros unless the caller streams), and return the feedback after their last one.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

import frae
from frae.optimizers import ADAM

ACTIVATIONS = {
    "swish": jax.nn.swish,
    "tanh": jnp.tanh,
    "sigmoid": jax.nn.sigmoid,
    "linear": lambda pre: pre,
}


@functools.partial(jax.jit, static_argnames=("config", "codes_given"))
def run(
    config: frae.FRAEConfig,
    params: dict,
    seq: jax.Array,
    start: jax.Array,
    codes_given: bool = False,
):
    """(x̂, z, last feedback) from x (or from the codes z alone) and the feedback ``start``,
    batch-major in and out; ``start`` is traced like ``seq``, so a new state never retraces."""

    def stack(layers, h):  # the config's layer table: names and activations
        for layer in layers:
            h = ACTIVATIONS[layer.activation](h @ params[layer.kernel] + params[layer.bias])
        return h

    def gru(code, state):  # blocks [reset | update | candidate], reset after U's product
        gru = config.gru
        a = jnp.split(code @ params[gru.kernel] + params[gru.bias], 3, -1)
        c = jnp.split(state @ params[gru.recurrent_kernel] + params[gru.recurrent_bias], 3, -1)
        reset, update = jax.nn.sigmoid(a[0] + c[0]), jax.nn.sigmoid(a[1] + c[1])
        return (1 - update) * jnp.tanh(a[2] + reset * c[2]) + update * state

    def quantize(code, step=config.code_step, limit=2**15 - 1):  # half to even, straight through
        grid = jnp.clip(jnp.round(code / step), -limit, limit) * step
        inside = jnp.abs(code / step) <= limit
        return jax.lax.stop_gradient(grid) + jnp.where(
            inside, code - jax.lax.stop_gradient(code), 0
        )

    def step(feedback, fresh):
        code = fresh
        if not codes_given:
            code = stack(config.encoder_layers, jnp.concatenate([fresh, feedback], -1))
        if config.code_step is not None:  # the decoder and the feedback read the rounded code
            code = quantize(code)
        if config.gru is None:  # output feedback: x̂_t goes back
            feedback = output = stack(config.decoder_layers, jnp.concatenate([code, feedback], -1))
        else:  # state feedback: the GRU's s_t goes back
            feedback = gru(code, feedback)
            output = stack(config.decoder_layers, feedback)
        return feedback, (output, code)

    last, (outputs, codes) = jax.lax.scan(step, start, jnp.swapaxes(seq, 0, 1))
    return jnp.swapaxes(outputs, 0, 1), jnp.swapaxes(codes, 0, 1), last


@functools.partial(jax.jit, static_argnames="config")
def loss_and_grads(config: frae.FRAEConfig, params: dict, x: jax.Array, y: jax.Array):
    start = jnp.zeros((x.shape[0], config.feedback_dim), x.dtype)  # training starts at rest
    return jax.value_and_grad(lambda p: jnp.mean((run(config, p, x, start)[0] - y) ** 2))(params)


class PlainJaxFRAE(frae.BaseBackend):
    name = "plain_jax"

    def _build(self, weights):
        self._write_weights(weights)

    def _read_weights(self):
        return self.params

    def _write_weights(self, weights):
        self.params = {name: jnp.asarray(value) for name, value in weights.items()}

    def _predict(self, x, state):
        outputs, _, last = run(self.config, self.params, x, state)
        return outputs, last

    def _encode(self, x, state):
        _, codes, last = run(self.config, self.params, x, state)
        return codes, last

    def _decode(self, z, state):
        outputs, _, last = run(self.config, self.params, z, state, codes_given=True)
        return outputs, last

    def _loss_and_grads(self, x, y):
        return loss_and_grads(self.config, self.params, x, y)

    def _train_step(self, optimizer: str, learning_rate: float, start: frae.TrainingState):
        beta_1, beta_2 = ADAM.float32_betas()  # one rounding for 1 - β and βᵗ
        if optimizer == "sgd":
            transform = optax.sgd(learning_rate)
            state = transform.init(self.params)
        else:
            transform = optax.adam(learning_rate, b1=beta_1, b2=beta_2, eps=ADAM.epsilon)
            # the canonical state as optax's: the step count and a moment per weight
            adam = optax.ScaleByAdamState(
                count=jnp.asarray(start.step, jnp.int32),
                mu={name: jnp.asarray(value) for name, value in start.m.items()},
                nu={name: jnp.asarray(value) for name, value in start.v.items()},
            )
            state = (adam, optax.EmptyState())

        def step(x, y):
            nonlocal state
            loss, grads = loss_and_grads(self.config, self.params, x, y)
            updates, state = transform.update(grads, state, self.params)
            self.params = optax.apply_updates(self.params, updates)
            return float(loss)

        def moments():
            if optimizer == "sgd":
                return {}, {}
            adam = state[0]
            return (
                {name: np.asarray(value) for name, value in adam.mu.items()},
                {name: np.asarray(value) for name, value in adam.nu.items()},
            )

        return step, moments
