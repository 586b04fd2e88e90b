"""Data-parallel training broken on purpose: each averages the devices' gradients wrongly.

Each mutant is ``jax_scan`` with its training step written as an explicit SPMD program
(``jax.shard_map``: every device computes its shard's loss and gradients, then a collective
combines them) whose combination is wrong in one way. ``test_mutants.py`` runs the
data-parallel tests against each: ``pytest parity_tests/test_data_parallel.py --backend
parity_tests.data_parallel_mutants:GradientsSummedOverDevices``. ``CorrectlyAveraged``
combines them right and passes, so a failure is the mutation's doing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import optax
from jax.sharding import PartitionSpec

from frae.config import FRAEConfig
from impls.jax_scan import train
from impls.jax_scan.backend import JaxScanBackend
from impls.jax_scan.model import Params

Combine = Callable[[Params], Params]
"""The devices' gradients (inside ``shard_map``, axis ``"batch"``) -> the gradient applied."""


def mean(grads: Params) -> Params:
    """The mean over the devices: equal shards, so the whole mini-batch's gradient."""
    return jax.lax.pmean(grads, "batch")


def summed(grads: Params) -> Params:
    """The sum over the devices: N times the gradient (``psum`` where ``pmean`` belongs)."""
    return jax.lax.psum(grads, "batch")


def last_shard_dropped(grads: Params) -> Params:
    """The mean over every device but the last: its sequences never reach the update."""
    count = jax.lax.axis_size("batch")
    kept = jax.lax.axis_index("batch") < count - 1
    return jax.tree.map(lambda g: jax.lax.psum(g * kept, "batch") / (count - 1), grads)


@functools.lru_cache(maxsize=16)
def shard_mapped_step(
    config: FRAEConfig, optimizer: str, mesh: jax.sharding.Mesh, combine: Combine
) -> Callable[..., Any]:
    """A jitted step whose gradients are each device's, combined by ``combine``."""
    replicated, split = PartitionSpec(), PartitionSpec("batch")

    def per_device(params: Params, x: Any, y: Any) -> tuple[Any, Params]:
        loss, grads = train.loss_and_grads(config, params, x, y)
        return jax.lax.pmean(loss, "batch"), combine(grads)

    def step(params: Params, state: Any, rate: Any, x: Any, y: Any) -> tuple[Any, ...]:
        loss, grads = jax.shard_map(
            per_device,
            mesh=mesh,
            in_specs=(replicated, split, split),
            out_specs=(replicated, replicated),
            check_vma=False,  # the scan's zero carry is not marked as varying per device
        )(params, x, y)
        updates, state = train.optimizer(optimizer, rate).update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    return jax.jit(step)


class CorrectlyAveraged(JaxScanBackend):
    """The control: the explicit SPMD step with the mean, as ``jax_scan``'s implicit one."""

    name = "correctly_averaged"
    combine: ClassVar[Combine] = staticmethod(mean)
    breaks: ClassVar[str | None] = None

    def _step_function(self, optimizer: str) -> Callable[..., Any]:
        if self.mesh is None:
            return super()._step_function(optimizer)
        return shard_mapped_step(self.config, optimizer, self.mesh, type(self).combine)


class GradientsSummedOverDevices(CorrectlyAveraged):
    """The devices' gradients summed (``psum`` where ``pmean`` belongs): N times too large."""

    name = "gradients_summed_over_devices"
    combine = staticmethod(summed)
    breaks = "data_parallel"


class LastShardDropped(CorrectlyAveraged):
    """The gradients averaged over every device but the last: its shard never trains."""

    name = "last_shard_dropped"
    combine = staticmethod(last_shard_dropped)
    breaks = "data_parallel"


MUTANTS = [GradientsSummedOverDevices, LastShardDropped]
