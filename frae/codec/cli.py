"""``frae codec``: a prior fitted, and a signal compressed and decompressed, from the command
line (the contract's "Coding: the model as a codec"): the model and its prior from one
checkpoint, signals as ``.npy`` files, progress on long inputs."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np


def parser(prog: str) -> argparse.ArgumentParser:
    commands = argparse.ArgumentParser(prog=prog, description=__doc__)
    verbs = commands.add_subparsers(dest="verb", required=True)
    helps = {
        "fit-prior": "fit the prior of a signal's symbols and keep it in the checkpoint",
        "compress": "a signal (.npy, (B, T, F) or (T, F)) to bytes",
        "decompress": "bytes to the signal (.npy)",
    }
    for verb, text in helps.items():
        command = verbs.add_parser(verb, help=text, description=text)
        command.add_argument("checkpoint", type=Path, help="weights and config (and the prior)")
        command.add_argument("input", type=Path, help="the signal (.npy) or the bytes")
        command.add_argument(
            "--out",
            type=Path,
            help="default: the checkpoint, rewritten" if verb == "fit-prior" else None,
            required=verb != "fit-prior",
        )
        command.add_argument("--backend", default="reference", help="default: reference")
    return commands


@contextlib.contextmanager
def progress(total: int, unit: str) -> Iterator[Any]:
    """tqdm's bar on stderr where tqdm is installed and the input is long, else nothing."""
    try:
        from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        yield None
        return
    with tqdm(total=total, unit=unit, disable=total < 256, file=sys.stderr) as bar:
        yield bar.update


def run(args: argparse.Namespace) -> str:
    """One verb; what it wrote."""
    import frae

    config = frae.checkpoints.load_config(args.checkpoint)
    weights, state = frae.load_checkpoint(args.checkpoint)
    model = frae.create(args.backend, config, weights=weights)
    if args.verb == "fit-prior":
        out = args.out or args.checkpoint
        fitted = frae.codec.fit_prior(model, np.load(args.input))
        frae.save_checkpoint(out, weights, state, config=config, prior=fitted)
        return str(out)
    prior = frae.codec.load_prior(args.checkpoint)
    if prior is None:
        raise ValueError(f"{args.checkpoint} holds no prior: frae codec fit-prior first")
    if args.verb == "compress":
        x = np.load(args.input)
        with progress(1 if x.ndim == 2 else len(x), "sequence") as update:
            data = frae.codec.compress(model, prior, x, progress=update)
        args.out.write_bytes(data)
    else:
        data = args.input.read_bytes()
        header, _ = frae.codec.byte_format.unpack(data)
        with progress(header.sequences, "sequence") as update:
            np.save(args.out, frae.codec.decompress(model, prior, data, progress=update))
    return str(args.out)


def main(argv: list[str], prog: str = "frae codec") -> None:
    """The path written on stdout; a bad argument or file exits 2 saying why."""
    commands = parser(prog)
    args = commands.parse_args(argv)
    try:
        print(run(args))
    except (ValueError, TypeError, OSError, ImportError) as error:
        commands.error(f"{args.verb}: {error}")
