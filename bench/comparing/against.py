"""Two revisions measured in one run: ``frae bench --against REV``.

The working tree as it is, uncommitted changes included, is the new side; REV, any git
revision, checked out into a temporary worktree, is the old. Each tree runs its own command
line (``python -m bench``) with this interpreter and environment, one process a variant and
a round, the trees taking turns: old then new in odd rounds, new then old in even ones
(ABBA), so that the machine's drift falls on both alike, as asv interleaves revisions. Each
tree's processes are merged into one ``results.jsonl`` with their rounds, ``OUT/old`` and
``OUT/new``, which ``bench.comparing.diff`` judges; ``frae diff OUT/old OUT/new`` reads them again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from bench.measuring.runner import default_out
from bench.records import (
    EndRecord,
    Listing,
    ParityRecord,
    Record,
    RunRecord,
    VariantRecord,
    file_name,
    read,
    to_json,
)

ROOT = Path(__file__).resolve().parents[2]
"""The working tree's root: the new side."""
OLD, NEW = "old", "new"
PASSTHROUGH = (
    *("quick", "config", "code_step", "rate_weight", "batch", "steps", "operations"),
    *("repeats", "train_steps", "threads"),
)
"""The options each tree's command line is given as the user gave them: the grid and how it
is measured; never ``--against``, ``--out``, ``--variants``, ``--rounds`` or ``--list``."""
LEAST_ROUNDS = 3
"""The fewest rounds of a comparison: ``bench.comparing.change`` widens its margin by the spread
between a run's rounds, which one round cannot show, and the quick run's three calls of a
stream a round need three rounds a side for the rank test to reach
``bench.comparing.change.ALPHA``."""
MARGIN = 0.10
"""The least change called one (asv's factor of 1.1): two processes of one commit differ by
more than ``bench.comparing.change.MIN_MARGIN`` in a call's time (docs/benchmark.md)."""
TREE_ALONE = (
    "import sys; sys.meta_path[:] = [finder for finder in sys.meta_path "
    "if not getattr(finder, '__module__', '').startswith('__editable__')]; "
)
"""Code that leaves the editable install's finder out: it finds in the working tree what a
tree's own folders lack, so an older tree would list the working tree's variants."""
LIST_VARIANTS = TREE_ALONE + (
    "import json; from bench.catalogue import VARIANTS; "
    "print(json.dumps([variant.name for variant in VARIANTS]))"
)
WHY_UNAVAILABLE = TREE_ALONE + (
    "import json, frae; print(json.dumps(frae.unavailable_reason(sys.argv[1])))"
)
WITHOUT_REPORT = TREE_ALONE + (
    "import bench.report; bench.report.write = lambda *args, **kwargs: ''; "
    "from bench.cli import main; main(sys.argv[1:])"
)
"""A tree's command line without its report: the comparison writes its own from the
records, and each process's report and plots would cost more than some variants' runs."""
TAIL = 5
"""The lines of a failed process's output kept in its error."""


class Invocation(NamedTuple):
    """One process of the comparison: a tree's command line on one variant in one round."""

    round: int
    variant: str
    tree: str
    """``OLD`` or ``NEW``: its folder under the output's."""
    root: Path

    def folder(self, out: Path) -> Path:
        """Where its command line writes: ``OUT/<tree>/<variant>/round<r>``."""
        return out / self.tree / file_name(self.variant) / f"round{self.round}"


def git(*arguments: str) -> subprocess.CompletedProcess[str]:
    """``git *arguments`` in the working tree's root, its output captured."""
    return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True)


def resolve(rev: str) -> str:
    """The full sha of the commit ``rev`` names; ``ValueError`` where it names none."""
    done = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if done.returncode != 0:
        raise ValueError(
            f"--against must name a git revision (a commit, a branch, a tag) of {ROOT}, "
            f"got {rev!r}, which names no commit there"
        )
    return done.stdout.strip()


def heading(rev: str, sha: str) -> str:
    """What is compared: ``REV (sha) against the working tree (HEAD's sha[, with ...])``."""
    short = git("rev-parse", "--short", sha).stdout.strip()
    head = git("rev-parse", "--short", "HEAD").stdout.strip()
    dirty = ", with uncommitted changes" if git("status", "--porcelain").stdout.strip() else ""
    return f"{rev} ({short}) against the working tree ({head}{dirty})"


