"""The variants: every backend the benchmark runs, and how it runs each (``Variant``): a
registered backend, a baseline given by import path, a floor, or a port of one's own.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import frae
from bench.grid import WIDE_SHAPES, Shape
from bench.records import CODEC, OPERATIONS, STREAM
from bench.roles import Role
from bench.variant import Variant

TARGETED = ("predict", "train_step")
"""The operations the targets judge a compiled backend on."""
BASELINES = "bench.baselines"


def _keras(framework: str) -> Variant:
    # Keras runs its torch backend eagerly (``jit_compile=True`` hands the call to
    # torch.compile, which unrolls all T steps): a baseline, step by step, which runs when
    # named (outside the full grid's budget)
    eager = framework == "torch"
    return Variant(
        f"keras_rnn[{framework}]",
        "keras_rnn",
        Role.BASELINE if eager else Role.COMPILED,
        f"keras.layers.RNN over a custom cell on {framework}, "
        f"{'eager, predict_on_batch' if eager else 'XLA, its backend function'}"
        " / train_on_batch",
        {"KERAS_BACKEND": framework},
        (framework,),
        slow=eager,
        optional=eager,
        quick=not eager,
        wide=() if eager else TARGETED,
    )


def _keras_defaults(framework: str) -> Variant:
    """keras_rnn through Keras' defaults on ``framework`` (on torch: keras_rnn[torch]'s loop)."""
    return Variant(
        f"keras_defaults[{framework}]",
        f"{BASELINES}.keras_defaults:KerasDefaultsBackend",
        Role.BASELINE,
        f"Keras' defaults on {framework}: model.predict / model.fit, jit_compile='auto'",
        {"KERAS_BACKEND": framework},
        ("keras", framework),
        # Keras resolves 'auto' to no XLA on a CPU-only TensorFlow: graph mode, step by step
        slow=framework == "tensorflow",
        # beside keras_rnn at the targets' shapes: what the defaults cost is read there
        only_shapes=WIDE_SHAPES,
        operations=OPERATIONS,
        quick=False,  # the quick run's three minutes hold the backends, not every baseline
        beside=f"keras_rnn[{framework}]",
        no_stream="only predict and fit go through Keras' defaults (model.predict, "
        "model.fit); its encode and decode are keras_rnn's through predict_on_batch",
    )


def _defaults(name: str, backend: str, settings: str, env: dict[str, str] | None = None) -> Variant:
    """``backend`` with its framework's defaults (``FRAE_ROUTES=defaults``) beside its best
    route at the targets' shapes: what the ``settings`` of ``frae.routes`` buy."""
    return Variant(
        f"{name}[defaults]",
        backend,
        Role.BASELINE,
        f"{name} with its framework's defaults (FRAE_ROUTES=defaults: no {settings})",
        {**(env or {}), "FRAE_ROUTES": "defaults"},
        needs=frae.registry.frameworks_of(backend),
        only_shapes=WIDE_SHAPES,
        quick=False,  # the quick run's three minutes hold each backend's best route
        beside=name,
    )


def _by_hand(twin: str, backend: str, mechanism: str) -> Variant:
    """The registered ``twin`` with its backward pass written by hand (``backend``), for the
    report's price of autodiff: its gradient and training step at T = 1000."""
    return Variant(
        f"{twin}_bptt",
        backend,
        Role.BY_HAND,
        f"{twin} with its backward written by hand ({mechanism}): a reverse loop carrying "
        "only the feedback's gradient, weight gradients as one product over all steps",
        needs=frae.registry.frameworks_of(twin),
        operations=("loss_and_grads", "train_step"),
        only_shapes=(Shape(1, 1000), Shape(256, 1000)),
        quick=False,
        no_state_feedback="its backward is written by hand for output feedback (the price "
        "of autodiff is measured on output-feedback models)",
        no_rate_weight="its backward is written by hand without the rate term",
        twin_of=twin,
        no_stream="its forward is its twin's (the backward alone is written by hand): the "
        "twin's stream is its own",
    )


def _compiled(
    name: str, about: str, settings: str, twin: str, mechanism: str
) -> tuple[Variant, ...]:
    """The registered backend ``name``, held to the targets, then its framework's defaults
    (``_defaults``) and its backward written by hand (``_by_hand``, ``bench.twins.<name>``)."""
    return (
        Variant(name, name, Role.COMPILED, about, wide=TARGETED),
        _defaults(name, name, settings),
        _by_hand(name, f"bench.twins.{name}:{twin}", mechanism),
    )


