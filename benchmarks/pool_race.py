"""How often two steps that claim the last slot of a Dagster pool at the same instant both get it.

The ``embedding`` pool (deploy/dagster.yaml, ``granularity: op``) bounds how many embeddings
steps call the backend at once. Dagster 1.13's slot claim is not atomic (it checks for a free
slot, then marks the step assigned, then updates the slot row without re-checking that it is
free), so two processes claiming the last slot together can both succeed. This measures it:
``trials`` times, two processes wait at a barrier and call ``claim_concurrency_slot`` on a pool
of limit 1; it prints how many trials ended with both claimed, for SQLite and (``--postgres``)
a PostgreSQL started on loopback (agrag_pipeline_tests/deploy/postgres.py).

    .venv/bin/python -m benchmarks.pool_race --trials 20 --postgres
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import tempfile
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import yaml

POOL = "embedding"


def _claim(home: str, barrier: Barrier, run_id: str, out: Any) -> None:
    import dagster as dg

    with dg.DagsterInstance.from_config(home) as instance:
        barrier.wait()
        status = instance.event_log_storage.claim_concurrency_slot(POOL, run_id, "embeddings")
        out.put((run_id, status.is_claimed))


def double_claims(postgres_url: str | None, trials: int) -> int:
    """Trials (of ``trials``) in which both processes claimed the pool's one slot."""
    import dagster as dg

    home = tempfile.mkdtemp(prefix="agrag-pool-race-")
    config: dict[str, Any] = {
        "telemetry": {"enabled": False},
        "concurrency": {"pools": {"granularity": "op"}},
    }
    if postgres_url:
        config["storage"] = {"postgres": {"postgres_url": postgres_url}}
    Path(home, "dagster.yaml").write_text(yaml.safe_dump(config))
    with dg.DagsterInstance.from_config(home) as instance:
        instance.event_log_storage.set_concurrency_slots(POOL, 1)
    both = 0
    for trial in range(trials):
        barrier = mp.Barrier(2)
        out: Any = mp.Queue()
        run_ids = [f"a-{trial}", f"b-{trial}"]
        processes = [mp.Process(target=_claim, args=(home, barrier, r, out)) for r in run_ids]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        results = [out.get(timeout=60) for _ in processes]
        both += sum(claimed for _, claimed in results) == 2
        with dg.DagsterInstance.from_config(home) as instance:
            for run_id in run_ids:
                instance.event_log_storage.free_concurrency_slots_for_run(run_id)
    return both


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--postgres", action="store_true", help="also on a loopback PostgreSQL")
    args = parser.parse_args()
    figures = {"trials": args.trials, "sqlite_both_claimed": double_claims(None, args.trials)}
    if args.postgres:
        from agrag_pipeline_tests.deploy.postgres import running_postgres

        with running_postgres() as url:
            dagster_url = url.replace("postgresql://", "postgresql+psycopg2://", 1)
            figures["postgres_both_claimed"] = double_claims(dagster_url, args.trials)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
