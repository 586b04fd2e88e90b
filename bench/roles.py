"""What a variant is to the benchmark: its role, by which the report finds the floors, the
backends held to the targets and the baselines they are compared with."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """A variant's role, written into the results as its value."""

    FLOOR = "floor"
    """The native floor: scalar loops compiled to machine code."""
    SIMD_FLOOR = "simd_floor"
    """The loops vectorised over the batch with fast math (C)."""
    MATRIX_FLOOR = "matrix_floor"
    """Matrix products, for wide layers (C)."""
    CHECK = "check"
    """The C check of the floor."""
    COMPILED = "compiled"
    """The suite's backends, held to the targets."""
    BY_HAND = "by_hand"
    """A compiled backend with its backward pass written by hand, beside its autodiff twin."""
    DEVICES = "devices"
    """A compiled backend trained data-parallel on several devices."""
    TEXTBOOK = "textbook"
    """The textbook fix, which the targets' speed-ups are measured against."""
    REFERENCE = "reference"
    """The float64 NumPy reference, every backend's oracle: no framework, no compiler."""
    BASELINE = "baseline"
    """Any other way of running the model, measured for comparison."""
    EXPORTED = "exported"
    """An exported artifact, run by its deployment runtime alone (not a framework's Python
    API: not a framework route), held to the export targets."""


FLOORS = (Role.FLOOR, Role.SIMD_FLOOR, Role.MATRIX_FLOOR)
"""The roles whose figures bound the others: every figure is divided by the fastest floor
measured at its shape."""
ROUTES = (Role.COMPILED, Role.BY_HAND, Role.DEVICES, Role.TEXTBOOK, Role.BASELINE)
"""The framework routes: every role but the floors, the check and the reference (each runs
the model through a framework)."""
