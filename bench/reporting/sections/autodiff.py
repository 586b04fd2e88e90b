"""The price of autodiff: a backend beside its twin with the backward written by hand."""

from __future__ import annotations

from bench.records import (
    Shape,
)
from bench.reporting.analysis import (
    Pivot,
)
from bench.reporting.render import Section
from bench.reporting.sections import Report
from bench.reporting.tables import (
    Rows,
    fmt,
    in_turn_cell,
    ratio_cell,
)

AUTODIFF_STEPS = 1000
"""The T at which the price of autodiff is read."""


AUTODIFF_HEADER = ["backend", "B", "gradient: autodiff", "by hand", "price"]


AUTODIFF_HEADER += ["training step: autodiff", "by hand", "price"]


AUTODIFF_CAPTION = (
    f"µs per time step at T={AUTODIFF_STEPS}, medians. *By hand*: the same backend with its "
    "backward pass written in the framework (`jax.custom_vjp`, `tf.custom_gradient`, "
    "`torch.autograd.Function`): one reverse loop carrying only the feedback's gradient, "
    "each weight's gradient one product over all steps after it. *Price*: autodiff over by "
    "hand, what the framework's own differentiation costs (below 1: it is the faster); where "
    "the two took their calls in turn, the median of each call's ratio, with its spread."
)


def autodiff_rows(pivot: Pivot) -> Rows:
    """Per framework and B at ``AUTODIFF_STEPS``: its gradient and training step beside its
    hand-written twin's (``Pivot.twins``), and their ratio."""
    rows = []
    for autodiff, hand in pivot.twins():
        steps = AUTODIFF_STEPS
        batches = {k.batch for k in pivot.results if k.variant == hand and k.steps == steps}
        for batch in sorted(batches):
            cells = []
            for operation in ("loss_and_grads", "train_step"):
                key = pivot.key(autodiff, operation, Shape(batch, steps))
                own, by_hand = pivot.figure(key), pivot.figure(key.of(hand))
                price = own / by_hand if own is not None and by_hand else None
                in_turn = pivot.in_turn(key, hand)
                cells += [
                    fmt(own),
                    fmt(by_hand),
                    in_turn_cell(in_turn) if in_turn else ratio_cell(price),
                ]
            rows.append([autodiff, str(batch), *cells])
    return rows


def sections(report: Report) -> list[Section]:
    """The price of autodiff, where a backend ran beside its hand-written twin."""
    pivot = report.pivot
    if not (rows := autodiff_rows(pivot)):
        return []
    title = f"The price of autodiff (T={AUTODIFF_STEPS})"
    return [Section(title, AUTODIFF_CAPTION, AUTODIFF_HEADER, rows)]
