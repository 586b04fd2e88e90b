"""The main job runs and reports every registered backend, compared or missing; each row is
held to the suite's tolerances (``frae.tolerances``) and says whether it is within them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
import frae.compare
from bench.records import ParityRecord
from frae.cli import main, run_compare
from frae.compare import (
    KERAS_BACKENDS,
    QUANTITIES,
    Comparison,
    Planned,
    compare_backend,
    format_table,
    in_own_process,
    parity_markdown,
    plan,
    row_of,
)
from frae.data import multi_sine, original_problem
from frae.tolerances import TOLERANCES, Tolerance


def test_multi_sine_is_bounded_smooth_and_seeded() -> None:
    x = multi_sine(batch=3, steps=50, features=4, seed=1)
    assert x.shape == (3, 50, 4)
    assert x.dtype == np.float32
    assert x.min() >= 0.0
    assert x.max() <= 1.0
    assert np.abs(np.diff(x, axis=1)).max() < 0.35  # periods of 10 steps and more
    np.testing.assert_array_equal(x, multi_sine(batch=3, steps=50, features=4, seed=1))
    assert not np.array_equal(x, multi_sine(batch=3, steps=50, features=4, seed=2))
    assert original_problem().shape == (1, 10, 2)


def _comparison(backend: str, used: float) -> Comparison:
    """A made-up row whose adam column uses ``used`` of its tolerance, the others 1%."""
    return Comparison(
        backend=backend,
        errors=dict.fromkeys(QUANTITIES, 3e-7),
        used={quantity: used if quantity == "adam" else 0.01 for quantity in QUANTITIES},
        held_to="float32",
    )


def test_a_row_past_its_tolerance_fails_and_one_within_passes() -> None:
    rows = [_comparison("within", 0.99), _comparison("over", 1.5), _comparison("nan", np.nan)]
    table = format_table(rows, (8, 200, 2)).splitlines()
    assert "B=8 T=200 F=2" in table[0]
    by_backend = {
        line.split()[0]: line for line in table if line.split()[0] in {"within", "over", "nan"}
    }
    assert by_backend["within"].endswith("99% adam     pass")
    assert by_backend["over"].endswith("150% adam    fail")
    assert by_backend["nan"].split()[-1] == "fail"
    assert max(len(line) for line in table) <= 100
    broken = {"raised": "RuntimeError: its process exited 1: boom"}
    markdown = parity_markdown(rows, {"missing": "needs something"}, (8, 200, 2), broken)
    assert "B=8 T=200 F=2" in markdown.splitlines()[0]
    assert "| over | " in markdown and markdown.count(" | fail |") == 3
    cells = {line.split(" | ")[0]: line.count("|") for line in markdown.splitlines()}
    assert cells["| raised"] == cells["| missing"] == cells["| over"]  # every row 9 cells


def test_the_table_states_the_tolerances_of_the_one_table() -> None:
    table = format_table([_comparison("within", 0.5)], (3, 4, 5))
    legend = " ".join(table.split())
    for key in ("outputs", "loss", "gradients", "adam"):
        assert f"{TOLERANCES[key].rtol:g}, {TOLERANCES[key].atol:g}" in legend, key


@pytest.mark.parametrize(("offset", "within"), [(0.99, True), (1.01, False)])
def test_fraction_used_is_assert_allclose_s_test(offset: float, within: bool) -> None:
    tolerance = Tolerance(rtol=1e-5, atol=1e-6, reason="a test's")
    expected = np.array([0.0, 0.5, -2.0])
    actual = expected + offset * (1e-6 + 1e-5 * np.abs(expected))
    assert (tolerance.fraction_used(actual, expected) <= 1.0) is within
    assert np.allclose(actual, expected, rtol=1e-5, atol=1e-6) is within


def test_the_reference_against_itself_is_held_to_float64_and_passes() -> None:
    row = compare_backend("reference", multi_sine(batch=3, steps=20, features=2))
    assert row.held_to == "float64"
    assert row.passed
    assert set(row.errors.values()) == {0.0}


FAILS = "tf_while"
"""The backend the made-up comparisons of ``_fake_parity`` fail."""


def _fake_parity(
    monkeypatch: pytest.MonkeyPatch, fails: str | None, raises: str | None = None
) -> None:
    """``frae.compare.main`` on made-up rows, no framework imported: ``fails`` over its
    tolerance, ``raises`` raising, every other row within, one backend not compared."""

    def compare(name: str, x: np.ndarray) -> Comparison:
        if name == raises:
            raise ValueError("a made-up failure")
        return _comparison(name, 1.5 if name == fails else 0.5)

    planned = [Planned(name, name) for name in ("reference", "tf_while", "jax_scan")]
    monkeypatch.setattr(frae.compare, "plan", lambda: (planned, {"torch_scan": "needs torch"}))
    monkeypatch.setattr(frae.compare, "compare_backend", compare)


@pytest.mark.parametrize(
    ("fails", "raises", "status"),
    [(None, None, 0), (FAILS, None, 1), (None, FAILS, 1)],
    ids=["within", "over", "raised"],
)
def test_the_exit_status_is_1_where_a_backend_compared_fails(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fails: str | None,
    raises: str | None,
    status: int,
) -> None:
    """``frae compare --no-bench`` exits 1 where a row is over its tolerance or its comparison
    raised, 0 where every row compared is within (the one not compared counts for neither),
    and says so on its last line."""
    _fake_parity(monkeypatch, fails, raises)
    with pytest.raises(SystemExit) as stopped:
        main(["compare", "--no-bench"])
    assert stopped.value.code == status
    printed = capsys.readouterr().out.splitlines()
    if status:
        assert printed[-1] == f"parity failed: {FAILS} (exit status 1)"
        assert raises is None or f"  {FAILS}: ValueError: a made-up failure" in printed
    else:
        assert printed[-1] == "parity: all 3 backends compared within their tolerances"


def test_the_benchmark_runs_and_gets_the_parity_records_before_the_failure_is_told(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The benchmark still runs where parity fails, with the table as its preamble and one
    parity record a backend (``bench.records.ParityRecord``); the exit status comes after."""
    import bench.cli

    _fake_parity(monkeypatch, FAILS)
    given: dict[str, Any] = {}

    def benchmark(**arguments: Any) -> tuple[list[Any], str]:
        given.update(arguments)
        print("the benchmark's summary")
        return [], "summary"

    monkeypatch.setattr(bench.cli, "benchmark", benchmark)
    assert run_compare(tmp_path, benchmark=True) == 1
    assert given["out"] == tmp_path and given["quick"]
    assert "| tf_while | " in given["preamble"]
    records = {record.variant: record for record in given["parity"]}
    assert records["tf_while"] == ParityRecord(
        "tf_while",
        passed=False,
        worst="adam",
        used=1.5,
        errors=dict.fromkeys(QUANTITIES, 3e-7),
        held_to="float32",
    )
    assert records["reference"].passed and records["reference"].used == 0.5
    assert records["torch_scan"] == ParityRecord("torch_scan", reason="needs torch")
    printed = capsys.readouterr().out
    assert printed.index("the benchmark's summary") < printed.index("parity failed: tf_while")


