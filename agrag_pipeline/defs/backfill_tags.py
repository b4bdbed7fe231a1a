"""Make a backfill launched from the UI findable by the settings fingerprints its runs carry.

Why: the Runs page lists a backfill as one row and hides its runs (unless "Show runs within
backfills" is ticked), and filters that row by the backfill's own tags. A backfill launched from
the sensor carries the fingerprint tags (its ``RunRequest`` names them); one launched from the
UI's Materialize dialog carries only what the user typed, so filtering by a fingerprint found
neither it nor its runs. Dagster 1.13 has no hook at a backfill's creation and no API to add
tags to it afterwards, so the first step of a run of the backfill adds them to the rows Dagster
filters backfills by (``backfill_tags``, which ``add_backfill`` writes and nothing rewrites).

Not to the backfill's record, which the UI shows as the row's tags: the backfill daemon keeps
its progress in that record and rewrites it every tick, so a second writer could put back an
older copy and make the daemon forget what it requested and request it again. The row is found
by its fingerprints; its tag list in the UI shows only what it was launched with.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
from sqlalchemy import select

from agrag_pipeline.defs.dagster_internals import BackfillTagsTable, SqlRunStorage


def tag_backfill(
    instance: dg.DagsterInstance, backfill_id: str, tags: Mapping[str, str]
) -> list[str]:
    """Add the filter rows of the ``tags`` the backfill lacks; return the keys added."""
    storage = instance.run_storage
    if not isinstance(storage, SqlRunStorage) or not storage.has_backfill_tags_table():
        return []
    if instance.get_backfill(backfill_id) is None:
        return []
    rows = BackfillTagsTable.c
    with storage.connect() as conn:
        present = {
            row[0] for row in conn.execute(select(rows.key).where(rows.backfill_id == backfill_id))
        }
        missing = {k: v for k, v in tags.items() if k not in present}
        if missing:
            conn.execute(
                BackfillTagsTable.insert(),
                [{"backfill_id": backfill_id, "key": k, "value": v} for k, v in missing.items()],
            )
    return sorted(missing)
