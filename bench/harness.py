"""The cross-framework benchmark: every variant in its own process, one report.

    python -m bench [--quick] [--variants NAME_OR_PATH ...] [--config JSON_OR_FILE]
                    [--steps T ...] [--batch B ...] [--operations OP ...] [--out DIR]

A variant is a backend run one way: a registered backend, a baseline given by import path,
a floor, or a port of one's own (``package.module:Factory``), with the environment it needs
(``KERAS_BACKEND`` for Keras). Each runs in a fresh process (``bench.worker``) over the grid
of (model, B, T); the records (``bench.records``)
stream back as JSON lines and are written, with the machine's facts and library versions,
to ``results.jsonl``; ``bench.report`` turns them into ``report.md`` and plots.

A few backends at one shape, predict and a training step:

    python -m bench --variants tf_while textbook_fix --batch 1 --steps 1000 \
        --operations predict train_step

One's own port beside the floor, on a wider model:

    python -m bench --quick --variants numba_floor my_package.port:MyFRAE \
        --config '{"encoder_units": [64], "latent_dim": 16, "decoder_units": [64]}'

The state-feedback model (contract section 1b), the GRU in the floors too; the variants that
cannot run it (``Variant.no_state_feedback``) are left out, saying why:

    python -m bench --quick --config '{"feedback": "state", "state_dim": 8}'
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.records import (
    DEFAULT_MODEL,
    OPERATIONS,
    DoneRecord,
    EndRecord,
    Listing,
    Point,
    Record,
    ResultRecord,
    RunRecord,
    VariantRecord,
    from_json,
    to_json,
)
from frae.config import FRAEConfig

ROOT = Path(__file__).resolve().parents[1]
STEPS = (100, 1000, 10000)
BATCHES = (1, 32, 256)
SHAPES: tuple[tuple[int, int, tuple[str, ...]], ...] = (
    (1, 100, OPERATIONS),
    (1, 1000, OPERATIONS),
    (1, 10000, OPERATIONS),
    (32, 1000, ("predict",)),
    (256, 1000, OPERATIONS),
    (256, 10000, ("train_step",)),
)
"""The full grid's (B, T, operations) on the default model: three T at B = 1 (the per-call
split needs three), predict at three B at T = 1000 (throughput against B), the training
step at T = 10000 and B = 256 (training linear in T). ``--batch``/``--steps`` measure every
operation at every (B, T) of theirs instead."""
WIDTHS = (64, 256)
WIDE_SHAPES = ((1, 1000), (256, 1000))
"""The width axis: models of one hidden layer of each width per side and a latent of 16,
at the targets' two shapes; the variants marked ``wide`` run them."""
QUICK_SHAPES: tuple[tuple[int, int, tuple[str, ...]], ...] = (
    (1, 100, OPERATIONS),
    (1, 1000, OPERATIONS),
    (256, 1000, ("predict",)),
)
"""``--quick``: every operation at the targets' shape B=1, T=1000 and at a shorter T (the
first calls there compile, the timings show what a call of a tenth of the length costs);
predict at a large batch, for the batching target."""
LIBRARIES = (
    "numpy",
    "tensorflow",
    "keras",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "numba",
    "llvmlite",
    "torch",
    "matplotlib",
)


