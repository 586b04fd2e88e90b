"""The cross-framework benchmark: every variant in its own process, one report.

    python -m bench [--quick] [--variants NAME_OR_PATH ...] [--config JSON_OR_FILE]
                    [--steps T ...] [--batch B ...] [--operations OP ...] [--out DIR]

Each variant (``bench.catalogue``) runs in a fresh process (``bench.measuring.worker``, started by
``bench.measuring.runner``) over the grid (``bench.grid``); its records are written to
``results.jsonl`` and ``bench.report`` turns them into ``report.md`` and plots. One's own
port beside the floor, on a wider model:

    python -m bench --quick --variants numba_floor my_package.port:MyFRAE \\
        --config '{"encoder_units": [64], "latent_dim": 16, "decoder_units": [64]}'
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from bench.catalogue import VARIANTS, select, unavailable
from bench.grid import (
    BATCHES,
    STEPS,
    choose_grid,
    read_config,
    with_codec,
    with_quantized,
    with_rated,
)
from bench.measuring.job import QUICK_SETTINGS, Settings
from bench.measuring.runner import default_out, run
from bench.measuring.threads import check_count
from bench.records import EVERY_OPERATION, OPERATIONS, ParityRecord, Record, to_json
from frae.config import FRAEConfig
from frae.files import write_atomically
from frae.validation import check_code_step, check_rate_weight


def benchmark(
    *,
    quick: bool,
    out: Path,
    variants: list[str] | None = None,
    batches: list[int] | None = None,
    steps: list[int] | None = None,
    settings: Settings | None = None,
    progress: bool = True,
    preamble: str = "",
    operations: list[str] | None = None,
    config: FRAEConfig | None = None,
    code_step: float | None = None,
    parity: Sequence[ParityRecord] = (),
    rate_weight: float | None = None,
) -> tuple[list[Record], str]:
    """Measure over ``bench.grid.choose_grid``'s grid (the model of ``code_step`` beside its
    own, that model trained with ``rate_weight`` beside it, the codec wherever a quantized
    model streams), then write the report (``preamble``, Markdown, before its summary);
    return the records and the summary for the terminal.
    ``parity`` (``frae compare``'s) goes into ``results.jsonl`` after the run's record."""
    from bench import report

    grid, models = choose_grid(quick, config, batches, steps, operations)
    if code_step is not None:
        grid, models = with_quantized(grid, models, code_step)
    if rate_weight is not None:
        grid, models = with_rated(grid, models, rate_weight)
    grid = with_codec(grid, models)
    chosen = settings or (QUICK_SETTINGS if quick else Settings())
    records = run(select(variants, quick), grid, chosen, out, progress, models)
    if parity:  # the runner wrote the file from its first line: written again, whole, with them
        records = [*records[:1], *parity, *records[1:]]
        lines = "".join(to_json(record) + "\n" for record in records).encode()
        write_atomically(out / "results.jsonl", lambda stream: stream.write(lines))
    return records, report.write(records, out, preamble)


def positive_int(text: str) -> int:
    """An argument that must be a whole number ≥ 1 (argparse reports the ``ValueError``)."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


positive_int.__name__ = "whole number ≥ 1"  # argparse names the type in its message


def parser(prog: str) -> argparse.ArgumentParser:
    """The benchmark's options."""
    from frae.version import version

    options = argparse.ArgumentParser(
        prog=prog, description=__doc__.splitlines()[0] if __doc__ else None
    )
    add = options.add_argument
    add("--version", action="version", version=f"frae {version()}")
    add(
        "--quick",
        action="store_true",
        help="fewer repeats and a small grid (under 3 minutes on 2 cores): every operation at B=1, "
        "T=1000, predict at B=1, T=100 and at B=256, T=1000, the stream at B=1 over 1000 frames; "
        "leaves out the variants --list marks 'not in --quick' (--batch/--steps/--operations "
        "replace the grid)",
    )
    add(
        "--variants",
        nargs="+",
        metavar="NAME_OR_PATH",
        help="registered variants (--list) or ports of your own as package.module:Factory, "
        "found from the working folder; default: all but those --list marks 'only when named'",
    )
    _model_options(add)
    add("--batch", nargs="+", type=positive_int, metavar="B", help=f"default {BATCHES}")
    add("--steps", nargs="+", type=positive_int, metavar="T", help=f"default {STEPS}")
    add(
        "--operations",
        nargs="+",
        choices=EVERY_OPERATION,
        metavar="OP",
        help=f"among {EVERY_OPERATION}; default {OPERATIONS} (the stream is B sequences sent a "
        "chunk at a time over each T)",
    )
    _measuring_options(add)
    add(
        "--against",
        metavar="REV",
        help="also measure the git revision REV (a commit, a branch, a tag), checked out in a "
        "temporary worktree, and judge the working tree against it: both trees' command lines "
        "in turn, one process a variant and round (bench.comparing.against)",
    )
    add("--out", type=Path, help="report folder (default reports/<timestamp>)")
    add("--no-progress", action="store_true", help="no progress bar on standard error")
    add("--list", action="store_true", help="list the variants and exit")
    return options


def _model_options(add: Callable[..., object]) -> None:
    """Which model is measured: the default or another, quantized, trained for its rate."""
    add(
        "--config",
        metavar="JSON_OR_FILE",
        help="the model to measure instead of the default: a JSON object of FRAEConfig fields "
        f"({', '.join(FRAEConfig.__dataclass_fields__)}) or a file holding one",
    )
    add(
        "--code-step",
        type=float,
        metavar="Δ",
        help="also measure the model with its codes quantized with Δ (2^-k, 0 ≤ k ≤ 14) at "
        "B=1, T=1000 and on the stream, beside it: what rounding costs; and the codec, its "
        "stream sent as packets of bytes (frae.codec), the entropy coder's part apart",
    )
    add(
        "--rate-weight",
        type=float,
        metavar="λ",
        help="with --code-step (or a --config with a code_step), also measure the quantized "
        "model trained for its rate with weight λ ≥ 0 (the loss plus λ times the code's bits a "
        "frame under a learned prior) beside it without, at loss_and_grads and train_step at "
        "B=1, T=1000: what the rate term costs a training step",
    )


def _measuring_options(add: Callable[..., object]) -> None:
    """How each variant is measured: repeats, training steps, threads, rounds."""
    add("--repeats", type=positive_int, help="least number of timed calls (default 7; quick 5)")
    add(
        "--train-steps",
        type=positive_int,
        default=5,
        help="K in fit(x, epochs=K)/K, at least 5 (default 5)",
    )
    add(
        "--threads",
        type=positive_int,
        default=1,
        metavar="N",
        help="the cores and threads of every variant, the floors' included, each pinned to N "
        "CPUs with its frameworks' pools sized N (default 1: a per-core comparison; "
        "the usable CPUs: an all-core one)",
    )
    add(
        "--rounds",
        type=positive_int,
        default=1,
        metavar="R",
        help="measure every variant R times, each in a fresh process, the variants taking "
        "turns (default 1; with --against at least 3): what frae diff needs to tell a change "
        "from the spread between processes",
    )


def _check_grid(args: argparse.Namespace, config: FRAEConfig | None) -> None:
    """``--code-step`` and ``--rate-weight`` checked against the grid they add to;
    ``ValueError`` (or ``TypeError``) naming the option."""
    grid, models = choose_grid(args.quick, config, args.batch, args.steps, args.operations)
    if args.code_step is not None:
        check_code_step(args.code_step)
        grid, models = with_quantized(grid, models, args.code_step)
    if args.rate_weight is not None:
        step = args.code_step if args.code_step is not None else (config or FRAEConfig()).code_step
        if step is None:
            raise ValueError(
                f"--rate-weight ({args.rate_weight:g}) needs --code-step, or a --config with a "
                "code_step: the rate counts the bits of the quantized code's symbols"
            )
        try:
            check_rate_weight(args.rate_weight, step)
        except ValueError as error:
            raise ValueError(f"--rate-weight: {error}") from error
        with_rated(grid, models, args.rate_weight)


def print_variants() -> None:
    """``--list``: each variant, its role, what it is, and how and whether it runs here."""
    for v in VARIANTS:
        reason = unavailable(v)
        print(
            f"{v.name:<28}{v.role:<12}{v.about}"
            + ("  [only when named]" if v.optional else "")
            + ("" if v.quick else "  [not in --quick]")
            + (f"  [width axis: {', '.join(v.wide)}]" if v.wide else "")
            + ("  [no state feedback]" if v.no_state_feedback else "")
            + ("  [no stream]" if v.no_stream else "")
            + (f"  [skipped: {reason}]" if reason else "")
        )


def main(argv: list[str] | None = None, prog: str = "python -m bench") -> None:
    """The command line: measure, write the report, print the summary."""
    options = parser(prog)
    args = options.parse_args(argv)
    if args.list:
        print_variants()
        return
    if args.train_steps < 5:
        options.error(f"--train-steps must be at least 5, got {args.train_steps}")
    try:
        config = read_config(args.config) if args.config is not None else None
        select(args.variants)
        _check_grid(args, config)  # refused here, before any variant runs
    except (ValueError, TypeError) as error:
        options.error(str(error))
    try:
        threads = check_count(args.threads)
    except ValueError as error:
        options.error(f"--{error}")
    if args.against is not None:
        from bench.comparing import against

        against.main(args, options)
        return
    settings = QUICK_SETTINGS if args.quick else Settings()
    settings = replace(
        settings,
        train_steps=args.train_steps,
        repeats=args.repeats or settings.repeats,
        threads=threads,
        rounds=args.rounds,
    )
    out = args.out or default_out()
    start = time.perf_counter()
    _, summary = benchmark(
        quick=args.quick,
        out=out,
        variants=args.variants,
        batches=args.batch,
        steps=args.steps,
        operations=args.operations,
        settings=settings,
        progress=not args.no_progress,
        config=config,
        code_step=args.code_step,
        rate_weight=args.rate_weight,
    )
    print(summary)
    print(f"\nreport: {out / 'report.md'} ({time.perf_counter() - start:.0f} s)")
