"""``bench.reporting.sections.answer``: the report leads with parity, the fastest route at each
operation and shape, and the targets counted; the terminal says the same first."""

from __future__ import annotations

from bench.records import ParityRecord, Record
from bench.reporting import sections as subjects
from bench.reporting.sections import Report, answer
from tests.bench_cases import markdown, measured, on_models, terminal

ROUTE, FLOOR = "fast_route", "floor"


def timed() -> list[Record]:
    """A floor and two compiled backends at B=1, T=1000, the second slower."""
    return [
        on_models(),
        measured(FLOOR, "floor", "predict", 1, 1000, 2.0),
        measured(ROUTE, "compiled", "predict", 1, 1000, 3.0),
        measured("slow_route", "compiled", "predict", 1, 1000, 9.0),
    ]


def passed(variant: str, used: float = 0.06) -> ParityRecord:
    return ParityRecord(variant, passed=True, worst="adam", used=used, held_to="float32")


def test_the_report_leads_with_the_answer_on_the_page_and_on_the_terminal() -> None:
    records = timed()
    page, shown = markdown(records), terminal(records)
    assert page.index("## The answer") < page.index("## Machine and versions")
    assert shown.startswith("THE ANSWER"), shown[:200]
    assert "not a failed run" in page and "exits with status 1 only where a backend fails" in page


def test_without_parity_records_the_answer_says_parity_was_not_checked() -> None:
    assert answer.parity_line(Report(timed())).startswith("not checked in this run")


def test_every_backend_passing_is_said_with_its_worst_share_of_its_tolerance() -> None:
    records = [*timed(), passed(ROUTE), passed("slow_route", used=0.5)]
    line = answer.parity_line(Report(records))
    assert line.startswith("every backend compared passed (2)")
    assert f"{ROUTE} 6% adam" in line and "slow_route 50% adam" in line
    assert "without a parity check" not in line


def test_a_failed_backend_and_a_timed_one_left_unchecked_are_named() -> None:
    failed = ParityRecord("slow_route", passed=False, worst="grads", used=3.0)
    line = answer.parity_line(
        Report(
            [
                *timed()[:-1],
                measured("other", "compiled", "predict", 1, 1000, 4.0),
                passed(ROUTE),
                failed,
            ]
        )
    )
    assert line.startswith("**1 of 2 backends failed**: slow_route")
    assert "slow_route 300% grads" in line
    assert "Timed without a parity check: other." in line


def test_a_backend_that_cannot_run_here_is_not_counted_as_failed() -> None:
    missing = ParityRecord("keras_rnn[torch]", passed=None, reason="torch is not installed")
    line = answer.parity_line(Report([*timed(), passed(ROUTE), passed("slow_route"), missing]))
    assert line.startswith("every backend compared passed (2)")


def test_the_fastest_route_is_named_with_its_ratio_to_the_floor_never_the_floor() -> None:
    (row,) = answer.fastest_rows(Report(timed()).pivot)
    assert row == ["predict", "1", "1000", ROUTE, "3", "1.5×"]


def test_the_targets_are_counted_once_each_met_missed_or_not_measured() -> None:
    report = Report(timed())
    judged = subjects.outcomes(report)
    measured_ = [t for t in judged if t.judged]
    met = sum(t.met is True for t in measured_)
    missed = sum(t.met is False for t in measured_)
    line = answer.targets_line(report)
    assert line.startswith(f"{met} of {len(measured_)} measured met, {missed} missed")
    assert f"{len(judged) - len(measured_)} not measured" in line
    statements = [t.statement for t in judged]
    assert len(statements) == len(set(statements)), "a target counted twice"
