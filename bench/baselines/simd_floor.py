"""The floor at every batch size: the Numba floor's loops in C, vectorised over the batch.

The scalar floor (``numba_floor``) evaluates exp one lane at a time (Numba vectorises it only
with Intel's SVML), so at large B it is no limit. ``simd_floor.c`` runs the same loops on the
same arrays (``layout.plan``), every loop over the batch ``#pragma omp simd``, compiled here
with ``flags()`` so that glibc's vector expf and tanhf (libmvec) run 8 or 16 lanes a call; a
state-feedback model's header defines ``FRAE_GRU``. Fast math allows what the frameworks and
the scalar floor do not: sums reassociated, approximate exp and tanh, no NaN or infinity.
``SimdFloorBackend`` is ``NumbaFloorBackend`` with its forward and backward in C.
"""

from __future__ import annotations

import ctypes
import functools
import platform
import subprocess
from pathlib import Path

import numpy as np

from bench.baselines.c_forward import DOUBLES, FLOATS, build_folder, plan_header
from bench.baselines.layout import GRUPlan, Layer, Plan, plan
from bench.baselines.numba_floor import NumbaFloorBackend
from frae.backend import Array, Streamed
from frae.config import FRAEConfig
from frae.params import Weights

SOURCE = Path(__file__).with_name("simd_floor.c")
ACTIVATIONS = Path(__file__).with_name("frae_activate.h")
"""The activations and their slopes, shared by the C floors."""
FLAGS = ("-O3", "-march=native", "-ffast-math", "-fopenmp-simd", "-fPIC")
LINK_FLAGS = ("-shared",)
WIDE_VECTORS = ("-mprefer-vector-width=512",)
"""x86-64 only: GCC otherwise keeps AVX-512 machines to 256-bit vectors (8 lanes)."""


def flags() -> tuple[str, ...]:
    """The compiler flags for this machine."""
    return FLAGS + (WIDE_VECTORS if platform.machine() in ("x86_64", "AMD64") else ())


def simd_header(layout: Plan) -> str:
    """``frae_plan.h``: ``c_forward``'s constants, plus the encoder's and decoder's layers apart
    (``decode`` runs the decoder alone) and all layers reversed (for the backward pass); with
    state feedback, ``gru_header``'s too."""

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
            *(
                gru_header(layout.gru, table(encoder[::-1]), table(decoder[::-1]))
                if layout.gru
                else []
            ),
            "",
        ]
    )


def gru_header(gru: GRUPlan, encoder_reversed: str, decoder_reversed: str) -> list[str]:
    """The lines of ``frae_plan.h`` a state-feedback model adds: ``FRAE_GRU``, the GRU's rows
    and weights, and each side's layers reversed (the GRU's backward runs between them)."""
    return [
        "#define FRAE_GRU 1",
        f"#define STATE {gru.state}",
        f"#define PREVIOUS_ROW {gru.previous_row}",
        f"#define GATE_ROW {gru.gate_row}",
        f"#define STATE_ROW {gru.state_row}",
        f"#define GRU_KERNEL {gru.kernel}",
        f"#define GRU_RECURRENT_KERNEL {gru.recurrent_kernel}",
        f"#define GRU_BIAS {gru.bias}",
        f"#define GRU_RECURRENT_BIAS {gru.recurrent_bias}",
        f"#define FRAE_ENCODER_LAYERS_REVERSED(X) {encoder_reversed}",
        f"#define FRAE_DECODER_LAYERS_REVERSED(X) {decoder_reversed}",
    ]