@dataclass(frozen=True)
class Variant:
    """One backend run one way, in a process of its own.

    Attributes:
        name: its label in the results.
        backend: a registered name or ``"module:attribute"`` for ``frae.create``.
        role: ``"floor"`` (the native floor: scalar loops), ``"simd_floor"`` (the loops
            vectorised over the batch with fast math), ``"matrix_floor"`` (matrix products,
            for wide layers): every figure is divided by the fastest floor at its shape;
            ``"check"`` (the C check of the floor), ``"compiled"`` (the
            suite's backends, held to the targets), ``"by_hand"`` (a compiled backend with
            its backward pass written by hand, beside its autodiff twin), ``"textbook"``
            (the textbook fix, which the targets' speed-ups are measured against) or
            ``"baseline"``.
        about: one line for the report.
        env: environment variables of its process.
        needs: modules that must be importable (beyond what the registry checks).
        slow: it interprets every time step (the reference, graph mode without XLA, eager
            PyTorch), so it gets only part of the grid (``Settings.slow_max_steps``,
            ``slow_max_batch``).
        operations: what it offers.
        optional: it runs only when named in ``--variants`` (the routes PyTorch's backend
            was chosen over: measured for docs/performance.md, outside the default grid's
            time budget).
        quick: it runs in ``--quick`` (keras_rnn[torch], 38 of a 206 s quick run, does
            not, nor do the hand-written backward passes, ``NAME_bptt``: the quick run has
            3 minutes).
        only_shapes: the (B, T) it runs, of the grid's (``None``: every one).
        wide: the operations it runs on the width axis (``wide_models``): predict and a
            training step for the compiled backends (the targets' operations), all three
            for the matrix floor (whose gradient divides a training step); none for the
            rest (the loop floors, one multiply-add at a time, would take minutes a call
            there and bound nothing).
        devices: data-parallel on this many devices (``create(..., devices=N)``), virtual
            CPU devices where the machine has no accelerators (``frae.devices.start``).
        no_state_feedback: why it cannot run a state-feedback model (contract section 1b),
            whose points a run leaves out of its part, saying so (``state_points``);
            ``None``: it runs both feedbacks.
    """

    name: str
    backend: str
    role: str
    about: str
    env: dict[str, str] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    slow: bool = False
    operations: tuple[str, ...] = OPERATIONS
    optional: bool = False
    quick: bool = True
    only_shapes: tuple[tuple[int, int], ...] | None = None
    wide: tuple[str, ...] = ()
    devices: int | None = None
    no_state_feedback: str | None = None


TARGETED = ("predict", "train_step")
"""The operations the targets judge a compiled backend on."""


def _keras(framework: str) -> Variant:
    # Keras runs its torch backend eagerly (``jit_compile=True`` hands the call to
    # torch.compile, which unrolls all T steps): a baseline, step by step, which runs when
    # named (108 s of a 1500 s full grid; keras_defaults[torch] is the same eager loop)
    eager = framework == "torch"
    return Variant(
        f"keras_rnn[{framework}]",
        "keras_rnn",
        "baseline" if eager else "compiled",
        f"keras.layers.RNN over a custom cell on {framework}, "
        f"{'eager' if eager else 'XLA'}, predict_on_batch / train_on_batch",
        {"KERAS_BACKEND": framework},
        (framework,),
        slow=eager,
        optional=eager,
        quick=not eager,
        wide=() if eager else TARGETED,
    )


def _keras_defaults(framework: str) -> Variant:
    # on torch the same eager loop as keras_rnn[torch], through model.predict / model.fit:
    # 155 s of the full grid, so it runs when named
    return Variant(
        f"keras_defaults[{framework}]",
        f"{BASELINES}.keras_defaults:KerasDefaultsBackend",
        "baseline",
        f"Keras' defaults on {framework}: model.predict / model.fit, jit_compile='auto'",
        {"KERAS_BACKEND": framework},
        ("keras", framework),
        # Keras resolves 'auto' to no XLA on a CPU-only TensorFlow: graph mode, step by step;
        # on torch, to eager
        slow=framework in ("tensorflow", "torch"),
        optional=framework == "torch",
        # beside keras_rnn at the targets' shapes: what the defaults cost is read there
        only_shapes=WIDE_SHAPES,
    )


def _by_hand(backend: str, mechanism: str) -> Variant:
    """``backend`` with its backward pass written by hand (``NAME_bptt``), for the report's
    price of autodiff: its gradient and training step at T = 1000 (its forward is the
    backend's own; it is flat in T by construction and checked so by its tests)."""
    return Variant(
        f"{backend}_bptt",
        f"{backend}_bptt",
        "by_hand",
        f"{backend} with its backward written by hand ({mechanism}): a reverse loop carrying "
        "only the feedback's gradient, weight gradients as one product over all steps",
        operations=("loss_and_grads", "train_step"),
        only_shapes=((1, 1000), (256, 1000)),
        quick=False,
        no_state_feedback="its backward is written by hand for output feedback (the price "
        "of autodiff is measured on output-feedback models)",
    )


