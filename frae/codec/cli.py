"""``frae codec``: a prior fitted, and a signal compressed and decompressed, from the command
line (the contract's "Coding: the model as a codec"): the model and its prior from one
checkpoint, signals as ``.npy`` files, progress on long inputs; each output written whole or
not at all, at exactly the path given, never over an input."""

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
        if verb == "fit-prior":
            command.add_argument(
                "input",
                type=Path,
                nargs="?",
                help="the signal (.npy) whose symbols are counted; not needed for a model "
                "trained with rate_weight, whose learned prior makes the tables",
            )
            command.add_argument(
                "--counted",
                action="store_true",
                help="count the signal's symbols even where the model has a learned prior",
            )
        else:
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
def progress(total: int | None, unit: str) -> Iterator[Any]:
    """tqdm's bar on stderr where tqdm is installed, shown once the work has taken a second (a
    long input), else nothing; ``total`` ``None``: a count with no end known."""
    try:
        from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        yield None
        return
    with tqdm(total=total, unit=unit, delay=1.0, file=sys.stderr) as bar:
        yield bar.update


def read_signal(path: Path, features: int) -> np.ndarray:
    """The signal a ``.npy`` file holds: numbers (T, F) or (B, T, F), F = ``features``."""
    with open(path, "rb") as stream:
        try:
            x = np.load(stream, allow_pickle=False)
        except (ValueError, EOFError) as error:
            raise ValueError(f"{path} is not a .npy array file") from error
    if not isinstance(x, np.ndarray):  # an .npz archive of arrays
        raise ValueError(f"{path} is not a .npy array file")
    if x.dtype.kind not in "iuf" or x.ndim not in (2, 3) or x.shape[-1] != features:
        raise ValueError(
            f"{path} must hold a signal (T, F) or (B, T, F) with F = {features} (the model's "
            f"features), got {x.dtype} {x.shape}"
        )
    return x


def refuse_overwriting(args: argparse.Namespace) -> None:
    """``--out`` may not be a file the verb reads; fit-prior rewrites its checkpoint, by
    default, as it is meant to."""
    inputs = {"input": args.input, "checkpoint": args.checkpoint}
    if args.verb == "fit-prior":
        del inputs["checkpoint"]
    for role, path in inputs.items():
        if args.out is not None and path is not None and _same_file(args.out, path):
            raise ValueError(f"--out {args.out} is the {role}: it would be overwritten")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:  # either is missing: nothing to overwrite, or nothing to read
        return False


def fit_prior(args: argparse.Namespace, model: Any) -> Any:
    """The learned prior's tables where the model has one (``rate_weight`` set) and
    ``--counted`` is not given, else the counts of the input's symbols; which, on stderr."""
    import frae

    if model.config.rate_weight is not None and not args.counted:
        unread = "" if args.input is None else f"; {args.input} not read (--counted counts it)"
        print(f"fit-prior: the tables of the model's learned prior{unread}", file=sys.stderr)
        return frae.codec.prior_from_model(model)
    if args.input is None:
        raise ValueError(
            "the model has no learned prior (rate_weight): give the signal whose symbols to count"
        )
    x = read_signal(args.input, model.config.input_dim)
    print(f"fit-prior: the counts of the symbols of {args.input}", file=sys.stderr)
    return frae.codec.fit_prior(model, x)


def run(args: argparse.Namespace) -> Path:
    """One verb, its input read and checked before the model is made; the path it wrote, each
    output written whole or not at all."""
    import frae
    from frae.files import write_atomically

    refuse_overwriting(args)
    config = frae.checkpoints.load_config(args.checkpoint)
    weights, state = frae.load_checkpoint(args.checkpoint)
    if args.verb == "fit-prior":
        fitted = fit_prior(args, frae.create(args.backend, config, weights=weights))
        out = args.out or args.checkpoint
        return frae.save_checkpoint(out, weights, state, config=config, prior=fitted)
    prior = frae.codec.load_prior(args.checkpoint)
    if prior is None:
        raise ValueError(f"{args.checkpoint} holds no prior: frae codec fit-prior first")
    if args.verb == "compress":
        x = read_signal(args.input, config.input_dim)
        model = frae.create(args.backend, config, weights=weights)
        with progress(1 if x.ndim == 2 else len(x), "sequence") as update:
            data = frae.codec.compress(model, prior, x, progress=update)
        return write_atomically(args.out, lambda stream: stream.write(data))
    data = args.input.read_bytes()
    model = frae.create(args.backend, config, weights=weights)
    with progress(None, "sequence") as update:
        rebuilt = frae.codec.decompress(model, prior, data, progress=update)
    return write_atomically(args.out, lambda stream: np.save(stream, rebuilt))


def main(argv: list[str], prog: str = "frae codec") -> None:
    """The path written on stdout; a bad argument or file exits 2 saying why."""
    commands = parser(prog)
    args = commands.parse_args(argv)
    try:
        print(run(args))
    except (ValueError, TypeError, OSError, ImportError) as error:
        commands.error(f"{args.verb}: {error}")
