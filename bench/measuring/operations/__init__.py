"""What a worker measures, an operation a module: the calls on the model and input
(``calls``), the stream at each side and chunk length (``stream``), the codec's runs
(``codec``). Each module's class is an ``Operation`` (``base``); ``MEASURED`` maps each
operation a point names (``bench.records``) to it. Adding an operation is its module, its
test and one line here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from bench.records import CODEC, OPERATIONS, STREAM

if TYPE_CHECKING:
    from bench.measuring.operations.base import Operation

MEASURED = {
    **dict.fromkeys(OPERATIONS, "bench.measuring.operations.calls:ModelCalls"),
    STREAM: "bench.measuring.operations.stream:Streaming",
    CODEC: "bench.measuring.operations.codec:Coding",
}
"""Each operation's ``"module:Class"``, imported when a point measures it."""


def operation(name: str) -> Operation:
    """The ``Operation`` that measures ``name`` (``MEASURED``)."""
    module, _, kind = MEASURED[name].partition(":")
    made: Operation = getattr(importlib.import_module(module), kind)()
    return made
