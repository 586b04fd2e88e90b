"""The ``frae`` command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["bench"]:  # every option belongs to the benchmark's own parser
        from bench.harness import main as bench

        bench(arguments[1:], prog="frae bench")
        return
    parser = argparse.ArgumentParser(prog="frae", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    compare = commands.add_parser(
        "compare", help="check every installed backend, then run the quick benchmark"
    )
    compare.add_argument("--out", type=Path, help="report folder (default reports/<timestamp>)")
    compare.add_argument("--no-bench", action="store_true", help="the parity check alone")
    commands.add_parser("bench", help="the cross-framework benchmark (frae bench --help)")
    args = parser.parse_args(arguments)
    if args.command == "compare":
        from frae.compare import main as compare_main

        compare_main(out=args.out, benchmark=not args.no_bench)
