"""``bench.reporting.sections``: one module a subject, each found through its registry line."""

from __future__ import annotations

import pytest

from bench.reporting import sections as subjects
from bench.reporting.sections import Report
from tests.bench_cases import measured, on_models


def test_every_registered_subject_draws_its_sections_from_the_records() -> None:
    report = Report([on_models(), measured("floor", "floor", "predict", 1, 1000, 2.0)])
    for module in subjects.modules():
        drawn = module.sections(report)
        assert isinstance(drawn, list), module.__name__


def test_a_subject_added_by_its_registry_line_is_drawn_in_its_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    from bench.reporting.render import Section

    module = types.ModuleType(f"{subjects.__name__}.made_up")
    module.sections = lambda report: [Section("Made up", text=report.run.command)]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(subjects, "SECTIONS", (*subjects.SECTIONS[:2], "made_up"))
    report = Report([on_models()])
    titles = [section.title for section in subjects.sections(report)]
    assert titles[-1] == "Made up"


def test_records_without_a_run_are_refused() -> None:
    with pytest.raises(ValueError, match="run's record"):
        Report([measured("floor", "floor", "predict", 1, 1000, 2.0)])
