"""The floor at every batch size: the Numba floor's loops in C, vectorised over the batch.

At B = 1 the scalar floor (``numba_floor``) is the limit; at large B it is not, because it
evaluates exp one lane at a time (Numba vectorises exp only with Intel's SVML, a package
this suite does not install). ``simd_floor.c`` runs the same forward and back-propagation
through time on the same arrays (``layout.plan``), every loop over the batch marked
``#pragma omp simd`` and compiled at run time for the machine it runs on::

    cc -O3 -march=native -ffast-math -fopenmp-simd [-mprefer-vector-width=512] ... -lm

so glibc's vector expf and tanhf (libmvec) activate 8 or 16 lanes a call. Fast math allows
what the frameworks and the scalar floor do not: sums reassociated, approximate vector exp
and tanh, no NaN or infinity semantics. ``SimdFloorBackend`` is ``NumbaFloorBackend`` with its
forward and backward swapped for the C ones; the workspaces, the sum of the per-lane
gradients and the SGD and Adam updates are the Numba floor's.
"""

from __future__ import annotations

import ctypes
import functools
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from bench.baselines.c_forward import compiler, plan_header
from bench.baselines.layout import Layer, Plan, plan
from bench.baselines.numba_floor import NumbaFloorBackend, _Workspace
from frae.backend import Array
from frae.config import FRAEConfig
from frae.params import Weights

SOURCE = Path(__file__).with_name("simd_floor.c")
FLAGS = ("-O3", "-march=native", "-ffast-math", "-fopenmp-simd", "-fPIC")
LINK_FLAGS = ("-shared",)
WIDE_VECTORS = ("-mprefer-vector-width=512",)
"""x86-64 only: GCC otherwise keeps AVX-512 machines to 256-bit vectors (8 lanes)."""


def flags() -> tuple[str, ...]:
    """The compiler flags for this machine."""
    return FLAGS + (WIDE_VECTORS if platform.machine() in ("x86_64", "AMD64") else ())


def simd_header(layout: Plan) -> str:
    """``frae_plan.h``: ``c_forward``'s constants, plus the encoder's and decoder's layers apart
    (``decode`` runs the decoder alone) and all layers reversed (for the backward pass)."""

    def table(layers: tuple[Layer, ...]) -> str:
        return " ".join(f"X({', '.join(map(str, layer))})" for layer in layers)

    split = layout.encoder_layers
    encoder, decoder = layout.layers[:split], layout.layers[split:]
    return plan_header(layout) + "\n".join(
        [
            f"#define CODE_ROW {layout.code_row}",
            f"#define LATENT {layout.latent}",
            f"#define WEIGHTS {layout.size}",
            f"#define FRAE_ENCODER_LAYERS(X) {table(encoder)}",
            f"#define FRAE_DECODER_LAYERS(X) {table(decoder)}",
            f"#define FRAE_LAYERS_REVERSED(X) {table(layout.layers[::-1])}",
            "",
        ]
    )


@functools.cache
def compile_simd(config: FRAEConfig) -> ctypes.CDLL:
    """Build ``simd_floor.c`` for ``config``; raises ``RuntimeError`` without a compiler."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler: neither cc nor gcc is on PATH")
    folder = Path(tempfile.mkdtemp(prefix="frae-simd-floor-"))
    (folder / "frae_plan.h").write_text(simd_header(plan(config)))
    shutil.copy(SOURCE, folder / SOURCE.name)
    objects, library = folder / "simd_floor.o", folder / "libfrae_simd_floor.so"
    # linked apart, without -ffast-math: GCC 12 links crtfastmath.o into a shared library
    # built with it, whose constructor flushes subnormals to zero in the whole process
    source = str(folder / SOURCE.name)
    compile_only = [cc, *flags(), "-c", "-I", str(folder), "-o", str(objects), source]
    for command in (compile_only, [cc, *LINK_FLAGS, "-o", str(library), str(objects), "-lm"]):
        subprocess.run(command, check=True, capture_output=True, text=True)
    loops = ctypes.CDLL(str(library))
    floats = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
    doubles = np.ctypeslib.ndpointer(np.float64, flags="C_CONTIGUOUS")
    sizes = [ctypes.c_long] * 3
    for forward in (loops.frae_forward, loops.frae_forward_recorded):
        forward.argtypes = [floats, ctypes.c_int, *[floats] * 5, *sizes]
        forward.restype = None
    loops.frae_backward.argtypes = [*[floats] * 4, ctypes.c_float, *[floats] * 4, doubles]
    loops.frae_backward.argtypes += [ctypes.c_long] * 2
    loops.frae_backward.restype = None
    return loops


class SimdFloorBackend(NumbaFloorBackend):
    """The SIMD floor behind the contract: C loops vectorised over the batch, float32, fast
    math, one thread; everything but the forward and backward loops is the Numba floor's."""

    name = "simd_floor"

    def _build(self, weights: Weights) -> None:
        self._loops = compile_simd(self.config)
        super()._build(weights)

    def _run(self, sequences: Array, codes_given: bool, record: bool) -> _Workspace:
        batch, steps, width = sequences.shape
        space = self._workspace(steps, batch, width, record)
        forward = self._loops.frae_forward_recorded if record else self._loops.frae_forward
        inputs = np.ascontiguousarray(sequences.transpose(1, 2, 0), np.float32)
        forward(
            inputs,
            int(codes_given),
            self._theta,
            space.work,
            space.slopes,
            space.outputs,
            space.codes,
            steps,
            width,
            batch,
        )
        return space

    def _flat_loss_and_grads(self, x: Array, y: Array) -> tuple[float, Array]:
        space = self._run(x, codes_given=False, record=True)
        steps, _, batch = space.outputs.shape
        self._loops.frae_backward(
            space.work,
            space.slopes,
            space.outputs,
            np.ascontiguousarray(y.transpose(1, 2, 0), np.float32),
            2.0 / y.size,
            self._theta,
            space.delta,
            space.carry,
            space.lanes,
            space.loss,
            steps,
            batch,
        )
        return float(space.loss.sum() / y.size), space.lanes.sum(axis=1)