PYTHON_LOOP = "its loop over time is written for output feedback (x̂_{t-1} fed back)"
"""Why the PyTorch routes that step a cell from Python (``bench.baselines.torch_eager``) or
script the loop run no state-feedback model; those that compile torch_scan's scan run it."""


def _torch_routes() -> tuple[Variant, ...]:
    """The other ways to run the loop in PyTorch (``bench.baselines.torch_routes``)."""
    routes = f"{BASELINES}.torch_routes"
    return (
        Variant(
            "torch_scan[python_wrapper]",
            f"{routes}:TorchScanPythonWrapperBackend",
            "baseline",
            "torch_scan with Inductor's Python wrapper, which runs each loop iteration from Python",
            needs=("torch",),
            optional=True,
        ),
        Variant(
            "torch_scan[cpp_gradient]",
            f"{routes}:TorchScanCppGradientBackend",
            "baseline",
            "torch_scan with Inductor's C++ wrapper for gradients too",
            needs=("torch",),
            optional=True,
        ),
        Variant(
            "torch_compiled_step",
            f"{routes}:TorchCompiledStepBackend",
            "baseline",
            "torch.compile of one time step, called from a Python loop",
            needs=("torch",),
            slow=True,
            optional=True,
            no_state_feedback=PYTHON_LOOP,
        ),
        Variant(
            "torch_script",
            f"{routes}:TorchScriptBackend",
            "baseline",
            "the loop in TorchScript (torch.jit.script), autograd through it",
            needs=("torch",),
            slow=True,
            optional=True,
            no_state_feedback=PYTHON_LOOP,
        ),
        Variant(
            "torch_aoti",
            f"{routes}:TorchAOTIBackend",
            "baseline",
            "torch.export + AOTInductor: the scan compiled ahead of time, one library per "
            "shape; inference only",
            needs=("torch",),
            slow=True,
            operations=("predict",),
            optional=True,
        ),
    )


DEVICE_COUNTS = (2,)
"""The devices axis: a training step at ``DEVICES_SHAPE`` on each count, beside the variant's
own on one device."""
DEVICES_SHAPE = (256, 1000)
ON_DEVICES = " on {} devices"
"""A data-parallel variant is named ``NAME on N devices`` (``report.on_devices`` reads it)."""


def on_devices(variant: Variant, count: int) -> Variant:
    """``variant`` training data-parallel on ``count`` devices, at ``DEVICES_SHAPE`` only."""
    return replace(
        variant,
        name=variant.name + ON_DEVICES.format(count),
        role="devices",
        about=f"{variant.name}'s training step split over {count} devices (create(..., devices=N))",
        operations=("train_step",),
        only_shapes=(DEVICES_SHAPE,),
        wide=(),
        quick=False,
        devices=count,
    )


