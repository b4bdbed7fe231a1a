"""The shared deployment profile in ``deploy/``, checked as far as this machine allows:
``dagster.yaml`` through Dagster's own config validation against a real PostgreSQL,
``workspace.yaml`` against a real code-location server, and the Helm values' keys against the
chart's documented keys (no cluster or helm binary here), and ``docker-compose.yaml`` against
the Compose Specification's JSON schema (Docker has no compose plugin here)."""

from __future__ import annotations

import importlib.resources
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import jsonschema
import pytest
import yaml

from agrag_pipeline_tests.deploy.postgres import running_postgres

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with running_postgres() as url:
        # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; dagster-postgres ships psycopg2.
        yield url.replace("postgresql://", "postgresql+psycopg2://", 1)


def _home(tmp_path: Path, text: str | None = None) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(text or (DEPLOY / "dagster.yaml").read_text())
    return home


def test_the_deploy_instance_validates_and_stores_in_postgres_with_queue_pools_and_retries(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster._core.run_coordinator import QueuedRunCoordinator

    from agrag_pipeline.defs.postgres_storage import (
        PooledPostgresEventLogStorage,
        PooledPostgresRunStorage,
    )

    text = (DEPLOY / "dagster.yaml").read_text()
    storage = yaml.safe_load(text)["storage"]["custom"]
    assert "password" not in storage["config"]  # only env: names it
    monkeypatch.setenv("AGRAG_POSTGRES_URL", postgres_url)
    instance = dg.DagsterInstance.from_config(str(_home(tmp_path)))
    try:
        assert isinstance(instance.run_storage, PooledPostgresRunStorage)
        assert isinstance(instance.event_log_storage, PooledPostgresEventLogStorage)
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
        concurrency = instance.get_concurrency_config()
        assert concurrency.run_queue_config is not None
        assert concurrency.run_queue_config.max_concurrent_runs == 8
        assert concurrency.run_queue_config.tag_concurrency_limits == [
            {"key": "dagster/backfill", "limit": 1}
        ]
        assert concurrency.pool_config.default_pool_limit == 2
        assert instance.run_monitoring_enabled and instance.run_retries_enabled
        assert instance.run_retries_max_retries == 2
        # The embedding pool takes its limit from the default and can be changed at run time.
        instance.event_log_storage.set_concurrency_slots("embedding", 3)
        info = instance.event_log_storage.get_concurrency_info("embedding")
        assert info.slot_count == 3
    finally:
        instance.dispose()


def test_a_misspelt_key_in_the_deploy_instance_is_refused_by_dagster(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGRAG_POSTGRES_URL", postgres_url)
    text = (DEPLOY / "dagster.yaml").read_text().replace("max_retries: 2", "max_retires: 2")
    with pytest.raises(dg.DagsterInvalidConfigError, match="max_retires"):
        dg.DagsterInstance.from_config(str(_home(tmp_path, text)))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_deploy_workspace_loads_the_pipeline_from_a_code_server(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget

    port = _free_port()
    env = dict(os.environ, AGRAG_POSTGRES_URL=postgres_url, DAGSTER_HOME=str(_home(tmp_path)))
    dagster_cli = str(Path(sys.executable).with_name("dagster"))
    argv = [dagster_cli, "code-server", "start", "-m", "agrag_pipeline.definitions"]
    argv += ["-h", "127.0.0.1", "-p", str(port)]
    log = open(tmp_path / "code-server.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        health = [dagster_cli, "api", "grpc-health-check", "-p", str(port), "-h", "127.0.0.1"]
        deadline = time.monotonic() + 120
        while subprocess.run(health, env=env, capture_output=True).returncode != 0:
            assert server.poll() is None, (tmp_path / "code-server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the code server did not come up in 120 s"
            time.sleep(1)
        monkeypatch.setenv("AGRAG_POSTGRES_URL", postgres_url)
        monkeypatch.setenv("AGRAG_CODE_SERVER_HOST", "127.0.0.1")
        monkeypatch.setenv("AGRAG_CODE_SERVER_PORT", str(port))
        instance = dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
        target = WorkspaceFileTarget(paths=[str(DEPLOY / "workspace.yaml")])
        with WorkspaceProcessContext(instance, target) as context:
            workspace = context.create_request_context()
            location = workspace.get_code_location("agrag_pipeline")
            (repository,) = location.get_repositories().values()
            nodes = {n.asset_key.to_user_string(): n for n in repository.get_asset_node_snaps()}
            assert {"raw_documents", "sections", "chunks", "embeddings"} <= set(nodes)
            assert nodes["embeddings"].pools == {"embedding"}
        instance.dispose()
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:  # never leave it running: kill it, then fail
            server.kill()
            server.wait()
            raise
        finally:
            log.close()


#: The chart's documented keys this profile sets (dagster-io/dagster helm/dagster/values.yaml,
#: the chart of dagster 1.13), as dotted paths; a list's items are checked under ``[]``.
HELM_KEYS = {
    "global",
    "global.postgresqlSecretName",
    "generatePostgresqlPasswordSecret",
    "postgresql",
    "postgresql.enabled",
    "postgresql.postgresqlHost",
    "postgresql.postgresqlUsername",
    "postgresql.postgresqlDatabase",
    "postgresql.service",
    "postgresql.service.port",
    "dagster-user-deployments",
    "dagster-user-deployments.enabled",
    "dagster-user-deployments.deployments",
    "dagster-user-deployments.deployments[].name",
    "dagster-user-deployments.deployments[].image",
    "dagster-user-deployments.deployments[].image.repository",
    "dagster-user-deployments.deployments[].image.tag",
    "dagster-user-deployments.deployments[].image.pullPolicy",
    "dagster-user-deployments.deployments[].dagsterApiGrpcArgs",
    "dagster-user-deployments.deployments[].port",
    "dagster-user-deployments.deployments[].envSecrets",
    "dagster-user-deployments.deployments[].envSecrets[].name",
    "dagster-user-deployments.deployments[].env",
    "dagster-user-deployments.deployments[].env[].name",
    "dagster-user-deployments.deployments[].env[].value",
    "dagster-user-deployments.deployments[].resources",
    "runLauncher",
    "runLauncher.type",
    "runLauncher.config",
    "runLauncher.config.k8sRunLauncher",
    "runLauncher.config.k8sRunLauncher.envSecrets",
    "runLauncher.config.k8sRunLauncher.envSecrets[].name",
    "runLauncher.config.k8sRunLauncher.runK8sConfig",
    "dagsterDaemon",
    "dagsterDaemon.enabled",
    "dagsterDaemon.runCoordinator",
    "dagsterDaemon.runCoordinator.enabled",
    "dagsterDaemon.runCoordinator.type",
    "dagsterDaemon.runCoordinator.config",
    "dagsterDaemon.runCoordinator.config.queuedRunCoordinator",
    "dagsterDaemon.runCoordinator.config.queuedRunCoordinator.maxConcurrentRuns",
    "dagsterDaemon.runCoordinator.config.queuedRunCoordinator.tagConcurrencyLimits",
    "dagsterDaemon.runCoordinator.config.queuedRunCoordinator.tagConcurrencyLimits[].key",
    "dagsterDaemon.runCoordinator.config.queuedRunCoordinator.tagConcurrencyLimits[].limit",
    "dagsterDaemon.runMonitoring",
    "dagsterDaemon.runMonitoring.enabled",
    "dagsterDaemon.runMonitoring.startTimeoutSeconds",
    "dagsterDaemon.runMonitoring.pollIntervalSeconds",
    "dagsterDaemon.runMonitoring.maxResumeRunAttempts",
    "dagsterDaemon.runRetries",
    "dagsterDaemon.runRetries.enabled",
    "dagsterDaemon.runRetries.maxRetries",
    "rabbitmq",
    "rabbitmq.enabled",
    "redis",
    "redis.enabled",
    "telemetry",
    "telemetry.enabled",
}
#: Free-form Kubernetes objects under these keys (resources, container config) are not chart keys.
HELM_OPAQUE = ("runLauncher.config.k8sRunLauncher.runK8sConfig", ".resources")


def _paths(value: object, prefix: str = "") -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, child in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            found.add(path)
            if not any(path.endswith(o) or path == o for o in HELM_OPAQUE):
                found |= _paths(child, path)
    elif isinstance(value, list):
        for item in value:
            found |= _paths(item, prefix + "[]")
    return found


def test_the_helm_values_use_only_the_charts_keys_and_launch_one_pod_per_run() -> None:
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    unknown = _paths(values) - HELM_KEYS
    assert not unknown, f"keys the dagster chart does not document: {sorted(unknown)}"
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["postgresql"]["enabled"] is False
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "agrag_pipeline.definitions"]
    text = (DEPLOY / "helm" / "values.yaml").read_text()
    assert "postgresqlPassword" not in text and "AWS_SECRET_ACCESS_KEY:" not in text


def test_the_compose_file_and_dockerfile_name_the_profile_and_keep_secrets_out() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    assert {"postgres", "seaweedfs", "code", "webserver", "daemon"} <= set(compose["services"])
    env = compose["x-agrag-env"]
    assert env["AGRAG_WAREHOUSE_ROOT"].startswith("s3://")
    assert env["AWS_SECRET_ACCESS_KEY"].startswith("${")  # from the caller's environment
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert '"torch==2.13.0"' in dockerfile and "whl/cpu" in dockerfile


def _compose_spec_errors(compose: dict[str, object]) -> list[str]:
    """The Compose Specification's JSON schema (as check-jsonschema vendors it from
    compose-spec/compose-spec) applied to a compose file: what ``docker compose config`` checks
    first, without Docker (this machine has no compose plugin)."""
    resource = importlib.resources.files("check_jsonschema") / "builtin_schemas/vendor"
    schema = json.loads((resource / "compose-spec.json").read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(compose)]


def test_the_compose_file_validates_against_the_compose_specification() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    assert _compose_spec_errors(compose) == []
    compose["services"]["daemon"]["enviroment"] = {"X": "1"}  # a misspelt key is refused
    assert any("enviroment" in error for error in _compose_spec_errors(compose))
