"""One dynamic partition per document, keyed by its source key (DESIGN.md, Identity)."""

import dagster as dg

documents_partitions = dg.DynamicPartitionsDefinition(name="documents")

#: Many small documents per run: a backfill of 1,000 documents launches 20 runs, not 1,000.
DOCUMENTS_PER_RUN = 50
batched_backfills = dg.BackfillPolicy.multi_run(max_partitions_per_run=DOCUMENTS_PER_RUN)
