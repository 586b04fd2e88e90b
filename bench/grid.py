"""What a run measures: the models by label, the shapes (B, T) and the operations at each,
and the part of them each variant runs."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bench.measuring.job import Settings
from bench.records import CODEC, DEFAULT_MODEL, OPERATIONS, STREAM, Point, Shape
from frae.config import FRAEConfig

if TYPE_CHECKING:
    from bench.variant import Variant


STEPS = (100, 1000, 10000)
BATCHES = (1, 32, 256)
STREAM_FRAMES = 1000
"""The frames of the streamed sequence, at B = 1."""
STREAM_CHUNKS = (1, 10)
"""The frames per call of the stream: one, as a codec runs online, and ten, which splits a
call's cost into a part per call and a part per frame."""
STREAM_POINT = Point(DEFAULT_MODEL, 1, STREAM_FRAMES, (STREAM,))
"""The stream: one sequence at B = 1, a point (and a fresh model) of its own."""
SHAPES = (
    Point(DEFAULT_MODEL, 1, 100, OPERATIONS),
    Point(DEFAULT_MODEL, 1, 1000, OPERATIONS),
    Point(DEFAULT_MODEL, 1, 10000, OPERATIONS),
    Point(DEFAULT_MODEL, 32, 1000, ("predict",)),
    Point(DEFAULT_MODEL, 256, 1000, OPERATIONS),
    Point(DEFAULT_MODEL, 256, 10000, ("train_step",)),
    STREAM_POINT,
)
"""The full grid's points on the default model: three T at B = 1 (the per-call split needs
three), predict at three B (throughput against B), the training step at T = 10000 and
B = 256 (training linear in T), and the stream."""
WIDTHS = (64, 256)
RATE_OPERATIONS = ("loss_and_grads", "train_step")
"""The operations a rate term changes (the contract's "Rate: training the codec for its
bits"): the loss and its gradient, and the training step that runs them."""
TARGET_SHAPE = Shape(1, 1000)
"""Where the per-step targets are judged."""
BATCHED_SHAPE = Shape(256, 1000)
"""Where the batched targets are judged."""
WIDE_SHAPES = (TARGET_SHAPE, BATCHED_SHAPE)
"""The width axis's shapes, the targets' two (``wide_models``)."""
QUICK_SHAPES = (
    Point(DEFAULT_MODEL, 1, 100, ("predict",)),
    Point(DEFAULT_MODEL, 1, 1000, OPERATIONS),
    Point(DEFAULT_MODEL, 256, 1000, ("predict",)),
    STREAM_POINT,
)
"""``--quick``: every operation at the targets' shape; predict at a shorter T and at a large
batch (the batching target); the stream. A variant's compiles take most of its minute, so
the gradient and the training step are compiled at the targets' shape alone."""
ROOFLINE_WIDTH = 256
"""The width-axis model whose steps the roofline's targets hold (``bench.reporting.targets``), which
``--quick`` measures too."""


def full_grid(
    batches: Iterable[int] = BATCHES,
    steps: Iterable[int] = STEPS,
    operations: tuple[str, ...] = OPERATIONS,
    model: str = DEFAULT_MODEL,
) -> list[Point]:
    """Every operation at every (B, T), on ``model``."""
    return [Point(model, b, t, operations) for t in steps for b in batches]


def wide_models() -> dict[str, FRAEConfig]:
    """The width axis's models by label: one hidden layer of each of ``WIDTHS`` per side and a
    latent of 16 (wider than the input: they measure what width costs, not compression)."""
    configs = [FRAEConfig(encoder_units=(w,), latent_dim=16, decoder_units=(w,)) for w in WIDTHS]
    return {model_label(config): config for config in configs}


def default_grid() -> list[Point]:
    """The full grid: ``SHAPES``, and every operation at ``WIDE_SHAPES`` on ``wide_models``."""
    wide = [Point(label, *shape, OPERATIONS) for label in wide_models() for shape in WIDE_SHAPES]
    return [*SHAPES, *wide]


