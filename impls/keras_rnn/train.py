"""Training in Keras: the loss (with a rate weight, the codes' bits too), gradients in the Keras
backend's own language, the compiled training model, and data parallelism on Keras' own engines
(JAX and TensorFlow)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from frae import routes
from frae.backend import Array, TrainStep, check_device_count
from frae.codec.rate import FLOOR_BITS
from frae.config import FRAEConfig
from frae.devices import tensorflow_strategy
from impls.keras_rnn.model import JAX_COMPILER_OPTIONS, PACKAGE, FRAECell, Tensor, keras, ops
from impls.keras_rnn.optimizers import SpecAdam, SpecSGD

Gradients = Callable[[Tensor, Tensor], tuple[Tensor, Sequence[Tensor]]]

REMAT_MIN_BATCH = 64
"""From this batch size on a gradient on JAX recomputes each step (``RECOMPUTED``)."""


def symbol_bits(codes: Tensor, location: Tensor, log_scale: Tensor, step: float) -> Tensor:
    """Each code's bits ``min(FLOOR_BITS, I)`` under the learned prior (the contract's "Rate:
    training the codec for its bits"), codes u (…, L), μ and ρ (L,), ``information``'s I.

    A floored symbol (I > FLOOR_BITS) passes no gradient to μ, ρ or u: its bits are the
    constant, and its I is taken at u = μ with s = 1, whose slopes are finite, where its own
    may be ∞ (a code far out under a tiny scale, Δ/s rounding to 0 under a huge one) and
    make the zero they meet NaN.
    """
    centred = codes - location
    floored = information(centred, log_scale, step) > FLOOR_BITS
    safe = information(ops.where(floored, 0.0, centred), ops.where(floored, 0.0, log_scale), step)
    return ops.where(floored, float(FLOOR_BITS), safe)


def information(centred: Tensor, log_scale: Tensor, step: float) -> Tensor:
    """I = −log2 p of the codes at ``centred`` = u − μ, in the product's form, each factor's
    log free of cancellation (``keras.ops.log_sigmoid`` is the framework's own)::

        a = (u − μ + Δ/2) / s,   b = (u − μ − Δ/2) / s,   s = e^ρ
        I = −(log σ(a) + log σ(−b) + log(−expm1(−Δ/s))) / ln 2

    1/s = e^−ρ multiplies: a quotient's slope in s (over s²) would overflow first.
    """
    inverse_scale = ops.exp(-log_scale)
    a, b = (centred + step / 2) * inverse_scale, (centred - step / 2) * inverse_scale
    log_p = ops.log_sigmoid(a) + ops.log_sigmoid(-b) + ops.log(-ops.expm1(-step * inverse_scale))
    return log_p / -math.log(2.0)


@keras.saving.register_keras_serializable(package=PACKAGE)
class SquaredErrorCell(keras.layers.Layer):
    """The FRAE step that also sums its own loss terms, so training needs no T-long output
    (whose gradient XLA copies at every backward step).

    Input ``[x_t, y_t]``; states ``[feedback, e_{t-1}]`` with e_t = e_{t-1} + Σ_f (x̂_t - y_t)²
    per sequence, and with a rate weight λ a second column r_t = r_{t-1} + λ·bits_t, the bits
    of ẑ_t (``symbol_bits``), whose gradient reaches z_t straight through as the decoder's
    does; output ``e_t`` or ``[e_t, r_t]``.
    """

    def __init__(self, cell: FRAECell, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell = cell
        config = cell.frae_config
        self.features = config.input_dim
        self.rate_weight = config.rate_weight
        self.output_size = 1 if self.rate_weight is None else 2
        self.state_size = [cell.state_size, self.output_size]

    def call(self, inputs: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        step = keras.remat(self.step) if recomputes(self.cell, inputs.shape[0]) else self.step
        return step(inputs, *states)

    def step(self, inputs: Tensor, feedback: Tensor, total: Tensor) -> tuple[Tensor, list[Tensor]]:
        reconstruction, code, fed_back = self.cell.step(inputs[..., : self.features], feedback)
        error = ops.square(reconstruction - inputs[..., self.features :])
        terms = ops.sum(error, axis=-1, keepdims=True)
        if self.rate_weight is not None:
            terms = ops.concatenate([terms, self.rate(code)], axis=-1)
        total = total + terms
        return total, [fed_back, total]

    def rate(self, code: Tensor) -> Tensor:
        """λ·bits_t = λ·Σ_l bits of ẑ_t (B, L) under the cell's prior, ``(B, 1)``."""
        config, weights = self.cell.frae_config, self.cell.weights_by_name
        # tensors, not variables: ``where`` on JAX takes no Keras variable
        location, log_scale = (ops.convert_to_tensor(weights[n]) for n in config.prior_parameters)
        bits = symbol_bits(code, location, log_scale, float(config.code_step or 0.0))
        return float(self.rate_weight or 0.0) * ops.sum(bits, axis=-1, keepdims=True)


RECOMPUTED = routes.Setting(
    "keras.remat of a training step (JAX, B >= 64)",
    "recomputed" if routes.chosen() == routes.BEST else None,
    routes.BY_FRAE if routes.chosen() == routes.BEST else routes.BY_DEFAULT,
)
"""Whether a gradient on JAX from ``REMAT_MIN_BATCH`` sequences recomputes each step in the
backward loop (``keras.remat``), as jax_scan does: three times faster at B = 256, the same
bits (docs/performance.md)."""


def recomputes(cell: FRAECell, batch: int | None) -> bool:
    """Whether a step over ``batch`` sequences runs under ``keras.remat`` (``RECOMPUTED``)."""
    return (
        RECOMPUTED.value is not None
        and keras.backend.backend() == "jax"
        and cell.frae_config.gru is None
        and batch is not None
        and batch >= REMAT_MIN_BATCH
    )


@keras.saving.register_keras_serializable(package=PACKAGE)
class SquaredErrorModel(keras.Model):
    """``[x, y] ->`` the sums of ``SquaredErrorCell`` per sequence, ``(B, 1)`` or ``(B, 2)``;
    its loss is ``loss_of`` them."""

    def compute_loss(
        self,
        x: Any = None,
        y: Any = None,
        y_pred: Tensor | None = None,
        sample_weight: Tensor | None = None,
        training: bool = True,
    ) -> Tensor:
        return loss_of(x[0], y_pred)


@keras.saving.register_keras_serializable(package=PACKAGE)
class ReplicaTrainer(SquaredErrorModel):
    """The training model under a ``tf.distribute`` strategy of several replicas.

    XLA cannot reach the other replicas' variables, so each replica compiles only its loss
    and gradients, and Keras' optimizer sums them (each scaled 1/N) outside XLA. The loss is
    a one-element vector: ``MultiWorkerMirroredStrategy`` reduces outputs along axis 0.
    """

    replica_gradients: Gradients

    def train_step(self, data: Any) -> dict[str, Tensor]:
        (x, y), _, _ = data
        loss, gradients = self.replica_gradients(x, y)
        share = 1.0 / self.distribute_strategy.num_replicas_in_sync
        pairs = zip(gradients, self.trainable_variables, strict=True)
        self.optimizer.apply_gradients([(gradient * share, v) for gradient, v in pairs])
        return {"loss": ops.reshape(loss, (1,))}


def loss_of(x: Tensor, sums: Tensor) -> Tensor:
    """mean((x̂ - y)²), plus λ·mean over (B, T) of bits_t with a rate weight, from the
    per-sequence sums ``SquaredErrorModel`` returns."""
    steps, features = ops.shape(x)[1], ops.shape(x)[2]
    means = ops.mean(sums, axis=0)
    loss = means[0] / ops.cast(steps * features, sums.dtype)
    if sums.shape[-1] == 2:
        loss = loss + means[1] / ops.cast(steps, sums.dtype)
    return loss


def squared_error_model(
    config: FRAEConfig, cell: FRAECell, kind: type[SquaredErrorModel] = SquaredErrorModel
) -> SquaredErrorModel:
    """The training model over ``cell``'s weights: a ``keras.layers.RNN`` over
    ``SquaredErrorCell``, returning only the last step's running sums."""
    x = keras.Input((None, config.input_dim), name="x")
    y = keras.Input((None, config.input_dim), name="y")
    loop = keras.layers.RNN(SquaredErrorCell(cell), name="frae_squared_error_rnn")
    return kind([x, y], loop(ops.concatenate([x, y], axis=-1)), name="frae_training")


def gradient_function(model: keras.Model, jit_compile: bool) -> Gradients:
    """``(x, y) -> (loss, gradients in trainable_variables order)`` of a
    ``squared_error_model``, compiled, in the Keras backend's own language (Keras has no
    backend-neutral gradient call)."""
    name = keras.backend.backend()
    if name == "tensorflow":
        import tensorflow as tf

        @tf.function(jit_compile=jit_compile, autograph=False)
        def tf_gradients(x: Tensor, y: Tensor) -> tuple[Tensor, Sequence[Tensor]]:
            with tf.GradientTape() as tape:
                loss = loss_of(x, model([x, y]))
            return loss, tape.gradient(loss, model.trainable_variables)

        return tf_gradients
    if name == "jax":
        import jax

        def stateless_loss(
            trainable: list[Tensor], non_trainable: list[Tensor], x: Tensor, y: Tensor
        ) -> Tensor:
            sums, _ = model.stateless_call(trainable, non_trainable, [x, y])
            return loss_of(x, sums)

        value_and_grad = jax.value_and_grad(stateless_loss)
        compiled = (
            jax.jit(value_and_grad, compiler_options=JAX_COMPILER_OPTIONS)
            if jit_compile
            else value_and_grad
        )

        def jax_gradients(x: Tensor, y: Tensor) -> tuple[Tensor, Sequence[Tensor]]:
            trainable = [v.value for v in model.trainable_variables]
            non_trainable = [v.value for v in model.non_trainable_variables]
            return compiled(trainable, non_trainable, x, y)

        return jax_gradients
    if name == "torch":
        import torch

        # eager: torch's autograd over Keras' Python loop
        def torch_gradients(x: Tensor, y: Tensor) -> tuple[Tensor, Sequence[Tensor]]:
            weights = [v.value for v in model.trainable_variables]
            x = torch.as_tensor(x)
            loss = loss_of(x, model([x, torch.as_tensor(y)]))
            return loss.detach(), torch.autograd.grad(loss, weights)

        return torch_gradients
    raise NotImplementedError(
        f"keras_rnn computes gradients on tensorflow, jax and torch, not {name}"
    )


def compile_trainer(
    config: FRAEConfig,
    cell: FRAECell,
    optimizer: str,
    jit_compile: bool | str,
    *,
    replica_by_replica: bool = False,
) -> SquaredErrorModel:
    """A ``squared_error_model`` over ``cell``'s weights compiled with ``optimizer``, trained
    by ``train_on_batch([x, y])``; ``replica_by_replica``: a ``ReplicaTrainer``."""
    chosen = SpecSGD() if optimizer == "sgd" else SpecAdam()
    kind = ReplicaTrainer if replica_by_replica else SquaredErrorModel
    trainer = squared_error_model(config, cell, kind)
    trainer.compile(optimizer=chosen, jit_compile=False if replica_by_replica else jit_compile)
    if isinstance(trainer, ReplicaTrainer):  # its replicas' gradients compiled apart
        trainer.replica_gradients = gradient_function(trainer, jit_compile is not False)
    return trainer


CARRIED_STEPS = routes.Setting(
    "keras train step (JAX)",
    "state carried through a fit" if routes.chosen() == routes.BEST else None,
    routes.BY_FRAE if routes.chosen() == routes.BEST else routes.BY_DEFAULT,
)
"""Whether ``fit`` on JAX steps with ``CarriedSteps`` (the route) or ``train_on_batch``."""


class CarriedSteps:
    """Keras' own compiled training step on JAX, its state carried from one step to the next
    as Keras' ``fit`` carries it and written into the variables once, by ``sync``, instead of
    after every step (most of a step's cost at B = 1). Metrics are zeroed at each step, so
    the loss is the step's own. Until ``sync``, the variables are not to be read.
    """

    def __init__(self, trainer: keras.Model) -> None:
        self.trainer = trainer
        self.state: tuple[list[Any], ...] | None = None

    def __call__(self, x: Array, y: Array) -> float:
        trainer = self.trainer
        data = ([ops.convert_to_tensor(x), ops.convert_to_tensor(y)], None, None)
        if self.state is None:
            trainer._symbolic_build(data_batch=data)
            trainer.make_train_function()
            self.state = trainer._get_jax_state(
                trainable_variables=True,
                non_trainable_variables=True,
                optimizer_variables=True,
                metrics_variables=True,
            )
        *variables, metrics = self.state  # trainable, non-trainable, optimizer's, metrics'
        zeroed = [ops.zeros_like(value) for value in metrics]
        logs, self.state = trainer.train_function((*variables, zeroed), iter([data]))
        return float(logs["loss"])

    def sync(self) -> None:
        """Write the carried state into the trainer's variables (Keras' ``jax_state_sync``)."""
        if self.state is None:
            return
        names = ("trainable_variables", "non_trainable_variables", "optimizer_variables")
        self.trainer._jax_state = dict(zip(names, self.state[:3], strict=True))
        self.trainer._jax_state_synced = False
        self.trainer.jax_state_sync()
        self.state = None


class DataParallel(Protocol):
    """A data-parallel engine (``devices=N``); ``replica_by_replica``: whether its trainer
    must be a ``ReplicaTrainer``."""

    replica_by_replica: bool

    def creating(self) -> contextlib.AbstractContextManager[Any]:
        """The scope in which variables, models and optimizers are made."""

    def predict(self, model: keras.Model, inputs: list[Array]) -> Any:
        """``model.predict_on_batch(inputs)``, the whole batch's outputs."""

    def gradients(self, function: Callable[[Any, Any], Any], x: Array, y: Array) -> Any:
        """``function(x, y)`` (``gradient_function``) on the engine's devices."""

    def train_step(self, trainer: keras.Model) -> TrainStep:
        """``trainer.train_on_batch`` on each mini-batch split evenly over the devices."""


def data_parallel(devices: int) -> DataParallel:
    """The engine of the Keras backend this process runs on, over ``devices`` devices."""
    name = keras.backend.backend()
    if name == "jax":
        return JaxDataParallel(devices)
    if name == "tensorflow":
        return TensorFlowDataParallel(devices)
    raise ValueError(
        f"keras_rnn on {name} has no data-parallel engine: devices must be None or 1, got {devices}"
    )


class JaxDataParallel:
    """``keras.distribution.DataParallel`` over the first ``devices`` JAX devices, entered as
    a scope around each call so that other models in the process keep their placement."""

    replica_by_replica = False

    def __init__(self, devices: int) -> None:
        import jax

        present = keras.distribution.list_devices()
        check_device_count(devices, len(present), f"JAX ({jax.process_count()} process(es))")
        self.distribution = keras.distribution.DataParallel(devices=present[:devices])

    def creating(self) -> contextlib.AbstractContextManager[Any]:
        return self.distribution.scope()

    def predict(self, model: keras.Model, inputs: list[Array]) -> Any:
        with self.distribution.scope():
            return model.predict_on_batch(inputs)

    def gradients(self, function: Callable[[Any, Any], Any], x: Array, y: Array) -> Any:
        with self.distribution.scope():
            return function(x, y)

    def train_step(self, trainer: keras.Model) -> TrainStep:
        def step(x: Array, y: Array) -> float:
            with self.distribution.scope():
                return float(trainer.train_on_batch([self.own_rows(x), self.own_rows(y)]))

        return step

    def own_rows(self, batch: Array) -> Array:
        """The rows of ``batch`` that this process's devices hold: Keras builds the global
        batch from each process's part."""
        layout = self.distribution.get_data_layout(batch.shape).backend_layout
        rows = {
            index[0].indices(len(batch))[:2]
            for index in layout.addressable_devices_indices_map(batch.shape).values()
        }
        return np.concatenate([batch[start:stop] for start, stop in sorted(rows)])


class TensorFlowDataParallel:
    """A ``tf.distribute`` strategy (``frae.devices.tensorflow_strategy``)."""

    replica_by_replica = True

    def __init__(self, devices: int) -> None:
        self.strategy = tensorflow_strategy(devices)

    def creating(self) -> contextlib.AbstractContextManager[Any]:
        return self.strategy.scope()

    def predict(self, model: keras.Model, inputs: list[Array]) -> Any:
        """Every row on the first replica, none on the others: computed once."""
        whole_on_first = self.strategy.experimental_distribute_values_from_function(
            lambda context: [
                array if context.replica_id_in_sync_group == 0 else array[:0] for array in inputs
            ]
        )
        return model.predict_on_batch(whole_on_first)

    def gradients(self, function: Callable[[Any, Any], Any], x: Array, y: Array) -> Any:
        return function(x, y)  # cross-replica: the variables read as their first copy

    def train_step(self, trainer: keras.Model) -> TrainStep:
        def step(x: Array, y: Array) -> float:
            loss = trainer.train_on_batch([self.split(x), self.split(y)])
            return float(np.asarray(loss).item())  # one element (``ReplicaTrainer``)

        return step

    def split(self, batch: Array) -> Any:
        """``batch`` in equal parts, replica i getting part i."""
        size = len(batch) // self.strategy.num_replicas_in_sync

        def part(context: Any) -> Array:
            start = context.replica_id_in_sync_group * size
            return batch[start : start + size]

        return self.strategy.experimental_distribute_values_from_function(part)
