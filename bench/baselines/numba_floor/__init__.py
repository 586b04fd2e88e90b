"""The native floor: the FRAE forward and back-propagation through time, compiled by Numba,
written as a performance engineer would write it by hand for any ``FRAEConfig``:

- one time step lives in a ``(rows, B)`` workspace laid out by ``layout.plan``;
- every size is a compile-time constant (Numba treats closure values as constants), each
  layer a small function inlined into one step, so the compiler unrolls and vectorizes as
  for code written for that one config;
- the batch is the innermost, contiguous axis; the weights one flat vector in canonical order;
- nothing is allocated in the time loop; each weight's gradient accumulates per batch lane
  and the lanes are summed once at the end;
- ``fastmath`` is off: IEEE arithmetic in the arrays' dtype (float32 for the benchmark,
  float64 for the exactness test).
"""

from bench.baselines.numba_floor.backend import NumbaFloor64Backend, NumbaFloorBackend
from bench.baselines.numba_floor.loops import Kernels, kernels

__all__ = ["Kernels", "NumbaFloor64Backend", "NumbaFloorBackend", "kernels"]