def roofline_model() -> tuple[str, FRAEConfig]:
    """The width-axis model of ``ROOFLINE_WIDTH``, its label and config."""
    return next(
        (label, config)
        for label, config in wide_models().items()
        if config.encoder_units == (ROOFLINE_WIDTH,)
    )


def quick_grid(model: str = DEFAULT_MODEL) -> list[Point]:
    """``QUICK_SHAPES`` on ``model``; on the default model, the roofline's model too, predict
    and the training step at B = 256, T = 1000."""
    grid = on_model(QUICK_SHAPES, model)
    if model == DEFAULT_MODEL:
        grid.append(Point(roofline_model()[0], 256, 1000, ("predict", "train_step")))
    return grid


def on_model(points: Iterable[Point], model: str) -> list[Point]:
    """``points`` on the model labelled ``model``."""
    return [Point(model, *point[1:]) for point in points]


def choose_grid(
    quick: bool,
    config: FRAEConfig | None = None,
    batches: list[int] | None = None,
    steps: list[int] | None = None,
    operations: list[str] | None = None,
) -> tuple[list[Point], dict[str, FRAEConfig]]:
    """The grid of a run and its models by label: ``default_grid``, or ``quick_grid``, or the
    ``operations`` at every ``batches`` × ``steps`` where any is given; ``config`` replaces
    the model (and the width axis)."""
    label = model_label(config or FRAEConfig())
    models = {label: config or FRAEConfig()}
    if batches or steps or operations:
        ops = tuple(operations or OPERATIONS)
        return full_grid(batches or BATCHES, steps or STEPS, ops, label), models
    if quick:
        return quick_grid(label), models | (dict([roofline_model()]) if config is None else {})
    if config is None:
        return default_grid(), {label: FRAEConfig(), **wide_models()}
    return on_model(SHAPES, label), models


def with_codec(grid: list[Point], models: dict[str, FRAEConfig]) -> list[Point]:
    """``grid`` and, for each point streaming a quantized model, the codec at the same B and T
    (``CODEC``): a point of its own, whose fresh model holds
    ``bench.measuring.operations.codec.codec_weights``."""
    coded = [
        Point(point.model, point.batch, point.steps, (CODEC,))
        for point in grid
        if STREAM in point.operations and models[point.model].code_step is not None
    ]
    return grid + coded


def model_label(config: FRAEConfig) -> str:
    """``"default"``, or the widths from input to output and the activations where not swish:
    ``"32-64-16-64-32"``, ``"3-5-2-4-6-3 tanh/sigmoid"``, ``"2-4-3-1-gru8-3-2"``; a quantized
    model's ends in its code step, ``"default Δ=2^-6"``, and one trained for its rate in its
    rate weight, ``"default Δ=2^-6 λ=0.01"``."""
    if config.rate_weight is not None:  # before Δ: a rate weight needs its code step
        return f"{model_label(replace(config, rate_weight=None))} λ={config.rate_weight:g}"
    if config.code_step is not None:
        exponent = math.frexp(config.code_step)[1] - 1
        return f"{model_label(replace(config, code_step=None))} Δ=2^{exponent}"
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
    """The part of ``grid`` a variant runs: the operations it offers, capped if it is slow, on
    the width axis's models (``wide_models``) only its ``Variant.wide`` ones, where
    ``Settings.wide_roles`` has its role."""
    grid = list(grid)
    points, main, width_axis = [], grid[0].model if grid else DEFAULT_MODEL, set(wide_models())
    for point in grid:
        wide = settings.wide_roles is None or variant.role in settings.wide_roles
        on_axis = point.model != main and point.model in width_axis
        wanted = variant.wide if on_axis and wide else () if on_axis else variant.operations
        if variant.slow and settings.slow_operations is not None:
            wanted = tuple(op for op in wanted if op in settings.slow_operations)
        offered = tuple(op for op in point.operations if op in wanted)
        capped = variant.slow and (
            point.steps > settings.slow_max_steps
            or (settings.slow_max_batch is not None and point.batch > settings.slow_max_batch)
        )
        only = variant.only_shapes
        capped = capped or (only is not None and (point.batch, point.steps) not in only)
        if offered and not capped:
            points.append(Point(point.model, point.batch, point.steps, offered))
    return points


