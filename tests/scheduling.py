"""How ``make test`` spreads the tests over its pytest-xdist workers (``--dist loadgroup
--no-loadscope-reorder``): each backend's own tests first (``backend_specific``: one worker's
group, minutes long), then the rest in collection order, each ``xdist_group`` on one worker;
then the tests that run the kit or the main job again in a subprocess (``nested``), which find
the programs the run compiled so far in its caches on disk (``conftest.py``) instead of
compiling them cold; last the kit's tests that start framework processes of their own
(``processes``: the data-parallel workers), for the same reason. A pytest plugin, loaded by
the root ``conftest.py``."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order of the module's docstring; under ``pytest -n`` (``make test``), each
    ``xdist_group`` kept on one worker."""
    items.sort(
        key=lambda item: (
            marked(item, "processes"),
            marked(item, "nested"),
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
