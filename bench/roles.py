"""What a variant is to the benchmark: its role, by which the report finds the floors, the
backends held to the targets and the baselines they are compared with."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    FLOOR = "floor"
    SIMD_FLOOR = "simd_floor"
    MATRIX_FLOOR = "matrix_floor"
    CHECK = "check"
    COMPILED = "compiled"
    BY_HAND = "by_hand"
    DEVICES = "devices"
    TEXTBOOK = "textbook"
    REFERENCE = "reference"
    BASELINE = "baseline"
    EXPORTED = "exported"


FLOORS = (Role.FLOOR, Role.SIMD_FLOOR, Role.MATRIX_FLOOR)
"""The roles whose figures bound the others: every figure is divided by the fastest floor
measured at its shape."""
ROUTES = (Role.COMPILED, Role.BY_HAND, Role.DEVICES, Role.TEXTBOOK, Role.BASELINE)
"""The framework routes: every role but the floors, the check and the reference (each runs
the model through a framework)."""