def model_points(
    variant: Variant, points: list[Point], models: dict[str, FRAEConfig]
) -> tuple[list[Point], str | None]:
    """``points`` without those of the models ``variant`` cannot run (a state-feedback model,
    a quantized one, one trained for its rate), and why it is left out where that leaves it none."""

    def refusal(config: FRAEConfig) -> str | None:
        if config.gru is not None and variant.no_state_feedback is not None:
            return f"cannot run the state-feedback model: {variant.no_state_feedback}"
        if config.code_step is not None and variant.no_code_step is not None:
            return f"cannot run the quantized model: {variant.no_code_step}"
        if config.rate_weight is not None and variant.no_rate_weight is not None:
            return f"cannot train the model for its rate: {variant.no_rate_weight}"
        return None

    kept = [point for point in points if refusal(models[point.model]) is None]
    reasons = [reason for config in models.values() if (reason := refusal(config))]
    return kept, reasons[0] if reasons and not kept else None


def with_quantized(
    grid: list[Point], models: dict[str, FRAEConfig], code_step: float
) -> tuple[list[Point], dict[str, FRAEConfig]]:
    """``grid`` and ``models`` with the first model quantized with ``code_step`` beside it,
    at the points of the first model at ``TARGET_SHAPE`` and on the stream; ``ValueError``
    where the grid has neither."""
    main = grid[0].model
    config = replace(models[main], code_step=code_step)
    quantized = model_label(config)
    points = [
        Point(quantized, *point[1:])
        for point in grid
        if point.model == main
        and ((point.batch, point.steps) == TARGET_SHAPE or STREAM in point.operations)
    ]
    if not points:
        raise ValueError(
            f"--code-step measures the quantized model at B={TARGET_SHAPE.batch}, "
            f"T={TARGET_SHAPE.steps} and on the stream, and the grid has neither"
        )
    return grid + points, models | {quantized: config}


def with_rated(
    grid: list[Point], models: dict[str, FRAEConfig], rate_weight: float
) -> tuple[list[Point], dict[str, FRAEConfig]]:
    """``grid`` and ``models`` with the first quantized model without a rate term trained
    with ``rate_weight`` beside it (``FRAEConfig.rate_weight``), at its points at
    ``TARGET_SHAPE`` and their operations of ``RATE_OPERATIONS``: what the rate term costs a
    training step; ``ValueError`` where no quantized model trains there."""
    at_target = [
        point
        for point in grid
        if (point.batch, point.steps) == TARGET_SHAPE
        and models[point.model].code_step is not None
        and models[point.model].rate_weight is None
        and set(point.operations) & set(RATE_OPERATIONS)
    ]
    if not at_target:
        raise ValueError(
            f"--rate-weight needs a quantized model (--code-step, or a --config with a "
            f"code_step) training at B={TARGET_SHAPE.batch}, T={TARGET_SHAPE.steps}, where it "
            f"measures {' and '.join(RATE_OPERATIONS)} with the rate term beside the same "
            "model without it; the grid has none"
        )
    quantized = at_target[0].model
    config = replace(models[quantized], rate_weight=rate_weight)
    rated = model_label(config)
    points = [
        Point(
            rated,
            point.batch,
            point.steps,
            tuple(op for op in point.operations if op in RATE_OPERATIONS),
        )
        for point in at_target
        if point.model == quantized
    ]
    return grid + points, models | {rated: config}
