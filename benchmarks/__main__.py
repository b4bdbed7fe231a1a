"""``python -m benchmarks --documents N``: the benchmark suite (see ``benchmarks.suite``)."""

from benchmarks.suite import main

main()
