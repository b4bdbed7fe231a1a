"""How many CPU threads the local model's math uses, when processes share the cores.

Why: torch starts one intra-op thread per core in every process. When a backfill runs two runs
at once (the shipped ``max_concurrent_runs: 2``), each run's embeddings step starts that many,
and on two cores the two runs' matrix products then thrash each other: measured
(``benchmarks.stages whole``, 20 documents, two runs at once) the whole graph took 1.75x the
model's own ``encode`` with torch's default threads and 1.27x with one thread per run. A run on
its own (a single materialisation, ``agrag materialize``) keeps every core.
"""

from __future__ import annotations

import os


def cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def share_of_cores(processes: int) -> int:
    """Threads for one of ``processes`` processes that share the cores evenly (at least 1)."""
    return max(1, cores() // max(1, processes))


def limit_threads(threads: int | None) -> None:
    """Set torch's intra-op threads for this process (None: leave torch's default)."""
    if threads is None:
        return
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