RUNTIMES = {
    "litert": ("ai_edge_litert",),
    "stablehlo": ("jax",),
    "onnx": ("onnxruntime",),
    "saved_model": ("tensorflow",),
}
"""Format -> the runtime its variant's process imports."""


def _exported(exporter: str, format: str, factory: str, quick: bool) -> Variant:
    """``exporter``'s artifact in ``format``, run by its runtime alone
    (``bench.baselines.exported``): predict at the targets' shapes and the stream."""
    return Variant(
        f"{exporter}/{format}",
        f"{BASELINES}.exported:{factory}",
        Role.EXPORTED,
        f"{exporter} exported to {format} (frae export), run by {RUNTIMES[format][0]} alone",
        needs=RUNTIMES[format],
        operations=("predict", STREAM, CODEC),
        only_shapes=WIDE_SHAPES,
        quick=quick,
        exported_from=exporter.partition("[")[0],
    )


NO_ROUNDING = "its loops have no rounding: the floors bound the float model"
"""Why the floors and the C check run no quantized model."""


DEVICE_COUNTS = (2,)
"""The devices axis: a training step at ``DEVICES_SHAPE`` on each count."""
DEVICES_SHAPE = Shape(256, 1000)


def on_devices(variant: Variant, count: int) -> Variant:
    """``variant`` training data-parallel on ``count`` devices, at ``DEVICES_SHAPE`` only."""
    return replace(
        variant,
        name=f"{variant.name} on {count} devices",
        role=Role.DEVICES,
        about=f"{variant.name}'s training step split over {count} devices (create(..., devices=N))",
        operations=("train_step",),
        only_shapes=(DEVICES_SHAPE,),
        wide=(),
        quick=False,
        devices=count,
        of=variant.name,
        no_stream="the devices axis times a training step alone",
    )


VARIANTS = (
    Variant(
        "numba_floor",
        f"{BASELINES}.numba_floor:NumbaFloorBackend",
        Role.FLOOR,
        "native floor: forward and BPTT loops compiled by Numba, float32, one thread",
        needs=("numba",),
        no_code_step=NO_ROUNDING,
    ),
    Variant(
        "c_forward",
        f"{BASELINES}.c_forward:CForwardBackend",
        Role.CHECK,
        "the same forward in plain C, compiled (cc -O2) when the model is created, called "
        "by ctypes: the check on the floor",
        needs_compiler=True,
        operations=("predict",),
        no_state_feedback="the C check's forward has no GRU",
        no_code_step=NO_ROUNDING,
        no_stream="the C check is the forward alone (predict); the floors stream",
    ),
    Variant(
        "simd_floor",
        f"{BASELINES}.simd_floor:SimdFloorBackend",
        Role.SIMD_FLOOR,
        "the floor's forward and BPTT in C, vectorised over the batch (cc -O3 -march=native "
        "-ffast-math, glibc's vector exp)",
        needs=("numba",),
        needs_compiler=True,
        no_code_step=NO_ROUNDING,
    ),
    Variant(
        "matrix_floor",
        f"{BASELINES}.matrix_floor:MatrixFloorBackend",
        Role.MATRIX_FLOOR,
        "the floor for wide layers: each layer a matrix product in C, batch-major, register "
        "tiles (cc -O3 -march=native -ffast-math), OpenMP threads for large products; the floor "
        "wherever it is the fastest",
        needs=("numba",),
        needs_compiler=True,
        only_shapes=WIDE_SHAPES,  # the targets' shapes: the rest of the grid is the loops'
        wide=OPERATIONS,
        no_state_feedback="the matrix floor has no GRU (numba_floor and simd_floor have)",
        no_code_step=NO_ROUNDING,
    ),
    *_compiled(
        "tf_while",
        "tf.while_loop + TensorArray under XLA",
        "XLA loop folding",
        "TFWhileBPTTBackend",
        "tf.custom_gradient",
    ),
    *_compiled(
        "jax_scan",
        "jax.lax.scan over Flax NNX layers, jit",
        "YNNPACK fusions turned off",
        "JaxScanBPTTBackend",
        "jax.custom_vjp",
    ),
    *_compiled(
        "torch_scan",
        "PyTorch's scan operator over nn.Linear layers, torch.compile (Inductor's C++ wrapper; "
        "a one-step gradient through its Python wrapper)",
        "Inductor C++ wrapper: its Python wrapper throughout",
        "TorchScanBPTTBackend",
        "torch.autograd.Function",
    ),
    _keras("tensorflow"),
    _defaults(
        "keras_rnn[tensorflow]", "keras_rnn", "XLA loop folding", {"KERAS_BACKEND": "tensorflow"}
    ),
    _keras("jax"),
    _defaults(
        "keras_rnn[jax]",
        "keras_rnn",
        "state carried through fit, keras.remat from B = 64, YNNPACK fusions off",
        {"KERAS_BACKEND": "jax"},
    ),
    _keras("torch"),
    Variant(
        "textbook_fix",
        f"{BASELINES}.textbook_fix:TextbookFixBackend",
        Role.TEXTBOOK,
        "the textbook fix: the same tf.while_loop in graph mode without XLA",
        needs=("tensorflow",),
        slow=True,
    ),
    _keras_defaults("tensorflow"),
    _keras_defaults("jax"),
    Variant(
        "torch_eager",
        f"{BASELINES}.torch_eager:TorchEagerBackend",
        Role.BASELINE,
        "PyTorch eager: torch_scan's module, a Python loop over time, torch.optim.Adam",
        needs=("torch",),
        slow=True,
        quick=False,  # the quick run's three minutes hold the backends, not every baseline
        no_state_feedback="its loop over time is written for output feedback (x̂_{t-1} fed back)",
    ),
    # the fastest artifact of each framework by the export matrix (docs/performance.md) in
    # the quick run; the others in the full grid
    _exported("tf_while", "litert", "TFWhileLiteRT", quick=True),
    _exported("jax_scan", "stablehlo", "JaxScanStableHLO", quick=True),
    _exported("torch_scan", "onnx", "TorchScanONNX", quick=True),
    _exported("keras_rnn[tensorflow]", "onnx", "KerasONNX", quick=True),
    _exported("tf_while", "onnx", "TFWhileONNX", quick=False),
    _exported("tf_while", "saved_model", "TFWhileSavedModel", quick=False),
    Variant(
        "reference",
        "reference",
        Role.REFERENCE,
        "the float64 NumPy reference, one time step at a time",
        slow=True,
    ),
)
DATA_PARALLEL = ("jax_scan", "tf_while", "keras_rnn[jax]", "keras_rnn[tensorflow]")
"""The variants whose engine splits a batch over the devices of one process (torch_scan's
devices are processes, which the one-process workers do not launch)."""
VARIANTS += tuple(
    on_devices(variant, count)
    for variant in VARIANTS
    if variant.name in DATA_PARALLEL
    for count in DEVICE_COUNTS
)