BASELINES = "bench.baselines"
VARIANTS = (
    Variant(
        "numba_floor",
        f"{BASELINES}.numba_floor:NumbaFloorBackend",
        "floor",
        "native floor: forward and BPTT loops compiled by Numba, float32, one thread",
        needs=("numba",),
    ),
    Variant(
        "c_forward",
        f"{BASELINES}.c_forward:CForwardBackend",
        "check",
        "the same forward in plain C, compiled (cc -O2) when the model is created, called "
        "by ctypes: the check on the floor",
        operations=("predict",),
        no_state_feedback="the C check's forward has no GRU",
    ),
    Variant(
        "simd_floor",
        f"{BASELINES}.simd_floor:SimdFloorBackend",
        "simd_floor",
        "the floor's forward and BPTT in C, vectorised over the batch (cc -O3 -march=native "
        "-ffast-math, glibc's vector exp)",
        needs=("numba",),
    ),
    Variant(
        "matrix_floor",
        f"{BASELINES}.matrix_floor:MatrixFloorBackend",
        "matrix_floor",
        "the floor for wide layers: each layer a matrix product in C, batch-major, register "
        "tiles (cc -O3 -march=native -ffast-math); the floor wherever it is the fastest",
        needs=("numba",),
        only_shapes=WIDE_SHAPES,  # the targets' shapes: the rest of the grid is the loops'
        wide=OPERATIONS,
        no_state_feedback="the matrix floor has no GRU (numba_floor and simd_floor have)",
    ),
    Variant(
        "tf_while", "tf_while", "compiled", "tf.while_loop + TensorArray under XLA", wide=TARGETED
    ),
    _by_hand("tf_while", "tf.custom_gradient"),
    Variant(
        "jax_scan", "jax_scan", "compiled", "jax.lax.scan over Flax NNX layers, jit", wide=TARGETED
    ),
    _by_hand("jax_scan", "jax.custom_vjp"),
    Variant(
        "torch_scan",
        "torch_scan",
        "compiled",
        "PyTorch's scan operator over nn.Linear layers, torch.compile (Inductor; C++ wrapper "
        "for inference, Python wrapper for gradients)",
        wide=TARGETED,
    ),
    _by_hand("torch_scan", "torch.autograd.Function"),
    _keras("tensorflow"),
    _keras("jax"),
    _keras("torch"),
    Variant(
        "textbook_fix",
        f"{BASELINES}.textbook_fix:TextbookFixBackend",
        "textbook",
        "the textbook fix: the same tf.while_loop in graph mode without XLA",
        needs=("tensorflow",),
        slow=True,
    ),
    _keras_defaults("tensorflow"),
    _keras_defaults("jax"),
    _keras_defaults("torch"),
    Variant(
        "torch_eager",
        f"{BASELINES}.torch_eager:TorchEagerBackend",
        "baseline",
        "PyTorch eager: torch_scan's module, a Python loop over time, torch.optim.Adam",
        needs=("torch",),
        slow=True,
        no_state_feedback=PYTHON_LOOP,
    ),
    *_torch_routes(),
    Variant(
        "reference",
        "reference",
        "baseline",
        "the float64 NumPy reference, one time step at a time",
        slow=True,
    ),
)
DATA_PARALLEL = ("jax_scan", "tf_while", "keras_rnn[jax]", "keras_rnn[tensorflow]")
"""The variants on the devices axis: those whose engine splits a batch over the devices of
one process (torch_scan's devices are processes, one each: its engine is timed by
``bench.data_parallel_torch``)."""
VARIANTS += tuple(
    on_devices(variant, count)
    for variant in VARIANTS
    if variant.name in DATA_PARALLEL
    for count in DEVICE_COUNTS
)


@dataclass(frozen=True)
class Settings:
    """How long each measurement runs (see ``bench.worker``)."""

    repeats: int = 7
    min_time_s: float = 0.5
    budget_s: float = 6.0
    max_samples: int = 500
    train_steps: int = 5
    long_call_s: float = 20.0
    long_step_s: float = 0.5
    """A training step longer than this (the warm-up's) is timed one per sample, not K."""
    """A first call longer than this gets one timed call and no warm-up."""
    timeout_s: float = 3600.0
    slow_max_steps: int = 1000
    """Longest T a slow variant gets."""
    slow_max_batch: int | None = 32
    """Largest B a slow variant gets (``None``: every B); at B = 256 the six slow variants
    took 261 s of a 1472 s grid, which the 20-minute budget of the full grid cannot hold."""


QUICK_SETTINGS = Settings(
    repeats=5,
    min_time_s=0.05,
    budget_s=1.0,
    max_samples=100,
    timeout_s=300,
    slow_max_batch=1,
)


def frameworks(variant: Variant) -> list[str]:
    """The frameworks a variant's process runs on (the Keras backend's included)."""
    import frae

    found = [*frae.registry.frameworks_of(variant.backend), *variant.needs, *variant.env.values()]
    return list(dict.fromkeys(name for name in found if name != "keras"))


def unavailable(variant: Variant) -> str | None:
    """Why ``variant`` cannot run here, or ``None``. Imports nothing."""
    import frae

    reason = frae.unavailable_reason(variant.backend, needs=variant.needs)
    if reason is None and variant.role in ("check", "simd_floor", "matrix_floor"):
        from bench.baselines.c_forward import compiler

        if compiler() is None:
            return "no C compiler (cc or gcc) on PATH"
    return reason


