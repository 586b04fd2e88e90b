"""``python -m bench``: the benchmark's command line (``bench.harness.main``)."""

from bench.harness import main

main()
