"""Where the graph goes: ``graph:`` in the settings file (not fingerprinted: it names a sink,
it changes no chunk)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Neo4jSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str = Field(min_length=1, description="e.g. neo4j://db.internal:7687")
    user: str = "neo4j"
    #: The password is read from this environment variable, never from the settings file.
    password_env: str = "AGRAG_NEO4J_PASSWORD"
    database: str | None = None


class GraphSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: ``ladybug`` (embedded, the default), ``neo4j`` (a server), or ``none`` (no graph sink).
    backend: Literal["ladybug", "neo4j", "none"] = "ladybug"
    #: The embedded database's path; default ``<warehouse>/_graph/graph.lbdb``.
    path: str | None = None
    neo4j: Neo4jSettings | None = None
    #: Put each chunk's embedding on its node (for vector search inside the graph database).
    vectors: bool = True