def machine_facts() -> dict[str, Any]:
    """Platform, CPUs, Python, library versions and thread variables; imports no framework."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    from bench.baselines.c_forward import FLAGS, compiler

    cc = compiler()
    cc_version = (
        subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        if cc
        else None
    )
    from bench.worker import THREAD_VARIABLES

    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "versions": versions,
        "thread_variables": {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
        "c_compiler": f"{cc_version} {' '.join(FLAGS)}" if cc else None,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()


def full_grid(
    batches: Iterable[int] = BATCHES,
    steps: Iterable[int] = STEPS,
    operations: tuple[str, ...] = OPERATIONS,
    model: str = DEFAULT_MODEL,
) -> list[Point]:
    """Every operation at every (B, T), on ``model``."""
    return [(model, b, t, operations) for t in steps for b in batches]


def wide_models() -> dict[str, FRAEConfig]:
    """The width axis's models by label: one hidden layer of each of ``WIDTHS`` per side, a
    latent of 16, the default's two features (the code is then wider than the input: these
    models measure what width costs, not compression)."""
    configs = [
        FRAEConfig(encoder_units=(width,), latent_dim=16, decoder_units=(width,))
        for width in WIDTHS
    ]
    return {model_label(config): config for config in configs}


def default_grid() -> list[Point]:
    """The full grid: ``SHAPES`` on the default model, and every operation at
    ``WIDE_SHAPES`` on each of ``wide_models``."""
    grid: list[Point] = [(DEFAULT_MODEL, b, t, operations) for b, t, operations in SHAPES]
    grid += [(label, b, t, OPERATIONS) for label in wide_models() for b, t in WIDE_SHAPES]
    return grid


def quick_grid(model: str = DEFAULT_MODEL) -> list[Point]:
    """``QUICK_SHAPES`` on ``model``."""
    return [(model, b, t, operations) for b, t, operations in QUICK_SHAPES]


def model_label(config: FRAEConfig) -> str:
    """``"default"`` for the default model, else its widths from input to output, the GRU's
    as ``gruH`` with state feedback, and its activations where not swish:
    ``"32-64-16-64-32"``, ``"3-5-2-4-6-3 tanh/sigmoid"``, ``"2-4-3-1-gru8-3-2"``."""
    if config == FRAEConfig():
        return DEFAULT_MODEL
    widths: list[int | str] = [config.input_dim, *config.encoder_units, config.latent_dim]
    widths += [f"gru{config.state_dim}"] if config.gru is not None else []
    widths += [*config.decoder_units, config.input_dim]
    activations = (config.activation, config.layers[-1].activation)  # the layer table's
    named = "" if activations == ("swish", "swish") else " " + "/".join(activations)
    return "-".join(map(str, widths)) + named


def read_config(text: str) -> FRAEConfig:
    """The model ``--config`` names: a JSON object of ``FRAEConfig`` fields, or the path of
    a file holding one. Raises ``ValueError`` (or ``TypeError``) saying what is wrong."""
    source = "--config"
    if not text.lstrip().startswith("{"):
        path = Path(text)
        if not path.is_file():
            raise ValueError(
                f"--config must be a JSON object of FRAEConfig fields or a file holding one, "
                f"got {text!r}, which is neither"
            )
        text, source = path.read_text(), f"--config file {path}"
    try:
        fields = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{source} is not valid JSON: {error}") from error
    if not isinstance(fields, dict):
        raise ValueError(f"{source} must hold a JSON object, got {type(fields).__name__}")
    return FRAEConfig.from_dict(fields)


def points_for(variant: Variant, grid: Iterable[Point], settings: Settings) -> list[Point]:
    """The part of ``grid`` a variant runs: the operations it offers; if slow, the caps; the
    models after the grid's first only if it runs the width axis (``Variant.wide``)."""
    grid = list(grid)
    points, main = [], grid[0][0] if grid else DEFAULT_MODEL
    for model, batch, steps, operations in grid:
        wanted = variant.operations if model == main else variant.wide
        offered = tuple(op for op in operations if op in wanted)
        capped = variant.slow and (
            steps > settings.slow_max_steps
            or (settings.slow_max_batch is not None and batch > settings.slow_max_batch)
        )
        only = variant.only_shapes
        capped = capped or (only is not None and (batch, steps) not in only)
        if offered and not capped:
            points.append((model, batch, steps, offered))
    return points


