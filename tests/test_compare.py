"""The main job runs and reports every registered backend, compared or missing; each row is
held to the suite's tolerances (``frae.tolerances``) and says whether it is within them."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from frae.cli import main
from frae.compare import QUANTITIES, Comparison, compare_backend, format_table, parity_markdown
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
    markdown = parity_markdown(rows, {"missing": "needs something"}, (8, 200, 2))
    assert "B=8 T=200 F=2" in markdown.splitlines()[0]
    assert "| over | " in markdown and markdown.count(" | fail |") == 2


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


@pytest.mark.slow
def test_compare_prints_every_backend(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """The parity part of the main job through the command's entry point, on the backends' models
    the kit compiled (its benchmark part: tests/bench/test_cli.py)."""
    main(["compare", "--no-bench", "--out", str(tmp_path)])
    stdout = capsys.readouterr().out
    for name in frae.available_backends():
        assert f"\n{name}" in stdout or f"  {name}: " in stdout, name
    rows = stdout.splitlines()
    assert max(len(line) for line in rows) <= 100
    reference_row = next(line for line in rows if line.startswith("reference"))
    assert reference_row.split()[1:6] == ["0.0e+00"] * 5
    installed = frae.installed_backends()
    compared = [line for line in rows if line.split("[")[0].split(" ")[0] in installed]
    assert len(compared) == len(installed)
    assert all(line.endswith("pass") for line in compared), compared
    if "keras_rnn" in installed:  # labelled with the Keras backend it ran on
        assert any(line.startswith("keras_rnn[") for line in compared)
