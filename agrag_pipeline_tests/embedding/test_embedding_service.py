"""``agrag serve-embeddings`` as a real process with the real model, and the ``openai``
backend, a pipeline run and Dagster's ``embedding`` pool against it.

One server per session (a subprocess on a free loopback port, stopped by its pid). Tolerance:
the server and the local backend run the same weights on the same CPU, but batch the texts
differently (the client sends ``batch_size`` texts per request), so padding changes the float
rounding: vectors must agree within ``ATOL`` per component and cosine ``>= MIN_COSINE``.
"""

from __future__ import annotations

import base64
import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import requests
import yaml

from agrag_pipeline.embedding.factory import make_embedder
from agrag_pipeline.embedding.openai_compatible import (
    EmbeddingRequestError,
    OpenAICompatibleEmbedder,
)
from agrag_pipeline.embedding.sentence_transformer import SentenceTransformerEmbedder
from agrag_pipeline.embedding.settings import EmbeddingSettings, OpenAICompatibleSettings
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.pipeline import run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, load_settings

RUST_BOOK = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "markdown" / "rust-book"
#: Every test here needs the server process with the model loaded (start ~10 s).
pytestmark = pytest.mark.slow

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
ATOL = 1e-5
MIN_COSINE = 0.99999
#: The server's limits in these tests (small, so the limits are cheap to hit).
MAX_REQUEST_MB = 1
MAX_INPUTS = 64
MAX_WAITING = 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Service:
    url: str  # the API root, .../v1
    root: str  # the server root, for /health and /stats
    process: subprocess.Popen[bytes]

    def stats(self) -> dict[str, int]:
        body: dict[str, int] = requests.get(f"{self.root}/stats", timeout=10).json()
        return body

    def reset_stats(self) -> None:
        requests.post(f"{self.root}/stats/reset", timeout=10).raise_for_status()

    def admin(self, action: str) -> None:
        requests.post(f"{self.root}/admin/{action}", timeout=10).raise_for_status()


def start_server(tmp: Path, *extra: str) -> Service:
    port = free_port()
    log = (tmp / f"server-{port}.log").open("wb")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agrag_pipeline.cli",
            "serve-embeddings",
            "--port",
            str(port),
            "--settings",
            str(DEFAULT_SETTINGS_PATH),
            "--cache-dir",
            str(tmp / "server-cache"),
            "--max-request-mb",
            str(MAX_REQUEST_MB),
            "--max-inputs",
            str(MAX_INPUTS),
            "--max-waiting",
            str(MAX_WAITING),
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {(tmp / log.name).read_text()[-2000:]}")
        try:
            if requests.get(f"{root}/health", timeout=2).status_code == 200:
                return Service(f"{root}/v1", root, process)
        except requests.ConnectionError:
            pass
        time.sleep(0.3)
    stop_server(process)
    raise RuntimeError("the embedding server did not come up in 180 s")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    server = start_server(tmp_path_factory.mktemp("embedding-service"))
    try:
        yield server
    finally:
        stop_server(server.process)


def client_settings(service: Service, **changes: object) -> EmbeddingSettings:
    """The pipeline's embedding settings with the openai backend pointed at the server."""
    openai = OpenAICompatibleSettings(
        base_url=service.url, max_sequence_tokens=256, timeout_s=120, max_retries=8
    )
    return EmbeddingSettings(backend="openai", openai=openai, **changes)


def corpus_texts(names: list[str]) -> list[str]:
    """The contextual_text of every chunk of real Rust-book chapters (what the pipeline embeds)."""
    runtime = Runtime(settings=load_settings())
    texts: list[str] = []
    for name in names:
        path = RUST_BOOK / name
        parsed = parse_document(path.read_bytes(), path.name)
        chunks = runtime.chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
        texts.extend(c.contextual_text for c in chunks)
    return texts


def assert_close(remote: np.ndarray, local: np.ndarray) -> None:
    assert remote.shape == local.shape
    assert float(np.abs(remote - local).max()) <= ATOL
    assert float((remote * local).sum(axis=1).min()) >= MIN_COSINE


def post(service: Service, payload: object) -> requests.Response:
    return requests.post(f"{service.url}/embeddings", json=payload, timeout=120)


# -- (a) the openai backend against the real model ------------------------------------------