def state_points(
    variant: Variant, points: list[Point], models: dict[str, FRAEConfig]
) -> tuple[list[Point], str | None]:
    """``points`` without the state-feedback models' where ``variant`` cannot run them
    (``Variant.no_state_feedback``), and why it is left out of a run of such a model when
    that leaves it none."""
    if variant.no_state_feedback is None:
        return points, None
    kept = [point for point in points if models[point[0]].gru is None]
    if not kept and any(config.gru is not None for config in models.values()):
        return kept, f"cannot run the state-feedback model: {variant.no_state_feedback}"
    return kept, None


def run_variant(
    variant: Variant,
    points: list[Point],
    models: dict[str, FRAEConfig],
    settings: Settings,
    log: Path,
    on_record: Callable[[Record], None],
) -> None:
    """Run one variant's worker; pass each record it prints to ``on_record``.

    A worker that fails or runs past ``settings.timeout_s`` yields a ``variant`` record with
    the error and the tail of its log; the run goes on with the next variant.
    """
    job = {
        "variant": variant.name,
        "backend": variant.backend,
        "points": points,
        "models": {label: config.to_dict() for label, config in models.items()},
        "frameworks": frameworks(variant),
        "repeats": settings.repeats,
        "min_time_s": settings.min_time_s,
        "budget_s": settings.budget_s,
        "max_samples": settings.max_samples,
        "train_steps": settings.train_steps,
        "long_call_s": settings.long_call_s,
        "long_step_s": settings.long_step_s,
        "devices": variant.devices,
    }
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **variant.env}
    if ":" in variant.backend:  # a port by import path is found where the run was started
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    with log.open("w") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", json.dumps(job)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        timer = threading.Timer(settings.timeout_s, process.kill)
        timer.start()
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("{"):  # a library may print to stdout too
                    record = from_json(line)  # a variant's facts or a measurement
                    if isinstance(record, VariantRecord | ResultRecord):
                        on_record(replace(record, role=variant.role))
            code = process.wait()
        finally:
            timed_out = not timer.is_alive() and process.returncode == -9
            timer.cancel()
    if code != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        why = f"timed out after {settings.timeout_s:.0f} s" if timed_out else f"exited with {code}"
        on_record(
            VariantRecord(variant.name, variant.role, error=f"worker {why}: " + " | ".join(tail))
        )


def run(
    variants: Iterable[Variant],
    grid: Iterable[Point],
    settings: Settings,
    out: Path,
    progress: bool = True,
    models: dict[str, FRAEConfig] | None = None,
) -> list[Record]:
    """Measure every variant over ``grid``; write ``out/results.jsonl``; return the records.

    ``models`` maps the labels in the grid's points to their configs (default: the default
    model as ``"default"``).

    The first record (``RunRecord``) holds the machine's facts, the grid and the settings;
    then, per variant, its facts (or why it was skipped) and one record per measurement.
    """
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    variants, grid = list(variants), list(grid)
    models = models or {DEFAULT_MODEL: FRAEConfig()}
    records: list[Record] = []
    first = RunRecord(
        started=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        command=" ".join(sys.orig_argv),
        machine=machine_facts(),
        grid=grid,
        settings=asdict(settings),
        variants={v.name: Listing(v.backend, v.role, v.about, v.env, v.slow) for v in variants},
        models={label: config.to_dict() for label, config in models.items()},
    )
    plan = []
    for variant in variants:
        points, refused = state_points(variant, points_for(variant, grid, settings), models)
        plan.append((variant, points, unavailable(variant) or refused))
    total = sum(len(p[3]) for _, points, reason in plan if reason is None for p in points)
    bar = _progress_bar(total, progress)
    with (out / "results.jsonl").open("w") as results:

        def keep(record: Record) -> None:
            records.append(record)
            results.write(to_json(record) + "\n")
            results.flush()
            if isinstance(record, ResultRecord):
                bar.update(1)
                shown = "" if record.model == DEFAULT_MODEL else f" model {record.model}"
                bar.set_postfix_str(f"{record.variant}{shown} B={record.batch} T={record.steps}")

        keep(first)
        start = time.perf_counter()
        for variant, points, reason in plan:
            if reason is not None:
                keep(VariantRecord(variant.name, variant.role, skipped=reason))
                continue
            before, begin = len(records), time.perf_counter()
            bar.set_description(variant.name)
            log = out / "logs" / f"{_file_name(variant.name)}.log"
            run_variant(variant, points, models, settings, log, keep)
            done = sum(1 for r in records[before:] if isinstance(r, ResultRecord))
            bar.update(sum(len(p[3]) for p in points) - done)  # those a failed worker left
            keep(DoneRecord(variant.name, time.perf_counter() - begin))
        keep(EndRecord(time.perf_counter() - start))
    bar.close()
    return records


