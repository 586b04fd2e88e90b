"""``bench.comparing.against``: ``--against REV``'s refusals before anything runs, the processes'
order (ABBA), the options handed on, and each tree's processes merged into one run with rounds."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.cli import main, parser
from bench.comparing import against
from bench.comparing.diff import load
from bench.records import (
    DoneRecord,
    EndRecord,
    Listing,
    Record,
    ResultRecord,
    RunRecord,
    VariantRecord,
    read,
    to_json,
)
from tests.bench_cases import SETTINGS, kept_calls, run_record

OLD_REV = "e94a5b8^"
"""A revision of this repository's history that predates the variant ``tf_while/litert`` and
the option ``--code-step``."""

pytestmark = pytest.mark.xdist_group("against")  # each checks that no worktree is left behind


def worktrees() -> list[str]:
    """The repository's worktrees, as ``git worktree list`` gives them."""
    listed = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=against.ROOT, capture_output=True
    )
    return [line for line in listed.stdout.decode().splitlines() if line.startswith("worktree")]


def in_history(rev: str) -> bool:
    """Whether ``rev`` names a commit here (a shallow clone lacks the old ones)."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=against.ROOT,
        capture_output=True,
    )
    return found.returncode == 0


def refused(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``bench.cli.main``'s error on ``argv``: exit status 2, nothing written in ``out``, no
    worktree left behind."""
    before = worktrees()
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--out", str(out), "--no-progress"])
    assert stopped.value.code == 2
    assert not out.exists()
    assert worktrees() == before
    return capsys.readouterr().err


@pytest.fixture
def no_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal must come before any process measures."""

    def measure(*_: Any) -> None:
        raise AssertionError("measured before refusing")

    monkeypatch.setattr(against, "measure", measure)


@pytest.mark.usefixtures("no_measuring")
def test_a_revision_that_names_no_commit_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    error = refused(["--against", "no-such-revision-42"], tmp_path / "out", capsys)
    assert "--against" in error and "'no-such-revision-42'" in error
    assert len(error.strip().splitlines()[-1]) > 40  # one line that says it all


@pytest.mark.usefixtures("no_measuring")
def test_a_variant_the_revision_lacks_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HEAD's variants without ``jax_scan``: only that one is named."""
    listed = against.variants_of("HEAD", against.ROOT, tmp_path)
    assert "jax_scan" in listed and "numba_floor" in listed  # the listing is read from the tree
    lacking = [name for name in listed if name != "jax_scan"]
    monkeypatch.setattr(against, "variants_of", lambda *_: lacking)
    argv = ["--against", "HEAD", "--variants", "numba_floor", "jax_scan"]
    error = refused(argv, tmp_path / "out", capsys)
    assert "['jax_scan']" in error and "numba_floor" not in error


