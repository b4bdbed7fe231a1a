"""One SeaweedFS S3 server for every deploy test of the session, and a Redis per test that
asks for one (both started on loopback)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from agrag_pipeline_tests.deploy.seaweed import BUCKET, SeaweedS3, start_seaweed
from agrag_pipeline_tests.deploy.stack import running_redis


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    server = start_seaweed(tmp_path_factory.mktemp("seaweed"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server: SeaweedS3, monkeypatch: pytest.MonkeyPatch) -> SeaweedS3:
    """The server's credentials and endpoint in the environment, as a deployment sets them."""
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    return s3_server


@pytest.fixture
def bucket_uri(s3_env: SeaweedS3) -> str:
    """A fresh ``s3://`` prefix for one test, in the session's bucket."""
    return f"s3://{BUCKET}/{secrets.token_hex(6)}"


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A Redis of the test's own (broker and result backend for Celery), stopped by its pid."""
    with running_redis(tmp_path) as url:
        yield url
