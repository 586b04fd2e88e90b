"""The roofline: a limit on a time step that holds at every width, from the machine's peaks
and the model's arithmetic.

At wide layers and a large batch a framework's tuned matrix products beat the floors, which
then bound nothing. A step of F floating-point operations that moves Q bytes takes at least

    t = max(F / peak, Q / bandwidth)

however it is written, on a machine whose float32 matrix product reaches ``peak`` FLOP/s
and whose memory moves ``bandwidth`` bytes/s: ``measure`` finds the two (in a process pinned
and sized as the workers are: ``python -m bench.roofline N``), ``counts`` finds F and Q.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from frae.config import GRU, FRAEConfig, Layer

if TYPE_CHECKING:
    from bench.records import Key, RunRecord
    from bench.reporting.analysis import Pivot

MATRIX = 1536
"""The side of the square matrices whose product measures the peak: the BLAS kernel's steady
state (1024 and 2048 reach the same rate)."""
STREAM_FLOATS = 2**24
"""The float32 elements of each of the three arrays that measure the bandwidth: 64 MiB, past
a core's caches (the rate was the same from 16 to 512 MiB on a VM reporting 480 MiB of L3)."""
REPEATS = 3
"""Timed calls of each kernel, after one untimed: the best one is the peak."""
FLOAT32 = 4
"""Bytes of a weight or an activation."""

BIAS_FLOPS = 1
"""FLOPs per output unit of a layer for its bias: one addition."""
ACTIVATION_FLOPS = 1
"""FLOPs per output unit for its activation, whichever: counting one keeps the bound a bound,
and where the roofline binds a layer's product is hundreds of FLOPs per output unit."""
GRU_GATE_FLOPS = 14
"""FLOPs per state unit of the GRU besides its products and its three activations: the
biases of a and c (6, over the 3H columns), a + c for the reset and update gates (2),
r ⊙ c_n and its sum with a_n (2), s_t = (1 − p) ⊙ n + p ⊙ s_{t-1} (4)."""
LOSS_FLOPS = 3
"""FLOPs per element of x for the loss: a difference, a square and a sum."""
BACKWARD_OVER_FORWARD = 2
"""The backward pass's FLOPs over the forward's: each product h @ W has two in the
backward, the input's gradient δ @ Wᵀ and the kernel's hᵀ @ δ, each as large; the
activations' derivatives and the biases' sums are counted as the forward's."""
ADAM_FLOPS = 14
"""FLOPs per weight of one Adam update (the contract's optimizers): m (3), v (4), m̂ and v̂ (2),
then √v̂, + ε, the division, × lr and the subtraction from w (5)."""
ADAM_ARRAYS = 7
"""float32 arrays of the weights' size one Adam update moves: w, g, m, v read; w, m, v
written."""


class Counts(NamedTuple):
    """A time step's floating-point operations and bytes to and from memory, whole batch."""

    flops: float
    bytes: float


def dense_flops(layer: Layer, batch: int) -> int:
    """One dense layer's forward over a batch: ``2·B·in·out`` for the product, and per
    output unit its bias and its activation (``BIAS_FLOPS``, ``ACTIVATION_FLOPS``)."""
    return 2 * batch * layer.fan_in * layer.units + batch * layer.units * (
        BIAS_FLOPS + ACTIVATION_FLOPS
    )


def gru_flops(gru: GRU, batch: int) -> int:
    """The GRU's forward over a batch: its two products, ``2·B·L·3H`` (z_t @ K) and
    ``2·B·H·3H`` (s_{t-1} @ U), its gates (``GRU_GATE_FLOPS``) and its three activations
    per state unit (σ, σ, tanh)."""
    products = 2 * batch * (gru.input_dim + gru.state_dim) * 3 * gru.state_dim
    return products + batch * gru.state_dim * (GRU_GATE_FLOPS + 3 * ACTIVATION_FLOPS)


def forward_flops(config: FRAEConfig, batch: int) -> int:
    """A time step's forward over a batch: every dense layer and the GRU, if any."""
    gru = gru_flops(config.gru, batch) if config.gru is not None else 0
    return sum(dense_flops(layer, batch) for layer in config.layers) + gru


def parameters(config: FRAEConfig) -> int:
    """The model's weights, kernels and biases (``FRAEConfig.parameter_shapes``)."""
    return sum(math.prod(shape) for shape in config.parameter_shapes().values())


def counts(config: FRAEConfig, operation: str, batch: int, steps: int) -> Counts | None:
    """FLOPs and bytes per time step of ``operation`` on ``config`` at (B, T); ``None`` for
    the stream. The bytes are the traffic no implementation avoids: x_t and x̂_t each step,
    the weights once a call; activations, feedback and weights stay in the caches (read every
    step, the width-256 model's weights would bound its predict above the matrix floor's).
    """
    weights, features = parameters(config), config.input_dim
    forward = forward_flops(config, batch)
    once_a_call = FLOAT32 * weights / steps
    if operation == "predict":
        return Counts(forward, FLOAT32 * 2 * batch * features + once_a_call)
    if operation not in ("loss_and_grads", "train_step"):
        return None
    flops: float = (1 + BACKWARD_OVER_FORWARD) * forward + LOSS_FLOPS * batch * features
    moved = FLOAT32 * batch * features + 2 * once_a_call
    if operation == "train_step":
        flops += ADAM_FLOPS * weights / steps
        moved += ADAM_ARRAYS * once_a_call
    return Counts(flops, moved)


