"""The ``frae`` command: the one place that composes the core with the benchmark and the
applications (``apps``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from frae.version import version

if TYPE_CHECKING:
    from bench.records import ParityRecord
    from frae.compare import Parity


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["bench"]:  # every option belongs to the benchmark's own parser
        from bench.cli import main as bench

        bench(arguments[1:], prog="frae bench")
        return
    if arguments[:1] == ["diff"]:  # its own parser too; its exit status gates a CI job
        from bench.comparing.diff import main as diff

        sys.exit(diff(arguments[1:], prog="frae diff"))
    if arguments[:1] == ["demo"]:  # the application's own parser
        from apps.demo.cli import main as demo

        demo(arguments[1:], prog="frae demo")
        return
    if arguments[:1] == ["codec"]:  # the codec's own parser
        from frae.codec.cli import main as codec

        codec(arguments[1:], prog="frae codec")
        return
    parser = argparse.ArgumentParser(prog="frae", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    compare = commands.add_parser(
        "compare",
        help="check every installed backend, then run the quick benchmark",
        description="Compare every installed backend (a Keras port on each Keras backend "
        "installed) with the float64 reference, then run the quick benchmark, the parity table "
        "at the head of its report and each backend's parity in its results.jsonl. Exit status "
        "1 where a backend compared fails parity (after the benchmark has written its report), "
        "0 otherwise; --no-bench the same.",
    )
    compare.add_argument("--out", type=Path, help="report folder (default reports/<timestamp>)")
    compare.add_argument("--no-bench", action="store_true", help="the parity check alone")
    commands.add_parser(
        "demo",
        help="both models on a real signal (Japanese Vowels) in every installed backend "
        "(frae demo --help)",
    )
    add_export_command(commands)
    commands.add_parser(
        "codec", help="fit a prior, compress and decompress a signal (frae codec --help)"
    )
    commands.add_parser("bench", help="the cross-framework benchmark (frae bench --help)")
    commands.add_parser("diff", help="compare two benchmark runs (frae diff --help)")
    args = parser.parse_args(arguments)
    if args.command == "compare":
        sys.exit(run_compare(args.out, benchmark=not args.no_bench))
    elif args.command == "export":
        run_export(parser, args)


def add_export_command(commands: Any) -> None:
    from frae.export import FORMATS

    export = commands.add_parser(
        "export",
        help="write a backend's model in a deployment format (the contract's \"Exports\")",
        description="Write BACKEND's model, with the weights given or its initial ones, in "
        "FORMAT to the folder OUT (absent or empty); frae.load_exported(OUT) runs it.",
    )
    export.add_argument("backend", help="a registered name or package.module:attribute")
    export.add_argument("--format", required=True, choices=FORMATS)
    export.add_argument("--out", required=True, type=Path, help="the artifact's folder")
    export.add_argument("--config", help="the FRAEConfig as JSON (default: the default config)")
    export.add_argument("--weights", type=Path, help="a weights file (.npz, frae.save_weights)")
    export.add_argument("--seed", type=int, default=0, help="initial weights' seed (no --weights)")


def run_export(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``frae export``: the artifact's path on stdout; a bad argument exits 2 saying why."""
    import frae

    try:
        config = frae.FRAEConfig.from_dict(json.loads(args.config)) if args.config else None
        weights = frae.load_weights(args.weights) if args.weights else None
        model = frae.create(args.backend, config, seed=args.seed, weights=weights)
        print(frae.export(model, args.out, format=args.format))
    except (ValueError, TypeError, OSError, ImportError) as error:
        parser.error(f"export: {error}")


def run_compare(out: Path | None, benchmark: bool) -> int:
    """The main job: the parity table (``frae.compare``), then the quick benchmark, each
    variant in its own process, with the parity table at the head of its report and each
    backend's parity (``parity_records``) after the run's line of its ``results.jsonl``.
    Returns the exit status: 1 where a backend compared fails parity, 0 otherwise."""
    from frae.compare import main as parity

    outcome = parity()
    if benchmark:
        from bench.cli import benchmark as run_benchmark
        from bench.measuring.runner import default_out

        folder = out or default_out()
        print(
            f"\nquick benchmark, each variant in its own process; report in {folder}/", flush=True
        )
        start = time.perf_counter()
        _, summary = run_benchmark(
            quick=True, out=folder, preamble=outcome.markdown(), parity=parity_records(outcome)
        )
        print(f"\n{summary}")
        print(f"\nreport ({time.perf_counter() - start:.0f} s): {folder / 'report.md'}")
        pngs = ", ".join(p.name for p in sorted(folder.glob("*.png")))
        print(f"also there: results.jsonl, {pngs}")
    if failed := outcome.failed:
        print(f"\nparity failed: {', '.join(failed)} (exit status 1)")
        return 1
    print(f"\nparity: all {len(outcome.rows)} backends compared within their tolerances")
    return 0


def parity_records(outcome: Parity) -> list[ParityRecord]:
    """One record a backend of ``outcome``: compared, raised, or not compared."""
    from bench.records import ParityRecord

    compared = [
        ParityRecord(
            r.backend,
            passed=r.passed,
            worst=r.nearest,
            used=r.used[r.nearest],
            errors=dict(r.errors),
            held_to=r.held_to,
        )
        for r in outcome.rows
    ]
    raised = [
        ParityRecord(label, passed=False, reason=error) for label, error in outcome.broken.items()
    ]
    missing = [ParityRecord(label, reason=why) for label, why in outcome.missing.items()]
    return compared + raised + missing
