"""Neo4j, for teams that run it: the official driver, ``MERGE`` by id in batches.

It sends exactly the statements of ``store.write_statements`` (shared with the embedded
backend, which the tests run), inside one managed write transaction per document. Schema here
is uniqueness constraints on ``id`` per label, which also give ``MERGE`` its index. The password
comes from the environment variable the settings name, never from a settings file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from agrag_pipeline.sinks.graph.model import NODE_PROPERTIES
from agrag_pipeline.sinks.graph.store import GraphStore, Statement


def constraint_statements() -> list[str]:
    """Neo4j 5 uniqueness constraints (idempotent)."""
    return [
        f"CREATE CONSTRAINT agrag_{label.lower()}_id IF NOT EXISTS "
        f"FOR (n:{label}) REQUIRE n.id IS UNIQUE"
        for label in NODE_PROPERTIES
    ] + [
        f"CREATE INDEX agrag_{label.lower()}_document IF NOT EXISTS "
        f"FOR (n:{label}) ON (n.document_id)"
        for label in NODE_PROPERTIES
    ]


class Neo4jGraphStore(GraphStore):
    def __init__(
        self,
        uri: str,
        user: str = "neo4j",
        password_env: str = "AGRAG_NEO4J_PASSWORD",
        database: str | None = None,
    ) -> None:
        self.uri = uri
        self.name = f"neo4j:{uri}"
        self.user = user
        self.password_env = password_env
        self.database = database
        self._driver: Any = None
        self._schema_done = False

    def _driver_or_connect(self) -> Any:
        if self._driver is None:
            import neo4j

            password = os.environ.get(self.password_env)
            if password is None:
                raise RuntimeError(
                    f"the Neo4j password is read from ${self.password_env}, which is not set"
                )
            self._driver = neo4j.GraphDatabase.driver(self.uri, auth=(self.user, password))
        return self._driver

    def ensure_schema(self) -> None:
        if self._schema_done:
            return
        driver = self._driver_or_connect()
        with driver.session(database=self.database) as session:
            for statement in constraint_statements():
                session.run(statement)
        self._schema_done = True

    def _run(self, statements: Sequence[Statement]) -> None:
        self.ensure_schema()

        def work(tx: Any) -> None:
            for cypher, params in statements:
                tx.run(cypher, params).consume()

        with self._driver_or_connect().session(database=self.database) as session:
            session.execute_write(work)

    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._driver_or_connect().session(database=self.database) as session:
            return [record.data() for record in session.run(cypher, dict(params or {}))]

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None
        super().close()
