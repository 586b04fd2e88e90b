"""How ``make test`` spreads the tests over its pytest-xdist workers (``--dist loadgroup
--no-loadscope-reorder``): the tests that run the kit or the main job again in a subprocess
first, then each backend's own tests (``backend_specific``: one worker's group, minutes
long), then the rest in collection order, each ``xdist_group`` on one worker: the longest
units of work start first, so that none is left to run alone at the end. Last come the kit's
tests that start framework processes of their own (``processes``: the data-parallel
workers), which then find the configs they train already compiled in the run's caches on
disk (``conftest.py``). A pytest plugin,
loaded by the root ``conftest.py``."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest units of work first (the module's docstring); under ``pytest -n``
    (``make test``), each ``xdist_group`` kept on one worker."""
    items.sort(
        key=lambda item: (
            marked(item, "processes"),
            not marked(item, "nested"),
            not marked(item, "backend_specific"),
        )
    )
    if getattr(config.option, "loadgroup", False):
        for item in items:
            name_group(item)


def marked(item: pytest.Item, name: str) -> bool:
    return item.get_closest_marker(name) is not None


def name_group(item: pytest.Item) -> None:
    """Suffix ``item``'s id with its ``xdist_group`` names, as pytest-xdist's ``loadgroup``
    does to tell its scheduler the group: pytest-xdist 3.8 writes the suffix into an
    attribute pytest 9.2 no longer reads (pytest-xdist#1386; the fix, #1388, sets what this
    does), so every grouped test ran wherever there was room."""
    names = sorted(
        {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
    )
    suffix = f"@{'_'.join(names)}"
    if names and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
        item._id = type(item._id).parse(item.nodeid + suffix)
