"""Data-parallel training: a training step on one device and split over N."""

from __future__ import annotations

from bench.reporting.analysis import (
    Pivot,
)
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import (
    Rows,
    fmt,
    in_turn_cell,
    ratio_cell,
)

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


def sections(report: Report) -> list[Section]:
    """The devices axis, where a variant trained data-parallel."""
    pivot = report.pivot
    if not (rows := devices_rows(pivot)):
        return []
    cores = pivot.run.machine.cpu_count if pivot.run else "?"
    title = "Data-parallel training: the devices axis"
    caption = DEVICES_CAPTION.format(cores=cores)
    shown = "data-parallel training step, µs per step (on a CPU: the engine's cost):"
    return [Section(title, caption, DEVICES_HEADER, rows, brief=Brief(caption=shown))]
