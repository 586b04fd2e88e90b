"""Each model measured beside the run's first (wide layers): its table against the floor
and the roofline, and the roofline's targets."""

from __future__ import annotations

from bench.grid import BATCHED_SHAPE, ROOFLINE_WIDTH, roofline_model
from bench.reporting.analysis import LABELS, Pivot, flags
from bench.reporting.render import Brief, Layout, Section
from bench.reporting.sections import Report
from bench.reporting.sections.summary import NAMED_OPERATIONS, targets_of
from bench.reporting.tables import (
    Rows,
    figures,
    fmt,
    ratio_cell,
)
from bench.reporting.targets import (
    OverFloor,
    OverRoofline,
    Target,
    limit,
)
from bench.reporting.verdicts import TARGET_HEADER, Outcome, judge, target_rows
from bench.roles import ROUTES
from bench.roofline import peak_of, roofline_ratio, roofline_us

ROOFLINE_MODEL = roofline_model()[0]


ROOFLINE_TARGETS = tuple(
    Target(
        f"{short}_roofline",
        f"the best framework route's {named} ≤ {{limit:g}}× the roofline per step (model "
        f"{ROOFLINE_MODEL}, {{at}})",
        3.0,
        operation,
        ROUTES,
        OverRoofline(ROOFLINE_MODEL),
        every=False,
        shape=BATCHED_SHAPE,
    )
    for short, operation, named in NAMED_OPERATIONS
)
"""The roofline's targets, judged on ``ROOFLINE_MODEL`` alone, where the floors bound nothing."""


ROOFLINE_TARGETS_ORIGIN = (
    "Where the roofline's targets come from: at wide layers and a large batch the "
    "frameworks' tuned matrix products beat every floor, so a ratio to the floor says "
    "nothing there. The **roofline** is the least time the step's arithmetic allows, "
    "max(FLOPs / peak, bytes / bandwidth), from the float32 matrix product's peak and "
    "the memory's bandwidth measured at the run's start on the variants' threads and "
    "the step's FLOPs and bytes counted from the layer table (`bench.roofline`). The "
    f"best framework route at width {ROOFLINE_WIDTH}, B = 256, is asked to predict "
    f"within {limit(ROOFLINE_TARGETS, 'predict_roofline')} and to train within "
    f"{limit(ROOFLINE_TARGETS, 'train_roofline')} of it: a time step of {ROOFLINE_WIDTH}-wide "
    "layers is products of 256 rows, smaller than those the peak is measured on, and the "
    "loop runs them one step after another. The limits are this benchmark's own."
)


ROOFLINE_HEADER = "×roof"


def model_table(pivot: Pivot, brief: bool = False) -> tuple[list[str], Rows]:
    """For a model other than the run's first: per variant, predict and a training step at
    every (B, T), each beside its ratio to the roofline where the run has peaks, under a row
    of the roofline's own; ``brief``: those ratios at the largest B alone."""
    shapes = pivot.shapes()
    columns = [(op, shape) for shape in shapes for op in ("predict", "train_step")]
    largest = max((shape.batch for shape in shapes), default=0)
    roofed = [
        peak_of(pivot.run) is not None and (not brief or shape.batch == largest)
        for _, shape in columns
    ]
    rows, doubted = [], flags(pivot)
    if any(roofed):
        limits = [fmt(roofline_us(pivot, pivot.key("", op, shape))) for op, shape in columns]
        rows.append(["roofline", *_beside(limits, ["—"] * len(columns), roofed)])
    for name in dict.fromkeys(k.variant for k in pivot.results):
        keys = [pivot.key(name, op, shape) for op, shape in columns]
        ratios = [ratio_cell(roofline_ratio(pivot, key)) for key in keys]
        rows.append([name, *_beside(figures(pivot, keys, doubted), ratios, roofed)])
    one_t = len({shape.steps for shape in shapes}) == 1  # then the caption says T
    named = [
        f"{LABELS[op]} B={shape.batch}" + ("" if one_t else f" T={shape.steps}")
        for op, shape in columns
    ]
    return ["variant", *_beside(named, [ROOFLINE_HEADER] * len(columns), roofed)], rows


def _beside(cells: list[str], ratios: list[str], shown: list[bool]) -> list[str]:
    """Each of ``cells`` followed by its ratio where ``shown``."""
    found = []
    for cell, ratio, show in zip(cells, ratios, shown, strict=True):
        found += [cell, ratio] if show else [cell]
    return found


def model_caption(pivot: Pivot) -> str:
    """What a model's table holds: its T, the roofline's peaks and the model's config."""
    fields = ", ".join(f"{k}={v}" for k, v in pivot.config.items())
    steps = sorted({shape.steps for shape in pivot.shapes()})
    at = f"at T={steps[0]}, " if len(steps) == 1 else ""
    peak = peak_of(pivot.run)
    roofline = (
        f" {ROOFLINE_HEADER}: over the roofline, max(FLOPs / {peak.gflops:.1f} GFLOP/s, "
        f"bytes / {peak.gbps:.1f} GB/s) per step ({peak.kernel});"
        if peak
        else ""
    )
    return f"µs per time step {at}median (× the floor's same operation);{roofline} {fields}"


def measured_targets(pivot: Pivot) -> list[Outcome]:
    """For a model beside the run's first: the targets over the floor and the roofline's that
    its measurements judge (not batching: at width 256 the floor itself gains 1.5×, not 8×;
    nor a framework's own limit, set for the default model)."""
    judged = [
        judge(t, pivot)
        for t in targets_of(pivot)
        if isinstance(t.over, OverFloor) and t.variant is None
    ]
    return [outcome for outcome in judged + roofline_targets(pivot) if outcome.judged]


def roofline_targets(pivot: Pivot) -> list[Outcome]:
    """The roofline's targets judged, where the pivot holds the model they name."""
    return [
        judge(target, pivot)
        for target in ROOFLINE_TARGETS
        if not isinstance(target.over, OverRoofline) or target.over.model in (None, pivot.model)
    ]


def sections(report: Report) -> list[Section]:
    """Each model measured beside the run's first, quantized ones apart (their section is
    ``rounding``): its config, its table and its targets."""
    return [s for model in report.others() for s in _model(Pivot.of(report.records, model))]


def _model(pivot: Pivot) -> list[Section]:
    header, rows = model_table(pivot)
    shown, shown_rows = model_table(pivot, brief=True)
    caption = model_caption(pivot)
    judged = measured_targets(pivot)
    origin = ROOFLINE_TARGETS_ORIGIN if any(t in judged for t in roofline_targets(pivot)) else ""
    brief = Brief(
        title=f"model {pivot.model}:", caption=caption, header=shown, rows=shown_rows, wrapping=(0,)
    )
    return [
        Section(f"Model {pivot.model}", caption, header, rows, brief=brief),
        Section("", origin, TARGET_HEADER, target_rows(judged), brief=Brief(layout=Layout.OUTLINE)),
    ]


def outcomes(report: Report) -> list[Outcome]:
    """The roofline's targets where the run's first model is the roofline's, and each other
    model's targets (``measured_targets``)."""
    others = [Pivot.of(report.records, model) for model in report.others()]
    return roofline_targets(report.pivot) + [t for p in others for t in measured_targets(p)]