@contextmanager
def checked_out(sha: str) -> Iterator[Path]:
    """A detached worktree of ``sha`` in a temporary folder, removed on leaving."""
    folder = Path(tempfile.mkdtemp(prefix="frae-against-"))
    tree = folder / "tree"
    try:
        added = git("worktree", "add", "--detach", str(tree), sha)
        if added.returncode != 0:
            raise RuntimeError(f"git worktree add {sha} failed: {added.stderr.strip()}")
        yield tree
    finally:
        git("worktree", "remove", "--force", str(tree))
        git("worktree", "prune")
        shutil.rmtree(folder, ignore_errors=True)


def environment(root: Path, origin: Path) -> dict[str, str]:
    """This process's environment with ``root``'s packages first on the path (before the
    editable install's), then ``origin``, the folder the user started in, where a port of
    one's own is found."""
    path = [str(root), str(origin), os.environ.get("PYTHONPATH")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, path))}


def in_tree(root: Path, origin: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``python *arguments`` with this interpreter in the tree ``root``."""
    command = [sys.executable, *arguments]
    env = environment(root, origin)
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)


def tail(text: str, lines: int = TAIL) -> str:
    """The last ``lines`` of a process's output, on one line."""
    return " | ".join(text.strip().splitlines()[-lines:])


def variants_of(rev: str, root: Path, origin: Path) -> list[str]:
    """The names of the variants that ``rev``'s tree ``root`` registers (``bench.catalogue``)."""
    done = in_tree(root, origin, "-c", LIST_VARIANTS)
    if done.returncode != 0:
        raise ValueError(
            f"--against {rev} must list its variants in bench.catalogue.VARIANTS, got: "
            f"{tail(done.stderr, 1)}"
        )
    names: list[str] = json.loads(done.stdout.splitlines()[-1])
    return names


def check(
    rev: str, trees: Mapping[str, Path], variants: Sequence[str], flags: Sequence[str], origin: Path
) -> None:
    """Refuse (``ValueError``) a variant REV lacks, options its command line does not take
    and a port either tree cannot import."""
    known = variants_of(rev, trees[OLD], origin)
    if missing := [v for v in variants if ":" not in v and v not in known]:
        raise ValueError(
            f"--variants must be variants that --against {rev} has too, got {missing}, which "
            f"it lacks (choose --variants among both trees')"
        )
    listed = ["-m", "bench", *flags, "--variants", *variants, "--rounds", "1", "--no-progress"]
    done = in_tree(trees[OLD], origin, *listed, "--list")  # parses its options, runs nothing
    if done.returncode != 0:
        raise ValueError(
            f"--against {rev}'s command line must take the options given, got: "
            f"{tail(done.stderr, 1)}"
        )
    for port in (v for v in variants if ":" in v):
        for side, root in trees.items():
            done = in_tree(root, origin, "-c", WHY_UNAVAILABLE, port)
            reason = json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else None
            if done.returncode != 0 or reason is not None:
                why = reason or tail(done.stderr)
                raise ValueError(
                    f"--variants {port!r} must be importable in both trees, got in the {side} "
                    f"({root}): {why}"
                )


def passthrough(args: argparse.Namespace, options: argparse.ArgumentParser) -> list[str]:
    """The options of ``PASSTHROUGH`` the user set (those at their defaults left out, so
    that an older tree need not know them), as a command line again; a ``--config`` file
    by its absolute path, for each tree runs in its own folder."""
    flags = []
    for dest in PASSTHROUGH:
        value = getattr(args, dest)
        if value is None or value is False or value == options.get_default(dest):
            continue
        flag = "--" + dest.replace("_", "-")
        if dest == "config" and not value.lstrip().startswith("{"):
            value = str(Path(value).resolve())
        values = [] if value is True else value if isinstance(value, list) else [value]
        flags += [flag, *map(str, values)]
    return flags


def schedule(variants: Sequence[str], rounds: int, trees: Mapping[str, Path]) -> list[Invocation]:
    """Every process, in order: each round each variant in both trees, one after the other,
    the old first in odd rounds and the new first in even ones (ABBA)."""
    plan = []
    for r in range(1, rounds + 1):
        order = (OLD, NEW) if r % 2 else (NEW, OLD)
        plan += [Invocation(r, v, side, trees[side]) for v in variants for side in order]
    return plan


def measure(
    plan: Sequence[Invocation], flags: Sequence[str], out: Path, origin: Path, progress: bool
) -> dict[Invocation, str]:
    """Run each process of ``plan`` (its output in ``cli.log`` beside its results); return
    the error of each that failed. A failure stops nothing."""
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    failed = {}
    bar = tqdm(plan, unit="process", file=sys.stderr, dynamic_ncols=True, disable=not progress)
    for step in bar:
        bar.set_description(f"{step.variant}, round {step.round}, {step.tree}")
        folder = step.folder(out)
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-c", WITHOUT_REPORT, *flags, "--variants", step.variant]
        command += ["--rounds", "1", "--no-progress", "--out", str(folder)]
        env = environment(step.root, origin)
        with (folder / "cli.log").open("w") as log:
            code = subprocess.run(command, cwd=step.root, env=env, stdout=log, stderr=log)
        if code.returncode != 0:
            said = tail((folder / "cli.log").read_text(errors="replace"))
            failed[step] = f"the command line exited with {code.returncode}: {said}"
    return failed


def merge(
    out: Path, side: str, plan: Sequence[Invocation], failed: Mapping[Invocation, str]
) -> list[Record]:
    """One run of ``side``'s processes in ``plan``: the first run record (with every
    process's variants, ``rounds`` the comparison's), each process's records marked with its
    round, a failed process's error as its variant's, and an end record with their total
    wall time. ``ValueError`` where no process of the side wrote a run record."""
    steps = [step for step in plan if step.tree == side]
    first: RunRecord | None = None
    listings: dict[str, Listing] = {}
    kept: list[Record] = []
    wall = 0.0
    for step in steps:
        path = step.folder(out) / "results.jsonl"
        for record in read(path) if path.is_file() else []:
            if isinstance(record, RunRecord):
                first = first or record
                listings |= record.variants
            elif isinstance(record, EndRecord):
                wall += record.wall_s
            elif isinstance(record, ParityRecord):  # measured by no round
                kept.append(record)
            else:
                kept.append(replace(record, round=step.round))
        if step in failed:
            kept.append(VariantRecord(step.variant, error=failed[step], round=step.round))
    if first is None:
        raise ValueError(f"the {side} tree's processes must write results, none did")
    rounds = max(step.round for step in steps)
    settings = replace(first.settings, rounds=rounds)
    run = replace(first, command=" ".join(sys.orig_argv), settings=settings, variants=listings)
    return [run, *kept, EndRecord(wall)]


def report(title: str, out: Path, failed: Mapping[Invocation, str]) -> str:
    """The verdicts of ``bench.comparing.diff`` on ``OUT/old`` against ``OUT/new`` after ``title``,
    and the processes that failed; written to ``OUT/against.md`` in Markdown."""
    from bench.comparing import diff

    old, new = diff.load(out / OLD, "OLD"), diff.load(out / NEW, "NEW")
    pairs = diff.compare(old, new, min_margin=MARGIN)
    failures = [f"- {s.variant}, round {s.round}, {s.tree}: {why}" for s, why in failed.items()]
    after = ["", "failed processes:", *failures] if failures else []
    markdown = [title, "", diff.render(old, new, pairs, markdown=True), *after]
    (out / "against.md").write_text("\n".join(markdown) + "\n")
    return "\n".join([title, "", diff.render(old, new, pairs), *after])


def main(args: argparse.Namespace, options: argparse.ArgumentParser) -> None:
    """``--against REV``: check REV and the variants before anything runs (exit 2 naming
    the culprit), measure both trees in turn, print the verdicts."""
    start, origin = time.perf_counter(), Path.cwd()
    try:
        sha = resolve(args.against)
    except ValueError as error:
        options.error(str(error))
    from bench.catalogue import select

    title = heading(args.against, sha)
    variants = [v.name for v in select(args.variants, args.quick)]
    rounds = max(args.rounds, LEAST_ROUNDS)
    out = (args.out or default_out()).resolve()
    with checked_out(sha) as worktree:
        trees = {OLD: worktree, NEW: ROOT}
        flags = passthrough(args, options)
        try:
            check(args.against, trees, variants, flags, origin)
        except ValueError as error:
            options.error(str(error))
        plan = schedule(variants, rounds, trees)
        failed = measure(plan, flags, out, origin, not args.no_progress)
    for side in (OLD, NEW):
        try:
            records = merge(out, side, plan, failed)
        except ValueError as error:
            reasons = "\n".join(failed.values())
            raise SystemExit(f"nothing to compare: {error}\n{reasons}") from error
        (out / side / "results.jsonl").write_text("".join(to_json(r) + "\n" for r in records))
    print(report(title, out, failed))
    print(
        f"\nverdicts: {out / 'against.md'}; again with frae diff {out / OLD} {out / NEW} "
        f"--min-margin {MARGIN} "
        f"({time.perf_counter() - start:.0f} s)"
    )
