"""Each per-document asset's code version, folding in the code versions of everything upstream.

Why: Dagster 1.13 flags a partition "Unsynced" when its own code version changed or when an
upstream partition was materialised again with a new data version; it does not pass a stale
upstream on (a chunks partition made with another chunker leaves its embeddings "fresh" until
chunks runs again). An asset's output does depend on every setting upstream of it (embeddings
embed the chunks the chunker made), so each code version here is the asset's own version plus
a short hash of its parents' (chained) code versions: a changed chunker setting changes the
code version of chunks, embeddings, graph, search_index, extractions and entity_graph at once,
and each of their partitions reads "Unsynced" (code version changed) after a reload, before any
run. After runs with unchanged settings nothing changes (the versions are the same in batched,
single, UI, schedule and CLI runs), so nothing reads "Unsynced" falsely.

The failure records keep the code version a step failed on, and the nightly schedule compares
them with these (``freshness.failed_as_before``): a document that failed at embeddings is tried
again after a chunker change, which gave it other chunks.
"""

from __future__ import annotations

from agrag_pipeline.defs.extraction import extraction_code_versions
from agrag_pipeline.defs.graph import GRAPH_CODE_VERSION
from agrag_pipeline.defs.index import INDEX_CODE_VERSION
from agrag_pipeline.fingerprints import fingerprint, settings_dict, short
from agrag_pipeline.runtime import Runtime

#: Each per-document asset's upstream assets (the ``deps`` of its definition; a test compares).
PARENTS: dict[str, tuple[str, ...]] = {
    "raw_documents": (),
    "sections": ("raw_documents",),
    "chunks": ("sections",),
    "embeddings": ("chunks",),
    "graph": ("embeddings",),
    "search_index": ("embeddings",),
    "extractions": ("chunks",),
    "entity_graph": ("extractions", "graph"),
}

#: Hex characters of the upstream hash in a code version.
UPSTREAM_CHARS = 8


def own_code_versions(runtime: Runtime) -> dict[str, str]:
    """What each asset's own code and settings are, without anything upstream."""
    index_fingerprint = fingerprint(settings_dict(runtime.settings.index))
    return {
        **runtime.code_versions(),
        "graph": GRAPH_CODE_VERSION,
        # The index's settings change what its rows hold (BM25's text): a new version.
        "search_index": f"{INDEX_CODE_VERSION}-{short(index_fingerprint)}",
        **extraction_code_versions(runtime),
    }


def chain(own: dict[str, str], parents: dict[str, tuple[str, ...]] = PARENTS) -> dict[str, str]:
    """``own`` with each version followed by ``~`` and a hash of its parents' chained versions."""
    chained: dict[str, str] = {}

    def version(asset: str) -> str:
        if asset not in chained:
            ups = parents.get(asset, ())
            upstream = {parent: version(parent) for parent in ups}
            chained[asset] = (
                f"{own[asset]}~{fingerprint(upstream)[:UPSTREAM_CHARS]}" if ups else own[asset]
            )
        return chained[asset]

    for asset in own:
        version(asset)
    return chained


def asset_code_versions(runtime: Runtime) -> dict[str, str]:
    """The code version of every per-document asset under ``runtime``'s settings."""
    return chain(own_code_versions(runtime))