@pytest.mark.skipif(not in_history(OLD_REV), reason=f"{OLD_REV} is not in this clone's history")
@pytest.mark.usefixtures("no_measuring")
@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--variants", "numba_floor", "tf_while/litert"], "['tf_while/litert']"),
        (["--variants", "numba_floor", "--code-step", "0.25"], "--code-step"),
        (["--variants", "bench.comparing.against:main"], "bench.comparing.against:main"),
    ],
    ids=["variant-added-later", "option-added-later", "port-absent-there"],
)
def test_what_an_older_revision_lacks_is_refused_naming_it(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The old revision's own catalogue, command line and modules, read in its worktree."""
    error = refused(["--against", OLD_REV, *argv], tmp_path / "out", capsys)
    assert named in error


def test_a_port_beside_the_user_is_found_in_both_trees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port outside the project, in the folder the user started in, passes the check in
    each tree though each runs in its own folder; one absent from it does not."""
    (tmp_path / "my_port.py").write_text("class Port:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    trees = {against.OLD: against.ROOT, against.NEW: against.ROOT}
    against.check("HEAD", trees, ["numba_floor", "my_port:Port"], [], tmp_path)
    with pytest.raises(ValueError, match="'other_port:Port' must be importable in both trees"):
        against.check("HEAD", trees, ["other_port:Port"], [], tmp_path)


def test_the_options_handed_on_are_the_grids_and_the_measurings_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every measuring and grid option as given (a --config file by its absolute path);
    --against, --out, --variants, --rounds, --list and --no-progress are the caller's own."""
    config = tmp_path / "model.json"
    config.write_text('{"latent_dim": 8}')
    given = ["--quick", "--code-step", "0.25", "--rate-weight", "0.5"]
    given += ["--batch", "1", "3", "--steps", "10"]
    given += ["--operations", "predict", "--repeats", "3", "--train-steps", "6", "--threads", "2"]
    own = ["--against", "HEAD", "--out", "x", "--variants", "a", "b", "--rounds", "4"]
    options = parser("test")
    args = options.parse_args([*own, "--list", "--no-progress", "--config", "model.json", *given])
    monkeypatch.chdir(tmp_path)  # where the user started: the tree's processes run elsewhere
    flags = against.passthrough(args, options)
    assert flags == [given[0], "--config", str(config), *given[1:]]
    again = options.parse_args(flags)
    assert all(getattr(again, dest) == getattr(args, dest) for dest in against.PASSTHROUGH[3:])


def test_options_left_at_their_defaults_are_not_handed_on() -> None:
    """An older tree need not know an option the user did not set."""
    options = parser("test")
    args = options.parse_args(["--train-steps", "5", "--threads", "1", "--against", "HEAD"])
    assert against.passthrough(args, options) == []


def test_the_trees_take_turns_abba() -> None:
    """Each round each variant in both trees one after the other, the old first in odd
    rounds, the new first in even ones."""
    trees = {against.OLD: Path("old"), against.NEW: Path("new")}
    plan = against.schedule(["a", "b"], 3, trees)
    said = [(step.round, step.variant, step.tree) for step in plan]
    o, n = against.OLD, against.NEW
    assert said == [
        *[(1, "a", o), (1, "a", n), (1, "b", o), (1, "b", n)],
        *[(2, "a", n), (2, "a", o), (2, "b", n), (2, "b", o)],
        *[(3, "a", o), (3, "a", n), (3, "b", o), (3, "b", n)],
    ]
    assert all(step.root == trees[step.tree] for step in plan)


def process_records(variant: str, seconds: float, calls: list[float]) -> list[Record]:
    """What one process of ``python -m bench --variants VARIANT --rounds 1`` writes."""
    listing = Listing(variant, "compiled", f"about {variant}")
    return [
        run_record({variant: listing}),
        VariantRecord(variant, "compiled", variant, import_s=0.1),
        kept_calls(calls, variant, role="compiled"),
        DoneRecord(variant, seconds),
        EndRecord(seconds + 1),
    ]


def write_processes(out: Path, plan: list[against.Invocation], failing: int = -1) -> None:
    """Each process's ``results.jsonl`` of ``plan`` but the ``failing``-th's."""
    for index, step in enumerate(plan):
        if index == failing:
            continue
        calls = [1e-3 * step.round + 1e-6 * k for k in range(1, 8)]
        folder = step.folder(out)
        folder.mkdir(parents=True)
        records = process_records(step.variant, 2.0, calls)
        (folder / "results.jsonl").write_text("".join(to_json(r) + "\n" for r in records))


def test_each_trees_processes_merge_into_one_run_with_rounds(tmp_path: Path) -> None:
    """The first run record with every process's variants and the comparison's rounds, each
    record marked with its process's round, a failed process's error as its variant's, one
    end record; bench.comparing.diff reads each measurement's rounds from it."""
    plan = against.schedule(["a", "b"], 2, {against.OLD: tmp_path, against.NEW: tmp_path})
    news = [step for step in plan if step.tree == against.NEW]
    write_processes(tmp_path, plan, failing=plan.index(news[-1]))
    failed = {news[-1]: "the command line exited with 1: boom"}
    merged = against.merge(tmp_path, against.NEW, plan, failed)
    first, last = merged[0], merged[-1]
    assert isinstance(first, RunRecord) and first.settings == replace(SETTINGS, rounds=2)
    assert list(first.variants) == ["a", "b"]
    assert isinstance(last, EndRecord) and last.wall_s == pytest.approx(3 * 3.0)
    middle = merged[1:-1]
    assert not any(isinstance(r, RunRecord | EndRecord) for r in middle)
    rounds = [(r.variant, r.round) for r in middle if isinstance(r, ResultRecord)]
    assert rounds == [("a", 1), ("b", 1), ("a", 2)]
    errors = [r for r in middle if isinstance(r, VariantRecord) and r.error]
    assert [(r.variant, r.round, r.error) for r in errors] == [("b", 2, failed[news[-1]])]
    path = tmp_path / "new.jsonl"
    path.write_text("".join(to_json(r) + "\n" for r in merged))
    run = load(path, "NEW")
    assert run.run.settings.rounds == 2
    assert {key.variant: len(apart) for key, apart in run.rounds.items()} == {"a": 2, "b": 1}


def test_a_side_no_process_wrote_is_refused(tmp_path: Path) -> None:
    plan = against.schedule(["a"], 2, {against.OLD: tmp_path, against.NEW: tmp_path})
    with pytest.raises(ValueError, match="the old tree's processes must write results"):
        against.merge(tmp_path, against.OLD, plan, {})


def test_a_comparison_end_to_end_on_processes_written_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--against HEAD --rounds 1`` measures three rounds, says what it compared on its first
    line, writes each tree's run and the verdicts, and removes its worktree."""
    ran: list[against.Invocation] = []

    def measure(
        plan: list[against.Invocation], flags: list[str], out: Path, *_: Any
    ) -> dict[against.Invocation, str]:
        assert flags == ["--quick"]
        ran.extend(plan)
        write_processes(out, plan)
        return {}

    monkeypatch.setattr(against, "measure", measure)
    before = worktrees()
    out = tmp_path / "out"
    argv = ["--against", "HEAD", "--quick", "--variants", "numba_floor", "--rounds", "1"]
    main([*argv, "--out", str(out), "--no-progress"])
    assert worktrees() == before
    assert max(step.round for step in ran) == against.LEAST_ROUNDS == 3
    assert {step.root for step in ran if step.tree == against.NEW} == {against.ROOT}
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=against.ROOT, capture_output=True, text=True
    ).stdout.strip()
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith(f"HEAD ({head}) against the working tree ({head}")
    assert "0 faster, 0 slower" in printed
    assert (out / "against.md").read_text().startswith("HEAD (")
    for side in (against.OLD, against.NEW):
        run = read(out / side / "results.jsonl")[0]
        assert isinstance(run, RunRecord) and run.settings.rounds == 3
