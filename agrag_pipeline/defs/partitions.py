"""One dynamic partition per document, keyed by its source key (DESIGN.md, Identity).

Trade-off: for a dynamic partitions definition the UI's Materialize dialog always offers "Add a
partition" (Dagster 1.13 has no switch to hide it), so a user can add a key no file has. Such a
partition fails at ``raw_documents`` with an error naming the missing file, and the sensor
removes registered partitions whose file is absent on its next tick. Static partitions would
hide the button but need a code reload for every new document, so dynamic partitions stay.

Runs are cut by ``BackfillPolicy.multi_run``: up to ``DOCUMENTS_PER_RUN`` documents per run,
and two runs at once (``max_concurrent_runs: 2`` in the shipped dagster.yaml) use both cores.
"""

import dagster as dg

documents_partitions = dg.DynamicPartitionsDefinition(name="documents")

#: Many small documents per run: a backfill of 1,000 documents launches 20 runs, not 1,000.
DOCUMENTS_PER_RUN = 50
batched_backfills = dg.BackfillPolicy.multi_run(max_partitions_per_run=DOCUMENTS_PER_RUN)