def test_openai_backend_at_the_server_matches_the_local_model_on_corpus_chunks(
    service: Service, minilm: SentenceTransformerEmbedder, tmp_path: Path
):
    texts = corpus_texts(["ch04-02-references-and-borrowing.md", "ch08-03-hash-maps.md"])
    assert len(texts) > 32  # more than one request
    remote = make_embedder(client_settings(service), tmp_path)
    assert isinstance(remote, OpenAICompatibleEmbedder)
    before = service.stats()["requests"]
    vectors = remote.embed(texts)
    assert service.stats()["requests"] - before == -(-len(texts) // 32)
    assert_close(vectors, minilm.embed(texts))
    assert remote.dimension == minilm.dimension == 384


def test_base64_encoding_gives_the_same_vectors_as_floats(service: Service):
    texts = ["Ownership rules in Rust.", "A HashMap stores keys with values."]
    floats = post(service, {"model": MODEL, "input": texts}).json()
    packed = post(service, {"model": MODEL, "input": texts, "encoding_format": "base64"}).json()
    for as_float, as_b64 in zip(floats["data"], packed["data"], strict=True):
        decoded = np.frombuffer(base64.b64decode(as_b64["embedding"]), dtype="<f4")
        assert np.array_equal(decoded, np.asarray(as_float["embedding"], dtype=np.float32))
    assert floats["model"] == MODEL and floats["object"] == "list"
    assert [d["index"] for d in floats["data"]] == [0, 1]
    assert floats["usage"]["prompt_tokens"] == floats["usage"]["total_tokens"] > 10


def test_a_single_string_input_is_one_embedding(service: Service):
    body = post(service, {"model": MODEL, "input": "Rust has no garbage collector."}).json()
    assert len(body["data"]) == 1 and len(body["data"][0]["embedding"]) == 384


def test_a_text_over_the_models_limit_is_embedded_and_reported_truncated(service: Service):
    long_text = " ".join(["ownership"] * 600)  # ~600 tokens; the model reads 256
    response = post(service, {"model": MODEL, "input": [long_text, "short"]})
    assert response.status_code == 200
    assert response.headers["X-Truncated-Inputs"] == "1"
    assert response.json()["usage"]["prompt_tokens"] > 600


def test_models_route_lists_the_served_model_with_its_dimension(service: Service):
    models = requests.get(f"{service.url}/models", timeout=10).json()
    (entry,) = models["data"]
    assert entry["id"] == MODEL and entry["object"] == "model"
    assert entry["dimension"] == 384 and entry["max_sequence_tokens"] == 256
    assert len(entry["fingerprint"]) == 64


@pytest.mark.parametrize(
    ("payload", "status", "words"),
    [
        ({"model": MODEL, "input": []}, 400, "'input' must be a string or a non-empty list"),
        ({"model": MODEL, "input": ["fine", ""]}, 400, "'input[1]' is an empty string"),
        ({"model": MODEL, "input": [1, 2, 3]}, 400, "token ids are not accepted"),
        ({"model": MODEL, "input": ["a", {"x": 1}]}, 400, "'input[1]' is dict, not a string"),
        ({"input": ["a"]}, 400, "'model' is required"),
        ({"model": "text-embedding-3-small", "input": "a"}, 404, "is not served here"),
        ({"model": MODEL, "input": "a", "encoding_format": "int8"}, 400, "'encoding_format'"),
        ({"model": MODEL, "input": "a", "dimensions": 128}, 400, "have 384"),
        ({"model": MODEL, "input": ["x"] * (MAX_INPUTS + 1)}, 400, f"at most {MAX_INPUTS}"),
        ([1, 2], 400, "must be a JSON object"),
    ],
)
def test_bad_requests_are_refused_naming_the_problem(service, payload, status, words):
    response = post(service, payload)
    assert response.status_code == status
    error = response.json()["error"]
    assert words in error["message"]


def test_a_body_that_is_not_json_is_a_400(service: Service):
    response = requests.post(f"{service.url}/embeddings", data=b"{not json", timeout=10)
    assert response.status_code == 400
    assert "not JSON" in response.json()["error"]["message"]


def test_a_body_over_the_size_limit_is_refused_before_embedding(service: Service):
    before = service.stats()["texts"]
    big = {"model": MODEL, "input": ["word " * 30_000] * 8}  # ~1.2 MB
    response = post(service, big)
    assert response.status_code == 413
    assert f"at most {MAX_REQUEST_MB << 20}" in response.json()["error"]["message"]
    assert service.stats()["texts"] == before


def test_the_client_reports_a_model_the_server_does_not_serve(service: Service, tmp_path: Path):
    remote = make_embedder(client_settings(service, model="some/other-model"), tmp_path)
    with pytest.raises(EmbeddingRequestError, match=r"answered 404.*is not served here"):
        remote.embed(["a text"])


def test_requests_beyond_the_waiting_limit_get_503_with_retry_after(service: Service):
    texts = corpus_texts(["ch08-01-vectors.md"])[:MAX_INPUTS]
    payload = {"model": MODEL, "input": texts}
    service.reset_stats()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: post(service, payload), range(8)))
    statuses = sorted(r.status_code for r in responses)
    # One computes, MAX_WAITING wait, the rest are told to come back.
    assert statuses.count(200) >= 1 + MAX_WAITING
    busy = [r for r in responses if r.status_code == 503]
    assert busy and all(r.headers["Retry-After"] == "1" for r in busy)
    assert "wait for the model" in busy[0].json()["error"]["message"]
    stats = service.stats()
    # The server counted them: at the first refusal, one computing, MAX_WAITING waiting, itself.
    assert stats["busy"] == len(busy) and stats["max_in_flight"] >= MAX_WAITING + 2


