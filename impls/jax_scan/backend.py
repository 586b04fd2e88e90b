"""``JaxScanBackend``: the contract in JAX, Flax NNX modules stepped by ``jax.lax.scan``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import optax

from frae.backend import Array, BaseBackend, Moments, TrainStep, check_device_count, kept_slot
from frae.config import FRAEConfig
from frae.optimizers import OPTIMIZERS
from frae.params import Weights
from frae.training_state import TrainingState, is_fresh
from impls.jax_scan import export, model, train
from impls.jax_scan.model import Params

Streamed = tuple[jax.Array, jax.Array]
"""A call's outputs and the feedback after its last step, on the device."""


class Jitted[**P, R](Protocol):
    """What ``jax.jit`` returns for a function ``(*P) -> R``: called, or lowered ahead of
    time (``bench.kernels`` reads the compiled HLO)."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R: ...

    def lower(self, *args: P.args, **kwargs: P.kwargs) -> jax.stages.Lowered: ...


@dataclass(frozen=True)
class Compiled:
    """One config's jitted functions, the config bound, shared by every backend of it.

    Training takes canonical weights, a plain dict; ``predict``, ``encode`` and ``decode``
    take ``(packed, sequences, state)``, the weights ``pack``ed into one array (each array
    argument costs a frame's call as much as a small step of the loop).
    """

    pack: Jitted[[Params], jax.Array]
    predict: Jitted[[jax.Array, Any, Any], Streamed]
    encode: Jitted[[jax.Array, Any, Any], Streamed]
    decode: Jitted[[jax.Array, Any, Any], Streamed]
    loss_and_grads: Jitted[[Params, Any, Any], tuple[jax.Array, Params]]
    optimizer_inits: Mapping[str, Jitted[[Params], optax.OptState]]
    train_steps: Mapping[str, Jitted[..., tuple[Params, optax.OptState, jax.Array]]]
    all_finite: Jitted[[Params], jax.Array]


def jit[**P, R](function: Callable[P, R]) -> Jitted[P, R]:
    return jax.jit(function, compiler_options=model.COMPILER_OPTIONS)


@functools.lru_cache(maxsize=64)
def compiled(config: FRAEConfig) -> Compiled:
    def streamed(
        kept: int, *, codes_given: bool = False
    ) -> Jitted[[jax.Array, Any, Any], Streamed]:
        """``model.unroll`` from a state, jitted: its output ``kept`` (0: x̂, 1: z) and the
        last feedback."""

        def run(packed: jax.Array, sequences: Any, state: Any) -> Streamed:
            results = model.unroll(
                config,
                model.unpacked(config, packed),
                sequences,
                codes_given=codes_given,
                state=state,
                batch_last=model.runs_batch_last(config, sequences.shape[0]),
            )
            return results[kept], results[2]

        return jit(run)

    return Compiled(
        pack=jit(functools.partial(model.packed, config)),
        predict=streamed(0),
        encode=streamed(1),
        decode=streamed(0, codes_given=True),
        loss_and_grads=jit(functools.partial(train.loss_and_grads, config)),
        optimizer_inits={
            name: jit(functools.partial(train.init_optimizer, name)) for name in OPTIMIZERS
        },
        train_steps={
            name: jit(functools.partial(train.train_step, config, name)) for name in OPTIMIZERS
        },
        all_finite=jit(
            lambda params: jnp.all(jnp.array([jnp.isfinite(v).all() for v in params.values()]))
        ),
    )


@functools.lru_cache(maxsize=16)
def data_parallel_steps(
    config: FRAEConfig, mesh: jax.sharding.Mesh, gradient: train.Gradient = train.loss_and_grads
) -> Mapping[str, Jitted[..., tuple[Params, optax.OptState, jax.Array]]]:
    """Per optimizer, the jitted ``train.data_parallel_train_step`` of ``config`` on ``mesh``,
    differentiating with ``gradient``."""
    step = train.data_parallel_train_step
    return {
        name: jit(functools.partial(step, config, name, mesh, gradient=gradient))
        for name in OPTIMIZERS
    }


class JaxScanBackend(BaseBackend):
    """float32 throughout; the weights stay on the device between calls, and backends of
    one config share their jitted functions (``compiled``)."""

    name = "jax_scan"
    routes = model.ROUTES
    export_formats = ("stablehlo",)
    export_refusals = export.REFUSALS
    _packed_from: Params | None = None
    _packed: jax.Array
    mesh: jax.sharding.Mesh | None = None
    """With ``devices=N``: the first N of ``jax.devices()``, one axis ``"batch"``."""

    def _place(self, devices: int) -> None:
        """The weights replicated over a mesh of ``devices``, each mini-batch sharded."""
        present = jax.devices()
        check_device_count(devices, len(present), f"JAX ({jax.process_count()} process(es))")
        self.mesh = jax.sharding.Mesh(np.array(present[:devices]), (train.DEVICES_AXIS,))

    def _global(self, value: Any, spec: jax.sharding.PartitionSpec) -> jax.Array:
        """``value``, the same in every process, over the mesh laid out by ``spec``."""
        assert self.mesh is not None  # placed on devices (_place)
        sharding = jax.sharding.NamedSharding(self.mesh, spec)
        array = np.asarray(value)
        return jax.make_array_from_callback(array.shape, sharding, lambda index: array[index])

    def _local(self, value: Any) -> Any:
        """A replicated result as an array this process can read (its first device's copy)."""
        return value if self.mesh is None else value.addressable_data(0)

    def _build(self, weights: Weights) -> None:
        self.compiled = compiled(self.config)
        self._write_weights(weights)

    @property
    def params(self) -> Params:
        """The weights on the device, by canonical name, in canonical order."""
        # a dict that went through jit comes back with its keys sorted
        return {name: self._params[name] for name in self.config.parameter_shapes()}

    def _read_weights(self) -> Mapping[str, Any]:
        return {name: self._local(value) for name, value in self.params.items()}

    def _write_weights(self, weights: Weights) -> None:
        self._params: Params = {name: self._put(value) for name, value in weights.items()}

    def _put(self, value: Any) -> jax.Array:
        if self.mesh is None:
            return jax.device_put(value)
        return self._global(value, jax.sharding.PartitionSpec())

    def _predict(self, x: Array, state: Array) -> tuple[Any, Any]:
        return self._streamed(self.compiled.predict, x, state)

    def _encode(self, x: Array, state: Array) -> tuple[Any, Any]:
        return self._streamed(self.compiled.encode, x, state)

    def _decode(self, z: Array, state: Array) -> tuple[Any, Any]:
        return self._streamed(self.compiled.decode, z, state)

    @property
    def packed(self) -> jax.Array:
        """The weights in one array (``model.packed``), packed again after they change."""
        if self._packed_from is not self._params:  # a step or a write replaces the dict
            self._packed, self._packed_from = self.compiled.pack(self._params), self._params
        return self._packed

    def _streamed(
        self, function: Jitted[[jax.Array, Any, Any], Streamed], sequences: Array, state: Array
    ) -> tuple[Any, Any]:
        outputs, last = function(self.packed, sequences, state)
        return self._local(outputs), self._local(last)

    def _export(self, format: str, folder: Path) -> str:
        return export.write_stablehlo(self.config, self._read_weights(), folder)

    def _loss_and_grads(self, x: Array, y: Array) -> tuple[float, Mapping[str, Any]]:
        loss, grads = self.compiled.loss_and_grads(self._params, x, y)
        return float(self._local(loss)), {name: self._local(g) for name, g in grads.items()}

    def _train_step(
        self, optimizer: str, learning_rate: float, start: TrainingState
    ) -> tuple[TrainStep, Moments]:
        step_function = self._step_function(optimizer)
        rate = self._put(np.float32(learning_rate))
        if is_fresh(start):  # made on the device, nothing sent
            optimizer_state = self.compiled.optimizer_inits[optimizer](self._params)
        else:
            optimizer_state = jax.tree.map(self._put, train.optimizer_state(start))
        split = (lambda v: v) if self.mesh is None else self._split

        def step(x: Array, y: Array) -> float:
            nonlocal optimizer_state
            self._params, optimizer_state, loss = step_function(
                self._params, optimizer_state, rate, split(x), split(y)
            )
            return float(self._local(loss))

        def moments() -> tuple[Weights, Weights]:
            m, v = train.moments(jax.tree.map(self._local, optimizer_state), self.config)
            return _as_numpy(m), _as_numpy(v)

        return step, moments

    def _step_function(self, optimizer: str) -> Callable[..., Any]:
        """The jitted training step ``(params, state, rate, x, y) -> (params, state, loss)``."""
        if self.mesh is None:
            return self.compiled.train_steps[optimizer]
        return data_parallel_steps(self.config, self.mesh)[optimizer]

    def _keep_weights(self, step: int) -> None:
        """A reference to the weights' dict: a step replaces it and never writes in place."""
        self._kept[kept_slot(step)] = self._params

    def _split(self, sequences: Array) -> jax.Array:
        return self._global(sequences, jax.sharding.PartitionSpec(train.DEVICES_AXIS))

    def _weights_before(self, step: int) -> Mapping[str, Any]:
        return {name: self._local(value) for name, value in self._kept[kept_slot(step)].items()}

    def _weights_finite(self) -> bool:
        return bool(self._local(self.compiled.all_finite(self._params)))


def _as_numpy(arrays: Mapping[str, Any]) -> Weights:
    return {name: np.array(value, np.float32) for name, value in arrays.items()}
