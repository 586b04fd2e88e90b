"""What rounding costs: the run's model quantized (``FRAEConfig.code_step``, the contract's
"Quantized codes", ``--code-step``: ``bench.grid.with_quantized``) measured beside it at the
targets' shape and on the stream, each variant's quantized time over its float time."""

from __future__ import annotations

from bench.records import CODING
from bench.reporting.analysis import Pivot, label
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import Rows, fmt

HEADER = ["variant", "operation", "float µs/step", "quantized µs/step", "quantized / float"]
CAPTION = (
    "The run's model with its codes quantized (the code step in its label: rounded half to "
    "even inside the recurrence, the decoder and the feedback reading the rounded code, the "
    "training step's gradient straight through) beside the same model in float, in the same "
    "run: µs per step (per frame for the stream), median, and their ratio."
)


def rounding_rows(report: Report) -> Rows:
    """Each measurement of a quantized model beside the run's first model's at the same key
    (none where the first is the only one, quantized or not); a model trained for its rate
    is the rate's section's (``bench.reporting.sections.rate``)."""
    main = report.pivot
    quantized_models = [
        model for model in report.quantized() if model != main.model and not report.is_rated(model)
    ]
    rows = []
    for model in quantized_models:
        quantized = Pivot.of(report.records, model)
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


def sections(report: Report) -> list[Section]:
    """What rounding costs, where the run measured a quantized model, and which variants
    could not run it."""
    if not (rows := rounding_rows(report)):
        return []
    variants = report.run.variants.items()
    refused = [f"- `{name}`: {v.no_code_step}" for name, v in variants if v.no_code_step]
    text = "Not quantized:\n\n" + "\n".join(refused) if refused else ""
    brief = Brief(caption="what rounding costs: µs per step, float and quantized")
    return [Section("What rounding costs", CAPTION, HEADER, rows, text, brief)]
