"""What rounding costs: the run's model quantized (``FRAEConfig.code_step``, the contract's
"Quantized codes") measured beside it at the targets' shape and on the stream, each
variant's quantized time over its float time (``--code-step``)."""

from __future__ import annotations

from dataclasses import replace

from bench.grid import model_label
from bench.records import CODING, STREAM, Point, Record, RunRecord
from bench.reporting.analysis import TARGET_SHAPE, Pivot, label, models_of
from bench.reporting.render import Brief, Section
from bench.reporting.tables import Rows, fmt
from frae.config import FRAEConfig

HEADER = ["variant", "operation", "float µs/step", "quantized µs/step", "quantized / float"]
CAPTION = (
    "The run's model with its codes quantized (the code step in its label: rounded half to "
    "even inside the recurrence, the decoder and the feedback reading the rounded code, the "
    "training step's gradient straight through) beside the same model in float, in the same "
    "run: µs per step (per frame for the stream), median, and their ratio."
)


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


def is_quantized(records: list[Record], model: str) -> bool:
    """Whether ``model`` is a quantized model of the run (its config has a code step)."""
    run = next((r for r in records if isinstance(r, RunRecord)), None)
    return run is not None and (run.models.get(model) or {}).get("code_step") is not None


def rounding_rows(records: list[Record]) -> Rows:
    """Each measurement of a quantized model beside the run's first model's at the same key
    (none where the first is the only one, quantized or not)."""
    main = Pivot.of(records)
    quantized_models = [model for model in models_of(records)[1:] if is_quantized(records, model)]
    rows = []
    for model in quantized_models:
        quantized = Pivot.of(records, model)
        for key, result in quantized.results.items():
            if key.operation in CODING:  # the codec's section (``bench.reporting.sections.coding``)
                continue
            float_key = main.key(key.variant, key.operation, key.shape, key.side, key.chunk)
            base = main.figure(float_key)
            ratio = result.us_per_step / base if result.us_per_step and base else None
            shown = label(key.operation, key.side, key.chunk)
            named = key.variant if len(quantized_models) == 1 else f"{key.variant} ({model})"
            cells = [fmt(base), fmt(result.us_per_step), fmt(ratio) + "×"]
            rows.append([named, f"{shown} B={key.batch} T={key.steps}", *cells])
    return rows


def rounding_sections(records: list[Record]) -> list[Section]:
    """What rounding costs, where the run measured a quantized model, and which variants
    could not run it."""
    if not (rows := rounding_rows(records)):
        return []
    run = Pivot.of(records).run
    refused = [
        f"- `{name}`: {listing.no_code_step}"
        for name, listing in (run.variants.items() if run else ())
        if listing.no_code_step
    ]
    text = "Not quantized:\n\n" + "\n".join(refused) if refused else ""
    brief = Brief(caption="what rounding costs: µs per step, float and quantized")
    return [Section("What rounding costs", CAPTION, HEADER, rows, text, brief)]