def build_fast(source: Path, config: FRAEConfig, openmp: bool = False) -> ctypes.CDLL:
    """``source`` (a C floor, which includes ``frae_activate.h`` and ``frae_plan.h`` for
    ``config``) compiled with ``flags`` and loaded, with OpenMP's threads where ``openmp``, its
    ``frae_forward`` typed; raises ``RuntimeError`` without a compiler."""
    cc, folder = build_folder(source, simd_header(plan(config)))
    objects, library = folder / f"{source.stem}.o", folder / f"lib{source.stem}.so"
    # linked apart, without -ffast-math: GCC 12 links crtfastmath.o into a shared library
    # built with it, whose constructor flushes subnormals to zero in the whole process
    headers = ["-I", str(folder), "-I", str(ACTIVATIONS.parent)]
    copied = str(folder / source.name)
    threads = ("-fopenmp",) if openmp else ()
    compile_only = [cc, *flags(), *threads, "-c", *headers, "-o", str(objects), copied]
    link = [cc, *LINK_FLAGS, *threads, "-o", str(library), str(objects), "-lm"]
    for command in (compile_only, link):
        subprocess.run(command, check=True, capture_output=True, text=True)
    loops = ctypes.CDLL(str(library))
    # the outputs' and the codes' arrays are an address, or None (NULL) for the one not kept;
    # the state enters after the inputs and leaves after the codes
    nullable = [ctypes.c_void_p] * 2
    loops.frae_forward.argtypes = [FLOATS, FLOATS, ctypes.c_int, *[FLOATS] * 3, *nullable]
    loops.frae_forward.argtypes += [FLOATS, *[ctypes.c_long] * 3]
    loops.frae_forward.restype = None
    return loops


@functools.cache
def compile_simd(config: FRAEConfig, source: Path = SOURCE) -> ctypes.CDLL:
    """Build ``source`` (``simd_floor.c``, or a variant of it that the tests break on purpose)
    for ``config``; raises ``RuntimeError`` without a compiler."""
    loops = build_fast(source, config)
    loops.frae_forward_recorded.argtypes = [*[FLOATS] * 4, ctypes.c_long, ctypes.c_long]
    loops.frae_backward.argtypes = [*[FLOATS] * 3, ctypes.c_float, *[FLOATS] * 4, DOUBLES]
    loops.frae_backward.argtypes += [ctypes.c_long] * 2
    for function in (loops.frae_forward_recorded, loops.frae_backward):
        function.restype = None
    return loops


class ForwardInC(NumbaFloorBackend):
    """The Numba floor with its forward in C: predict, encode and decode through one
    ``_stream``, which calls the C floor's ``frae_forward``."""

    _loops: ctypes.CDLL
    """The compiled C floor, which a subclass's ``_build`` loads."""

    def _forward_buffers(self, steps: int, batch: int, width: int) -> tuple[Array, Array]:
        """The two workspaces the C forward takes after the weights, for one shape."""
        raise NotImplementedError

    def _stream(self, sequences: Array, state: Array, codes_given: bool, keep: str) -> Streamed:
        """x̂ (``keep="outputs"``) or z (``keep="codes"``), (B, T, ·), and the feedback after
        the last step, (B, S), from ``state`` (B, S): one call of the C loop, batch-major."""
        batch, steps, width = sequences.shape
        rows = self._plan.features if keep == "outputs" else self._plan.latent
        kept, final = np.empty((batch, steps, rows), np.float32), np.empty_like(state)
        address = kept.ctypes.data  # the kept array's argument, NULL for the other
        self._loops.frae_forward(
            np.ascontiguousarray(sequences, np.float32),
            state,
            int(codes_given),
            self._theta,
            *self._forward_buffers(steps, batch, width),
            address if keep == "outputs" else None,
            address if keep == "codes" else None,
            final,
            steps,
            width,
            batch,
        )
        return kept, final


class SimdFloorBackend(ForwardInC):
    """The SIMD floor behind the contract: C loops vectorised over the batch, float32, fast
    math, one thread; everything but the forward and backward loops is the Numba floor's."""

    name = "simd_floor"

    def _build(self, weights: Weights) -> None:
        self._loops = compile_simd(self.config)
        super()._build(weights)

    def _forward_buffers(self, steps: int, batch: int, width: int) -> tuple[Array, Array]:
        space = self._workspace(steps, batch, width, record=False)
        return space.work, space.slopes

    def _flat_loss_and_grads(self, x: Array, y: Array) -> tuple[float, Array]:
        batch, steps, width = x.shape
        space = self._workspace(steps, batch, width, record=True)
        self._loops.frae_forward_recorded(
            np.ascontiguousarray(x, np.float32), self._theta, space.work, space.slopes, steps, batch
        )
        self._loops.frae_backward(
            space.work,
            space.slopes,
            np.ascontiguousarray(y, np.float32),
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