def frameworks(variant: Variant) -> list[str]:
    """The frameworks a variant's process runs on (the Keras backend's included)."""
    keras_backend = [variant.env["KERAS_BACKEND"]] if "KERAS_BACKEND" in variant.env else []
    found = [*frae.registry.frameworks_of(variant.backend), *variant.needs, *keras_backend]
    return list(dict.fromkeys(name for name in found if name != "keras"))


def unavailable(variant: Variant) -> str | None:
    """Why ``variant`` cannot run here, or ``None``. Imports nothing."""
    reason = frae.unavailable_reason(variant.backend, needs=variant.needs)
    if reason is None and variant.exported_from is not None:
        reason = frae.unavailable_reason(variant.exported_from)
    if reason is None and variant.needs_compiler:
        from bench.baselines.c_forward import compiler

        if compiler() is None:
            return "no C compiler (cc or gcc) on PATH"
    return reason


def select(names: list[str] | None, quick: bool = False) -> list[Variant]:
    """The variants named (by default all but the optional ones, and with ``quick`` those
    that run in ``--quick``), a name with ``:`` a port's import path (``port``); an unknown
    one raises ``ValueError``."""
    if not names:
        return [v for v in VARIANTS if not v.optional and (v.quick or not quick)]
    known = {v.name: v for v in VARIANTS}
    if unknown := [n for n in names if n not in known and ":" not in n]:
        raise ValueError(
            f"variants must be among {list(known)} or 'package.module:Factory', got {unknown}"
        )
    return [known[name] if name in known else port(name) for name in names]


def port(path: str) -> Variant:
    """A port of one's own, ``package.module:Factory``, as a variant held to the targets; its
    module must be findable from the working folder (imports nothing)."""
    if os.getcwd() not in sys.path:  # as ``python -m`` has it; the console script does not
        sys.path.insert(0, os.getcwd())
    reason = frae.unavailable_reason(path) if path.partition(":")[2] else "no factory after ':'"
    if reason is not None:
        raise ValueError(f"variant {path!r} must name an importable port: {reason}")
    return Variant(path, path, Role.COMPILED, f"a port given by import path, {path}", wide=TARGETED)
