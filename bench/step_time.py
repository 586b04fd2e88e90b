"""Steady-state µs per time step of ``predict`` and a training step for a few backends at one
shape: a shortcut to the harness (``python -m bench`` measures everything).

Each backend runs in a process of its own, as in the harness; a training step is
``fit(x, epochs=K)`` / K; compilation is excluded (it is the first call, timed apart).

    python -m bench.step_time tf_while impls.tf_while:TextbookTFWhileBackend --steps 1000
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.harness import Settings, Variant, run


def main(argv: list[str] | None = None) -> None:
    """Measure the named backends and print one row each, with the ratio to the fastest."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("backends", nargs="+", help="registered names or import paths")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--train-steps", type=int, default=5)
    args = parser.parse_args(argv)
    variants = [
        Variant(name, name, "compiled", "named on the command line") for name in args.backends
    ]
    settings = Settings(repeats=args.repeats, train_steps=args.train_steps)
    point = (args.batch, args.steps, ("predict", "train_step"))
    with tempfile.TemporaryDirectory() as folder:
        records = run(variants, [point], settings, Path(folder), progress=False)
    timed = {
        (r["variant"], r["operation"]): r["us_per_step"] for r in records if "us_per_step" in r
    }
    fastest = {
        op: min((v for (_, o), v in timed.items() if o == op), default=float("nan"))
        for op in ("predict", "train_step")
    }
    print(f"{'backend':<42}{'predict µs/step':>17}{'×best':>7}{'train µs/step':>15}{'×best':>7}")
    for name in args.backends:
        cells = []
        for op, width in (("predict", 17), ("train_step", 15)):
            value = timed.get((name, op))
            cells.append(
                f"{'—':>{width}}{'':>7}"
                if value is None
                else f"{value:>{width}.2f}{value / fastest[op]:>7.1f}"
            )
        print(f"{name:<42}{''.join(cells)}")
    failures = [r for r in records if "error" in r or "skipped" in r]
    for r in failures:
        print(f"{r['variant']}: {r.get('error') or r.get('skipped')}")
    print(
        f"B={args.batch} T={args.steps}; median of at least {args.repeats}, "
        "each backend in its own process"
    )


if __name__ == "__main__":
    main()
