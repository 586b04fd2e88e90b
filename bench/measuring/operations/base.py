"""What an operation's module offers the worker (``bench.measuring.point``): its measurements
on a point (``Operation.units``) and, given the point's model and input, each one's runs
ready to sample, or its records saying why not (``Operation.prepare``)."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import numpy.typing as npt

from bench.grid import STREAM_CHUNKS
from bench.measuring.job import Job
from bench.measuring.point import OnPoint, Row, Unit
from bench.measuring.timing import Made
from bench.records import SIDES, Point
from frae.config import FRAEConfig


class Operation(ABC):
    """One kind of measurement on a point's model and input: the calls on them, the stream,
    the codec's runs. ``sided``: measured at each of the stream's sides and chunk lengths."""

    sided = False

    def units(self, point: Point, name: str) -> list[Unit]:
        """The measurements of ``name`` at ``point``: one, or one at each side, then chunk
        length, where ``sided``."""
        if not self.sided:
            return [Unit(point, name)]
        return [Unit(point, name, side, chunk) for side in SIDES for chunk in STREAM_CHUNKS]

    def weights(self, config: FRAEConfig) -> dict[str, npt.NDArray[np.float32]] | None:
        """The weights the point's fresh model holds where it measures this (``None``: those
        ``frae.create`` draws)."""
        return None

    def names(self, name: str) -> tuple[str, ...]:
        """The operations its records name (``ResultRecord.operation``): ``name``, or each of
        its runs'."""
        return (name,)

    @abstractmethod
    def prepare(self, at: OnPoint, unit: Unit, job: Job, row: Row) -> Made:
        """``unit`` on the model and input ``at`` (a model that was made): its runs ready to
        sample (``Prepared``), or its records, made by ``row`` given the operation they
        name, saying why not."""
