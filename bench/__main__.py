"""``python -m bench``: the benchmark's command line (``bench.cli.main``)."""

from bench.cli import main

main()
