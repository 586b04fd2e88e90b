"""The native floor: the FRAE forward and back-propagation through time, compiled by Numba.

Written as a performance engineer would write it by hand, for any ``FRAEConfig``:

- one time step lives in a ``(rows, B)`` workspace laid out by ``layout.plan``; a
  layer reads one block of rows and writes the next;
- every size is a compile-time constant: each layer is a small function with its sizes
  frozen in (Numba treats closure values as constants), inlined into one step, so the
  compiler unrolls and vectorizes as it would code written for that one config;
- the batch is the innermost, contiguous axis, so every multiply-add loop runs over B lanes
  and vectorizes; the weights are one flat vector in canonical order;
- every array is allocated once per input shape and reused; nothing is allocated in the
  time loop; each weight's gradient accumulates per batch lane (an elementwise add, which
  vectorizes without reassociating) and the lanes are summed once at the end;
- ``fastmath`` is off: IEEE arithmetic in the arrays' dtype (float32 for the benchmark,
  float64 for the exactness test against the reference). ``error_model="numpy"`` only drops
  the zero-divisor test that Python semantics put before every division.

With state feedback (the contract's "State feedback") the step runs the GRU between the
encoder and the decoder (``gru``), with a time loop of its own that feeds back s_t
(``loops``); a model with output feedback never reaches them.

One job per module: ``layers`` (a dense layer's forward and backward at one step),
``gru`` (the GRU's), ``loops`` (the time loops around a step, and Adam), ``backend``
(``NumbaFloorBackend``, which puts the kernels behind the contract, so the benchmark times
it as it times every framework: through ``predict``, ``loss_and_grads`` and ``fit``).
"""

from bench.baselines.numba_floor.backend import NumbaFloor64Backend, NumbaFloorBackend
from bench.baselines.numba_floor.loops import Kernels, kernels

__all__ = ["Kernels", "NumbaFloor64Backend", "NumbaFloorBackend", "kernels"]