@dataclass(frozen=True)
class Peak:
    """The machine's peaks as one process on ``threads`` threads measured them: the best
    float32 matrix product (GFLOP/s) and STREAM add z = x + y (GB/s read and written); the
    BLAS pools that ran the product (``threadpoolctl.threadpool_info``'s, the kernel as
    ``architecture``); ``OPENBLAS_CORETYPE`` where the environment forces the kernel."""

    gflops: float
    gbps: float
    threads: int
    blas: list[dict[str, Any]] = field(default_factory=list)
    matrix: int = MATRIX
    stream_mib: float = STREAM_FLOATS * FLOAT32 / 2**20
    seconds: float | None = None
    coretype: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Peak | None:
        """The peak a run recorded, or ``None`` (none, or ``{"error": ...}``)."""
        if not data or "error" in data:
            return None
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def kernel(self) -> str:
        """The BLAS library and kernel as a line says them: "OpenBLAS 0.3.30, SkylakeX"."""
        found = [
            f"{pool.get('internal_api', '?')} {pool.get('version', '?')}, "
            f"{pool.get('architecture') or 'kernel unknown'}"
            for pool in self.blas
        ]
        return "; ".join(found) or "no BLAS found"

    def time_us(self, work: Counts) -> float:
        """The roofline's µs: ``max(flops / peak, bytes / bandwidth)``."""
        return max(work.flops / (self.gflops * 1e3), work.bytes / (self.gbps * 1e3))

    def bound(self, work: Counts) -> str:
        """Which side binds: "FLOPs" or "bytes"."""
        return "FLOPs" if work.flops / self.gflops >= work.bytes / self.gbps else "bytes"


def best_rate(call: Any, work: float, repeats: int = REPEATS) -> float:
    """``work`` per second of ``call``'s fastest of ``repeats`` timed calls, after one
    untimed."""
    call()
    fastest = math.inf
    for _ in range(repeats):
        begin = time.perf_counter()
        call()
        fastest = min(fastest, time.perf_counter() - begin)
    return work / fastest


def measure(threads: int) -> Peak:
    """The float32 matrix product's peak (``MATRIX``², 2n³ FLOPs) and the memory's bandwidth
    (``np.add`` over ``STREAM_FLOATS``, 3 × 4 bytes an element as STREAM counts them) in this
    process, its BLAS held to ``threads`` threads; each the best of ``REPEATS``."""
    from threadpoolctl import (  # type: ignore[import-untyped, unused-ignore]
        threadpool_info,
        threadpool_limits,
    )

    start = time.perf_counter()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((MATRIX, MATRIX), dtype=np.float32) for _ in range(2))
    c = np.empty_like(a)
    with threadpool_limits(limits=threads, user_api="blas"):
        blas = [_pool(pool) for pool in threadpool_info() if pool.get("user_api") == "blas"]
        flops = best_rate(lambda: np.matmul(a, b, out=c), 2.0 * MATRIX**3)
    x, y, z = (np.full(STREAM_FLOATS, value, np.float32) for value in (1.0, 2.0, 0.0))
    moved = best_rate(lambda: np.add(x, y, out=z), 3.0 * FLOAT32 * STREAM_FLOATS)
    return Peak(
        gflops=flops / 1e9,
        gbps=moved / 1e9,
        threads=threads,
        blas=blas,
        seconds=time.perf_counter() - start,
        coretype=os.environ.get("OPENBLAS_CORETYPE"),
    )


def _pool(pool: dict[str, Any]) -> dict[str, Any]:
    """What a run records of a BLAS pool (its file path left out)."""
    kept = ("internal_api", "version", "architecture", "num_threads", "threading_layer")
    return {name: pool[name] for name in kept if name in pool}


def peak_of(run: RunRecord | None) -> Peak | None:
    """The peak a run recorded (``RunRecord.roofline``), if it has one."""
    return None if run is None else Peak.from_dict(run.roofline)


def roofline_us(pivot: Pivot, key: Key) -> float | None:
    """The roofline's µs per step where ``key`` was measured: the pivot's model, operation
    and (B, T), on the run's peaks; ``None`` without peaks or counts."""
    if (peak := peak_of(pivot.run)) is None or key.side is not None:
        return None
    work = counts(FRAEConfig.from_dict(pivot.config), key.operation, key.batch, key.steps)
    return None if work is None else peak.time_us(work)


def roofline_ratio(pivot: Pivot, key: Key) -> float | None:
    """A measurement's µs per step over the roofline's (above 1: slower than the limit)."""
    value, limit = pivot.figure(key), roofline_us(pivot, key)
    return None if value is None or not limit else value / limit


def describe(peak: Peak | None, error: str | None = None) -> str:
    """The peaks as the report's head says them, or why there are none."""
    if peak is None:
        return f"not measured ({error or 'no figures recorded'})"
    plural = "s" if peak.threads != 1 else ""
    forced = f", OPENBLAS_CORETYPE={peak.coretype}" if peak.coretype else ""
    return (
        f"{peak.gflops:.1f} GFLOP/s float32 (a {peak.matrix}² matrix product through NumPy: "
        f"{peak.kernel}{forced}; {peak.threads} thread{plural}) and {peak.gbps:.1f} GB/s "
        f"(z = x + y over arrays of {peak.stream_mib:.0f} MiB), measured in a pinned process "
        "at the run's start"
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.roofline N``: pin this process as a worker on N threads is
    (``bench.measuring.threads``), check its pools, measure; print the peak as one JSON line."""
    from bench.measuring.threads import check, observed, pin

    threads = int((sys.argv[1:] if argv is None else argv)[0])
    pin(threads)
    check(threads, observed([]))
    peak = measure(threads)
    if wrong := [pool for pool in peak.blas if pool.get("num_threads") != threads]:
        raise RuntimeError(f"the BLAS was asked for {threads} thread(s) but has {wrong}")
    print(json.dumps(peak.to_dict()), flush=True)


if __name__ == "__main__":
    main()