def _file_name(name: str) -> str:
    """A variant's name as a file name (an import path's ``:`` and ``/`` replaced)."""
    return "".join(c if c.isalnum() or c in "._-[]" else "_" for c in name)


class _Silent:
    """Stands in for a tqdm bar when there is none."""

    def update(self, _: int) -> None: ...

    def set_description(self, _: str) -> None: ...

    def set_postfix_str(self, _: str) -> None: ...

    def close(self) -> None: ...


def _progress_bar(total: int, show: bool) -> Any:
    if show:
        try:
            from tqdm import tqdm  # type: ignore[import-untyped]
        except ImportError:
            return _Silent()
        return tqdm(total=total, unit="measurement", file=sys.stderr, dynamic_ncols=True)
    return _Silent()


def default_out() -> Path:
    """``reports/<timestamp>/`` under the working folder."""
    return Path("reports") / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def select(names: list[str] | None, quick: bool = False) -> list[Variant]:
    """The variants named (by default all but the optional ones, and with ``quick`` those
    that run in ``--quick``). A name with ``:`` is a port's import path,
    ``package.module:Factory``, run as a compiled backend; an unknown name, or a path whose
    module cannot be found, raises ``ValueError``."""
    if not names:
        return [v for v in VARIANTS if not v.optional and (v.quick or not quick)]
    known = {v.name: v for v in VARIANTS}
    unknown = [n for n in names if n not in known and ":" not in n]
    if unknown:
        raise ValueError(
            f"variants must be among {list(known)} or 'package.module:Factory', got {unknown}"
        )
    return [known[name] if name in known else port(name) for name in names]


def port(path: str) -> Variant:
    """A port of one's own, ``package.module:Factory``, as a variant held to the targets; its
    module must be findable from the working folder (imports nothing)."""
    import frae

    if os.getcwd() not in sys.path:  # as ``python -m`` has it; the console script does not
        sys.path.insert(0, os.getcwd())
    reason = frae.unavailable_reason(path) if path.partition(":")[2] else "no factory after ':'"
    if reason is not None:
        raise ValueError(f"variant {path!r} must name an importable port: {reason}")
    return Variant(path, path, "compiled", f"a port given by import path, {path}", wide=TARGETED)


