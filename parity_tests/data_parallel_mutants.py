"""``jax_scan`` whose data-parallel step combines the devices' gradients wrongly, one way
each; ``CorrectlyAveraged``, the same code with the mean, is their control."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import jax

from impls.jax_scan import train
from impls.jax_scan.backend import JaxScanBackend, jit
from impls.jax_scan.model import Params

Combine = Callable[[Params], Params]
"""The devices' gradients (inside ``shard_map``) -> the gradient applied."""


def summed(grads: Params) -> Params:
    """The sum over the devices: N times the gradient (``psum`` where ``pmean`` belongs)."""
    return jax.lax.psum(grads, train.DEVICES_AXIS)


def last_shard_dropped(grads: Params) -> Params:
    """The mean over every device but the last: its sequences never reach the update."""
    axis = train.DEVICES_AXIS
    count = jax.lax.axis_size(axis)
    kept = jax.lax.axis_index(axis) < count - 1
    return jax.tree.map(lambda g: jax.lax.psum(g * kept, axis) / (count - 1), grads)


class CorrectlyAveraged(JaxScanBackend):
    """The control: ``jax_scan``'s step with its combination passed in (the mean)."""

    name = "correctly_averaged"
    combine: ClassVar[Combine] = staticmethod(train.mean_over_devices)
    breaks: ClassVar[str | None] = None

    def _step_function(self, optimizer: str) -> Callable[..., Any]:
        if self.mesh is None:
            return super()._step_function(optimizer)
        return _step(self.config, optimizer, self.mesh, type(self).combine)


@functools.lru_cache(maxsize=16)
def _step(config: Any, optimizer: str, mesh: Any, combine: Combine) -> Callable[..., Any]:
    step = train.data_parallel_train_step
    return jit(functools.partial(step, config, optimizer, mesh, combine=combine))


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
