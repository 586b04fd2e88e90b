"""The ``frae`` command: the one place that composes the core with the benchmark and the
applications (``apps``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from frae.version import version


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
        "compare", help="check every installed backend, then run the quick benchmark"
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
        run_compare(args.out, benchmark=not args.no_bench)
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


def run_compare(out: Path | None, benchmark: bool) -> None:
    """The main job: the parity table (``frae.compare``), then the quick benchmark, each
    variant in its own process, with the parity table at the head of its report."""
    from frae.compare import main as parity

    preamble = parity()
    if not benchmark:
        return
    from bench.cli import benchmark as run_benchmark
    from bench.measuring.runner import default_out

    folder = out or default_out()
    print(f"\nquick benchmark, each variant in its own process; report in {folder}/", flush=True)
    start = time.perf_counter()
    _, summary = run_benchmark(quick=True, out=folder, preamble=preamble)
    print(f"\n{summary}")
    print(f"\nreport ({time.perf_counter() - start:.0f} s): {folder / 'report.md'}")
    print(f"also there: results.jsonl, {', '.join(p.name for p in sorted(folder.glob('*.png')))}")
