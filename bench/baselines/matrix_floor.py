"""The floor for wide layers: the forward and back-propagation through time as matrix products.

The scalar and SIMD floors loop over single weights, which suits the default model (widths
4-3-1-3) and no other: at 64 or 256 units a framework's tuned dot kernel beats them.
``matrix_floor.c`` keeps each step batch-major, (B, units) per layer, multiplying a block of 4
rows by each kernel row in turn with a tile of sums in registers; training carries only
d loss/d x̂ from step to step and forms each weight's gradient as one product over all T·B
rows. It is built as ``simd_floor.c`` is (``simd_floor.build_fast``), with ``-fopenmp`` so
that a large product splits its rows over the benchmark's ``--threads``, each row summed by
one thread: the same results on any number. It has no GRU.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from bench.baselines.c_forward import DOUBLES, FLOATS
from bench.baselines.simd_floor import ForwardInC, build_fast
from frae.backend import Array
from frae.config import FRAEConfig
from frae.params import Weights

SOURCE = Path(__file__).with_name("matrix_floor.c")


@functools.cache
def compile_matrix(config: FRAEConfig, source: Path = SOURCE) -> ctypes.CDLL:
    """Build ``source`` (``matrix_floor.c``, or a variant of it that the tests break on
    purpose) for ``config``; raises ``RuntimeError`` without a compiler."""
    loops = build_fast(source, config, openmp=True)
    loops.frae_loss_and_grads.argtypes = [*[FLOATS] * 2, ctypes.c_float, *[FLOATS] * 8, DOUBLES]
    loops.frae_loss_and_grads.argtypes += [ctypes.c_long] * 2
    loops.frae_loss_and_grads.restype = None
    return loops


class _Buffers(NamedTuple):
    """What one input shape needs, allocated once and reused by later calls."""

    work: Array
    """(S, B, rows): every step's workspace when training (S = T), else one (S = 1)."""
    slopes: Array
    """(T, B, rows) when training: each step's slopes, then d loss/d pre-activation."""
    gradient: Array
    """(B, rows): d loss/d each column at one step of the reverse loop."""
    carry: Array
    """(B, F): d loss/d x̂_t from the steps after t."""
    transposed: Array
    """(weights,): each kernel's transpose."""
    scratch: Array
    """(weights,): a narrow kernel's gradient, transposed."""
    loss: npt.NDArray[np.float64]


class MatrixFloorBackend(ForwardInC):
    """The matrix floor behind the contract: C matrix products, float32, fast math, on
    OpenMP's threads; everything but the forward and backward is the Numba floor's."""

    name = "matrix_floor"

    def _build(self, weights: Weights) -> None:
        if self.config.gru is not None:
            raise NotImplementedError(
                'the matrix floor has no GRU: it runs feedback="output" models only'
            )
        self._loops = compile_matrix(self.config)
        self._buffers: dict[tuple[int, int, bool], _Buffers] = {}
        super()._build(weights)

    def _buffers_for(self, steps: int, batch: int, record: bool) -> _Buffers:
        key = (steps, batch, record)
        if any(shape[:2] != (steps, batch) for shape in self._buffers):
            self._buffers.clear()  # one shape's arrays at a time: bounded memory
        if key not in self._buffers:
            layout, size = self._plan, self._plan.size
            span = steps if record else 1
            self._buffers[key] = _Buffers(
                work=np.empty((span, batch, layout.rows), np.float32),
                slopes=np.empty((span if record else 0, batch, layout.rows), np.float32),
                gradient=np.empty((batch, layout.rows), np.float32),
                carry=np.empty((batch, layout.features), np.float32),
                transposed=np.empty(size, np.float32),
                scratch=np.empty(size, np.float32),
                loss=np.empty(1, np.float64),
            )
        return self._buffers[key]

    def _forward_buffers(self, steps: int, batch: int, width: int) -> tuple[Array, Array]:
        space = self._buffers_for(steps, batch, record=False)
        return space.transposed, space.work

    def _flat_loss_and_grads(self, x: Array, y: Array) -> tuple[float, Array]:
        batch, steps, _ = x.shape
        space = self._buffers_for(steps, batch, record=True)
        grads = np.empty(self._plan.size, np.float32)
        self._loops.frae_loss_and_grads(
            np.ascontiguousarray(x, np.float32),
            np.ascontiguousarray(y, np.float32),
            2.0 / y.size,
            self._theta,
            space.transposed,
            space.work,
            space.slopes,
            space.gradient,
            space.carry,
            space.scratch,
            grads,
            space.loss,
            steps,
            batch,
        )
        return float(space.loss[0] / y.size), grads