# -- (b) a pipeline run through the server ---------------------------------------------------


def runtime_for(tmp: Path, raw: Path, embedding: EmbeddingSettings) -> Runtime:
    settings = load_settings().model_copy(update={"embedding": embedding})
    return Runtime(
        settings=settings, raw_root=raw, warehouse_root=str(tmp / "warehouse"), cache_dir=tmp / "c"
    )


def test_a_pipeline_run_through_the_server_writes_the_local_runs_vectors(
    service: Service, tmp_path: Path
):
    raw = tmp_path / "raw"
    raw.mkdir()
    keys = ["ch06-02-match.md", "ch10-02-traits.md"]
    for key in keys:
        shutil.copyfile(RUST_BOOK / key, raw / key)
    local = runtime_for(tmp_path / "local", raw, EmbeddingSettings())
    remote = runtime_for(tmp_path / "remote", raw, client_settings(service))
    tables: dict[str, list[pa.Table]] = {}
    for key in keys:
        for runtime in (local, remote):
            document = run_document(runtime, key).document
            assert document.id is not None
            tables.setdefault(key, []).append(
                runtime.warehouse.read_table("embeddings", document.id)
            )
    for key, (ours, theirs) in tables.items():
        assert ours.num_rows == theirs.num_rows > 10, key
        assert ours.column("chunk_id").to_pylist() == theirs.column("chunk_id").to_pylist()
        assert theirs.column("model").to_pylist() == [MODEL] * theirs.num_rows
        local_vectors = np.stack(ours.column("vector").to_numpy(zero_copy_only=False))
        remote_vectors = np.stack(theirs.column("vector").to_numpy(zero_copy_only=False))
        assert_close(remote_vectors, local_vectors)
        # Each backend's own fingerprint is recorded (the endpoint's weights are not known).
        assert set(theirs.column("embedding_fingerprint").to_pylist()) == {
            remote.embedder.fingerprint
        }
        assert remote.embedder.fingerprint != local.embedder.fingerprint


# -- (c) Dagster's embedding pool, seen from the server -------------------------------------

#: Two chapters (about 22 chunks) per pool limit, one run each.
POOL_DOCUMENTS = {
    1: ["ch05-01-defining-structs.md", "ch06-02-match.md"],
    2: ["ch08-01-vectors.md", "ch08-03-hash-maps.md"],
}
BLOCKED = "blocked by limit for pool embedding"


def step_events(instance: Any, run_id: str) -> dict[str, Any]:
    """The embeddings step's start and end times in a run, and whether the pool blocked it."""
    from dagster import DagsterEventType

    times: dict[str, Any] = {"blocked": False}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or event.step_key != "embeddings":
            continue
        if event.event_type == DagsterEventType.STEP_START:
            times["start"] = entry.timestamp
        elif event.event_type == DagsterEventType.STEP_SUCCESS:
            times["end"] = entry.timestamp
        elif BLOCKED in (event.message or ""):
            times["blocked"] = True
    return times