def test_the_help_states_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "Exit status 1 where a backend compared fails parity" in " ".join(
        capsys.readouterr().out.split()
    )


def test_a_keras_port_gets_a_row_on_every_keras_backend_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``keras_rnn`` on this process's Keras backend here, on each other installed in a process
    of its own, labelled as the benchmark names its variants; imports nothing."""
    if (reason := frae.unavailable_reason("keras_rnn")) is not None:
        pytest.skip(reason)
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    planned, missing = plan()
    keras = {p.label: p.keras_backend for p in planned if p.backend == "keras_rnn"}
    installed = [name for name in KERAS_BACKENDS if importlib.util.find_spec(name) is not None]
    assert keras == {f"keras_rnn[{name}]": None if name == "jax" else name for name in installed}
    assert set(missing) == {
        *(f"keras_rnn[{name}]" for name in KERAS_BACKENDS if name not in installed),
        *(name for name in frae.available_backends() if frae.unavailable_reason(name)),
    }
    assert [p.label for p in planned if p.backend != "keras_rnn"] == [
        name for name in frae.installed_backends() if name != "keras_rnn"
    ]


@pytest.mark.slow
def test_a_keras_backend_not_this_process_s_is_compared_in_a_process_of_its_own() -> None:
    """``keras_rnn[jax]`` from ``python -m frae.compare`` with ``KERAS_BACKEND=jax`` (about 15 s):
    its row, labelled by the Keras backend its model ran on, within its tolerances."""
    if frae.unavailable_reason("keras_rnn", needs=("jax",)) is not None:
        pytest.skip("needs keras and jax")
    row = row_of(in_own_process(Planned("keras_rnn[jax]", "keras_rnn", "jax")))
    assert row.backend == "keras_rnn[jax]"
    assert row.held_to == "float32" and row.passed, row
    assert set(row.errors) == set(QUANTITIES)


def test_a_process_that_fails_is_a_failed_row_saying_why() -> None:
    """A process of its own that exits with an error: ``RuntimeError`` with its status and
    the last line of its stderr (``compare_all`` makes it a failed row)."""
    done = in_own_process(Planned("keras_rnn[jax]", "no_such_backend", "jax"))
    with pytest.raises(RuntimeError, match=r"its process exited 2: .*invalid choice"):
        row_of(done)


@pytest.mark.slow
def test_compare_prints_every_backend(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """The parity part of the main job through the command's entry point, on the backends' models
    the kit compiled (its benchmark part: tests/bench/test_cli.py)."""
    with pytest.raises(SystemExit) as stopped:
        main(["compare", "--no-bench", "--out", str(tmp_path)])
    assert stopped.value.code == 0
    stdout = capsys.readouterr().out
    for name in frae.available_backends():
        assert f"\n{name}" in stdout or f"  {name}: " in stdout, name
    rows = stdout.splitlines()
    assert max(len(line) for line in rows) <= 100
    reference_row = next(line for line in rows if line.startswith("reference"))
    assert reference_row.split()[1:6] == ["0.0e+00"] * 5
    planned = [p.label for p in plan()[0]]  # a Keras port on each Keras backend installed
    compared = [line for line in rows if line.split(" ")[0] in planned]
    assert [line.split(" ")[0] for line in compared] == planned
    assert all(line.endswith("pass") for line in compared), compared
    assert rows[-1] == f"parity: all {len(planned)} backends compared within their tolerances"