def benchmark(
    *,
    quick: bool,
    out: Path,
    variants: list[str] | None = None,
    batches: list[int] | None = None,
    steps: list[int] | None = None,
    settings: Settings | None = None,
    progress: bool = True,
    preamble: str = "",
    operations: list[str] | None = None,
    config: FRAEConfig | None = None,
) -> tuple[list[Record], str]:
    """Measure, then write the report (``preamble``, Markdown, goes before its summary);
    returns the records and the summary for the terminal.

    The grid: ``default_grid`` (the default model and the width axis), ``quick_grid`` with
    ``quick``; ``batches``, ``steps`` or ``operations`` replace it by every one of the
    operations (default all) at every (B, T) given (default ``BATCHES`` × ``STEPS``);
    ``config`` replaces the model (and the width axis) by the one given.
    """
    from bench import report

    label = model_label(config or FRAEConfig())
    models = {label: config or FRAEConfig()}
    if batches or steps or operations:
        ops = tuple(operations or OPERATIONS)
        grid = full_grid(batches or BATCHES, steps or STEPS, ops, label)
    elif quick:
        grid = quick_grid(label)
    elif config is None:
        grid, models = default_grid(), {label: FRAEConfig(), **wide_models()}
    else:
        grid = [(label, b, t, operations) for b, t, operations in SHAPES]
    chosen = settings or (QUICK_SETTINGS if quick else Settings())
    records = run(select(variants, quick), grid, chosen, out, progress, models)
    return records, report.write(records, out, preamble)


def positive_int(text: str) -> int:
    """An argument that must be a whole number ≥ 1 (argparse reports the ``ValueError``)."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


positive_int.__name__ = "whole number ≥ 1"  # argparse names the type in its message


def main(argv: list[str] | None = None, prog: str = "python -m bench") -> None:
    """The command line: measure, write the report, print the summary."""
    from frae.cli import version

    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--version", action="version", version=f"frae {version()}")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer repeats and a small grid (3 minutes here): every operation at B=1, "
        "T=100 and T=1000, predict at B=256, T=1000; leaves out the variants --list marks "
        "'not in --quick' (--batch/--steps/--operations replace the grid)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        metavar="NAME_OR_PATH",
        help="registered variants (--list) or ports of your own as package.module:Factory, "
        "found from the working folder; default: all but those --list marks 'only when named'",
    )
    parser.add_argument(
        "--config",
        type=str,
        metavar="JSON_OR_FILE",
        help="the model to measure instead of the default: a JSON object of FRAEConfig fields "
        f"({', '.join(FRAEConfig.__dataclass_fields__)}) or a file holding one",
    )
    parser.add_argument(
        "--batch", nargs="+", type=positive_int, metavar="B", help=f"default {BATCHES}"
    )
    parser.add_argument(
        "--steps", nargs="+", type=positive_int, metavar="T", help=f"default {STEPS}"
    )
    parser.add_argument(
        "--operations", nargs="+", choices=OPERATIONS, metavar="OP", help=f"default {OPERATIONS}"
    )
    parser.add_argument(
        "--repeats", type=positive_int, help="least number of timed calls (default 7; quick 5)"
    )
    parser.add_argument(
        "--train-steps",
        type=positive_int,
        default=5,
        help="K in fit(x, epochs=K)/K, at least 5 (default 5)",
    )
    parser.add_argument("--out", type=Path, help="report folder (default reports/<timestamp>)")
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar on standard error"
    )
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    args = parser.parse_args(argv)
    if args.list:
        for v in VARIANTS:
            reason = unavailable(v)
            print(
                f"{v.name:<28}{v.role:<12}{v.about}"
                + ("  [only when named]" if v.optional else "")
                + ("" if v.quick else "  [not in --quick]")
                + (f"  [width axis: {', '.join(v.wide)}]" if v.wide else "")
                + ("  [no state feedback]" if v.no_state_feedback else "")
                + (f"  [skipped: {reason}]" if reason else "")
            )
        return
    if args.train_steps < 5:
        parser.error(f"--train-steps must be at least 5, got {args.train_steps}")
    try:
        config = read_config(args.config) if args.config is not None else None
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    try:
        select(args.variants)
    except ValueError as error:
        parser.error(str(error))
    settings = QUICK_SETTINGS if args.quick else Settings()
    settings = replace(
        settings, train_steps=args.train_steps, repeats=args.repeats or settings.repeats
    )
    out = args.out or default_out()
    start = time.perf_counter()
    _, summary = benchmark(
        quick=args.quick,
        out=out,
        variants=args.variants,
        batches=args.batch,
        steps=args.steps,
        operations=args.operations,
        settings=settings,
        progress=not args.no_progress,
        config=config,
    )
    print(summary)
    print(f"\nreport: {out / 'report.md'} ({time.perf_counter() - start:.0f} s)")