def wait_for(condition: Callable[[], bool], runs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + 300
    while not condition():
        assert all(run.poll() is None for run in runs), "a run ended early"
        assert time.monotonic() < deadline, "timed out waiting for the runs"
        time.sleep(0.2)


def materialize_embeddings(env: dict[str, str], key: str, log: Path) -> subprocess.Popen[bytes]:
    """``dagster asset materialize`` of the embeddings of one document, in its own process."""
    command = [
        str(Path(sys.executable).with_name("dagster")),
        "asset",
        "materialize",
        "-m",
        "agrag_pipeline.definitions",
        "--select",
        "embeddings",
        "--partition",
        key,
    ]
    return subprocess.Popen(command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    from agrag_pipeline_tests.deploy.postgres import running_postgres

    with running_postgres() as url:
        # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; dagster-postgres ships psycopg2.
        yield url.replace("postgresql://", "postgresql+psycopg2://", 1)


def test_the_embedding_pool_limits_requests_in_flight_at_the_server(
    service: Service, tmp_path: Path, postgres_url: str
):
    import dagster as dg

    home, raw = tmp_path / "dagster_home", tmp_path / "raw"
    home.mkdir()
    raw.mkdir()
    # The shared deployment's storage (deploy/dagster.yaml): PostgreSQL.
    instance_config = {
        "storage": {"postgres": {"postgres_url": postgres_url}},
        "concurrency": {"pools": {"granularity": "op"}},
        "telemetry": {"enabled": False},
    }
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance_config))
    keys = [key for pair in POOL_DOCUMENTS.values() for key in pair]
    for key in keys:
        shutil.copyfile(RUST_BOOK / key, raw / key)
    # Several requests per run.
    embedding = client_settings(service, batch_size=4)
    settings = load_settings().model_copy(update={"embedding": embedding})
    settings_path = tmp_path / "pipeline.yaml"
    settings_path.write_text(yaml.safe_dump(settings.model_dump(mode="json")))
    runtime = Runtime.from_files(settings_path, raw, str(tmp_path / "warehouse"))
    assert runtime.settings.embedding == embedding
    # Sections and chunks first, without Dagster: the runs only embed.
    chunked = {key: run_document(runtime, key, embed=False) for key in keys}
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "AGRAG_RAW_ROOT": str(raw),
        "AGRAG_WAREHOUSE_ROOT": str(tmp_path / "warehouse"),
        "AGRAG_SETTINGS": str(settings_path),
        "AGRAG_CACHE_DIR": str(tmp_path / "cache"),
        "AGRAG_EXECUTOR": "in_process",
    }
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("documents", keys)
        seen: dict[int, dict[str, int]] = {}
        steps: dict[int, list[dict[str, Any]]] = {}
        for limit, pair in POOL_DOCUMENTS.items():
            instance.event_log_storage.set_concurrency_slots("embedding", limit)
            service.reset_stats()
            # The server holds requests before the model, so however fast the model is, the
            # runs are caught mid-step: with room for both, both steps' requests wait at the
            # server; with one slot, one step's request waits there and Dagster holds the other.
            # The second run starts once the first holds its slot: Dagster's claim is not
            # atomic, and two steps claiming the last slot at the same instant both got it
            # (seen here on SQLite; README, Known limitations).
            service.admin("pause")
            runs = [materialize_embeddings(env, pair[0], tmp_path / f"run-{pair[0]}.log")]
            wait_for(lambda: service.stats()["in_flight"] == 1, runs)
            pool = instance.event_log_storage.get_concurrency_info("embedding")
            assert pool.active_slot_count == 1
            runs.append(materialize_embeddings(env, pair[1], tmp_path / f"run-{pair[1]}.log"))
            if limit == 1:
                wait_for(
                    lambda: (
                        instance.event_log_storage.get_concurrency_info(
                            "embedding"
                        ).pending_step_count
                        == 1
                    ),
                    runs,
                )
                pool = instance.event_log_storage.get_concurrency_info("embedding")
                assert pool.active_slot_count == 1 and pool.pending_step_count == 1
                assert service.stats()["in_flight"] == 1
            else:
                wait_for(lambda: service.stats()["in_flight"] == 2, runs)
            service.admin("resume")
            for run, key in zip(runs, pair, strict=True):
                assert run.wait(timeout=600) == 0, (tmp_path / f"run-{key}.log").read_text()[-3000:]
            seen[limit] = service.stats()
            assert seen[limit]["texts"] == sum(len(chunked[k].chunks) for k in pair)
            run_ids = [r.dagster_run.run_id for r in instance.get_run_records()[:2]]
            steps[limit] = sorted(
                (step_events(instance, run_id) for run_id in run_ids), key=lambda t: t["start"]
            )
        records = instance.get_run_records()
    assert len(records) == 4 and all(r.dagster_run.is_success for r in records)
    # Limit 1: the second run's step waited for the first's slot (Dagster says so, and it
    # started only when the first had finished), and the server never had two requests at once.
    first, second = steps[1]
    assert not first["blocked"] and second["blocked"]
    assert second["start"] >= first["end"]
    assert seen[1]["max_in_flight"] == 1
    # Limit 2: both steps ran at once, unblocked, and their requests overlapped at the server.
    first, second = steps[2]
    assert not first["blocked"] and not second["blocked"]
    assert second["start"] < first["end"]
    assert seen[2]["max_in_flight"] == 2
    for result in chunked.values():
        assert result.document.id is not None
        table = runtime.warehouse.read_table("embeddings", result.document.id)
        assert table.column("chunk_id").to_pylist() == [str(c.id) for c in result.chunks]
