"""A pytest plugin for one run of the kit over many backends, each through its own tests.

``pytest parity_tests -p tests.kit_plan --backend A --backend B ...`` with ``FRAE_KIT_PLAN``
naming a JSON file ``{backend: [test name, ...] or null}`` runs, of the kit's tests of
each backend, those whose function or whole id is named (``null``: all of them), and of the
tests that check no backend, none unless a backend runs all of them. So the mutants and their
control share one process, and its start-up, where each would otherwise start its own. A
stream moves between each backend and itself, the reference or an ``--other-backend``, never
another backend of the plan.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

PLAN = "FRAE_KIT_PLAN"


def backend_of(test_id: str, backends: list[str]) -> str | None:
    """The backend among ``backends`` that ``test_id`` (``name[params]``) checks: its first
    parameter, which the kit's ``backend_spec`` is."""
    params = test_id.partition("[")[2].removesuffix("]")
    matches = [b for b in backends if params == b or params.startswith(f"{b}-")]
    return max(matches, key=len, default=None)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    plan: dict[str, list[str] | None] = json.loads(Path(os.environ[PLAN]).read_text())
    backends = list(plan)
    others = ["reference", *(config.getoption("other_backend") or ())]
    everything = any(names is None for names in plan.values())

    def wanted(item: pytest.Item) -> bool:
        backend = backend_of(item.name, backends)
        if backend is None:
            return everything
        callspec = getattr(item, "callspec", None)
        partner = callspec.params.get("partner_spec") if callspec else None
        if partner is not None and partner not in (backend, *others):
            return False  # a stream moves between a backend and itself or the others, alone
        names = plan[backend]
        return names is None or item.name in names or item.name.partition("[")[0] in names

    deselected = [item for item in items if not wanted(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if wanted(item)]
