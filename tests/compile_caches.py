"""The scan's compiled graphs in Inductor's caches on disk, for the processes of a test run
(the root ``conftest.py`` says why)."""

from __future__ import annotations

import sys


def cache_compiled_scans() -> None:
    """Inductor's FX graph cache and AOTAutograd's cache take graphs that hold the scan."""
    import torch
    from torch._higher_order_ops.scan import scan_op

    marked = torch._inductor.config.unsafe_marked_cacheable_functions
    marked[f"{scan_op.__module__}.{scan_op.__name__}"] = torch.__version__


def cache_compiled_scans_where_torch_runs() -> None:
    """``cache_compiled_scans`` in a process the kit starts, if torch runs there: another
    framework's process is left without torch (importing it after TensorFlow would change
    what the process is, and costs its start)."""
    if "torch" in sys.modules:
        cache_compiled_scans()
