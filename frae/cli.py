"""The ``frae`` command."""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="frae", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("compare", help="check and time every installed backend")
    args = parser.parse_args(argv)
    if args.command == "compare":
        from frae.compare import main as compare

        compare()
