"""The GraphQL documents the ``dagster dev`` tests send are valid for the installed Dagster.

Checked offline against the schema the webserver serves, so a Dagster upgrade that renames a
field fails here in a second with the field's name, not after minutes of ``dagster dev``.
"""

from __future__ import annotations

import dagster_dev_support
import pytest
from dagster_graphql.schema import create_schema
from graphql import GraphQLSchema, parse, validate

DOCUMENTS = {
    name: value
    for name, value in vars(dagster_dev_support).items()
    if name.endswith(("_QUERY", "_MUTATION"))
}


@pytest.fixture(scope="module")
def schema() -> GraphQLSchema:
    return create_schema().graphql_schema


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_dagster_dev_graphql_document_matches_the_installed_schema(
    schema: GraphQLSchema, name: str
) -> None:
    assert validate(schema, parse(DOCUMENTS[name])) == []
