"""The report's tables of variants compared directly, each figure beside its mate's and
their ratio, from the calls they took in turn where they did (``bench.measuring.turns``): a route
and
its framework's defaults, a backward by autodiff and by hand, one device and N.
"""

from __future__ import annotations

from bench.records import Shape
from bench.reporting.analysis import Pivot, label
from bench.reporting.tables import Rows, fmt, in_turn_cell, ratio_cell

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


ROUTES_HEADER = ["route", "defaults", "operation", "B", "T", "route µs", "defaults µs"]
ROUTES_HEADER += ["defaults / route"]
ROUTES_CAPTION = (
    "µs per time step, medians: each route (`frae.routes`) beside its framework's defaults "
    "or Keras' own calls, the two measured together; defaults / route: the median of each "
    "call's ratio to the route's call taken in turn with it, with its spread (above 1: the "
    "route's settings buy that much)."
)


def routes_rows(pivot: Pivot) -> Rows:
    """Per route and its defaults (``Pivot.defaults``): each measurement both made, the
    two figures, and the defaults' calls over the route's in turn."""
    rows = []
    for route, defaults in pivot.defaults():
        for key in pivot.results:
            if key.variant != defaults or pivot.figure(key) is None:
                continue
            own = pivot.figure(key.of(route))
            in_turn = pivot.in_turn(key, route)
            cells = [fmt(own), fmt(pivot.figure(key)), in_turn_cell(in_turn)]
            where = [label(key.operation, key.side, key.chunk), str(key.batch), str(key.steps)]
            rows.append([route, defaults, *where, *cells])
    return rows


DEVICES_HEADER = ["variant", "devices", "B", "T", "1 device", "N devices", "N / 1"]
DEVICES_CAPTION = (
    "A training step's µs per time step, medians: on one device (the variant's own row) and "
    "with each mini-batch split over N devices of one process (`create(..., devices=N)`, the "
    "framework's own engine averaging the gradients). This machine has {cores} cores and no "
    "accelerator: its N devices are virtual CPU devices sharing those cores, so the ratio "
    "measures what the engine costs (the split, the all-reduce of the gradients, a program "
    "per device), not a speed-up. On a machine with N accelerators the same command runs "
    "them and measures the speed-up. N / 1: where the two took their calls in turn, the "
    "median of each call's ratio, with its spread."
)


def devices_rows(pivot: Pivot) -> Rows:
    """Per variant on the devices axis (``Pivot.on_devices``): its training step on one
    device and on N, at the shapes it ran, and their ratio."""
    rows = []
    for one_device, name, count in pivot.on_devices():
        for key in pivot.results:
            if key.variant != name or key.operation != "train_step":
                continue
            one, many = pivot.figure(key.of(one_device)), pivot.figure(key)
            in_turn = pivot.in_turn(key, one_device)
            ratio = ratio_cell(many / one if many is not None and one else None)
            cells = [fmt(one), fmt(many), in_turn_cell(in_turn) if in_turn else ratio]
            rows.append([one_device, str(count), str(key.batch), str(key.steps), *cells])
    return rows
