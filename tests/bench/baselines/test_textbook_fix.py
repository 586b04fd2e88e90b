"""``bench.baselines.textbook_fix``: ``tf_while``'s functions in graph mode, without XLA."""

from __future__ import annotations

import pytest

import frae
from parity_tests.tolerances import assert_close
from tests import tf_while_checks as checks

pytestmark = pytest.mark.backend_specific("tf_while")
backend = pytest.importorskip("impls.tf_while.backend")
TEXTBOOK = "bench.baselines.textbook_fix:TextbookFixBackend"


def test_textbook_graph_mode_equals_compiled() -> None:
    x = frae.data.multi_sine(batch=3, steps=20, seed=2)
    compiled = frae.create("tf_while", seed=3)
    textbook = frae.create(TEXTBOOK, seed=3)
    assert textbook.name == "textbook_fix"
    assert_close("outputs", textbook.predict(x), compiled.predict(x))
    before = checks.tracing_counts(backend.compiled_functions, False)["predict"]
    textbook.predict(x)
    assert checks.tracing_counts(backend.compiled_functions, False)["predict"] == before
