"""The OpenAI-compatible backend against a real local HTTP server that speaks the API."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from agrag_pipeline.embedding.factory import make_embedder
from agrag_pipeline.embedding.openai_compatible import (
    EmbeddingRequestError,
    OpenAICompatibleEmbedder,
)
from agrag_pipeline.embedding.settings import EmbeddingSettings, OpenAICompatibleSettings


def vector_for(text: str, dimension: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return np.random.default_rng(seed).standard_normal(dimension).round(6).tolist()


@dataclass
class Server:
    """What the server will do next (``script``, then ``ok``) and what it was sent."""

    url: str
    dimension: int = 8
    script: deque[str] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            server.requests.append({"path": self.path, "headers": dict(self.headers), **payload})
            action = server.script.popleft() if server.script else "ok"
            inputs = payload["input"]
            if action == "429":
                self._send(429, b'{"error": "rate limited"}', {"Retry-After": "3"})
                return
            if action == "500":
                self._send(500, b'{"error": "boom"}')
                return
            if action == "400":
                self._send(400, b'{"error": {"message": "input too long"}}')
                return
            if action == "not-json":
                self._send(200, b"<html>gateway</html>")
                return
            if action == "slow":
                time.sleep(1.0)
            dimension = server.dimension + (1 if action == "wrong-dim" else 0)
            items = [
                {"object": "embedding", "index": i, "embedding": vector_for(t, dimension)}
                for i, t in enumerate(inputs)
            ]
            if action == "short":
                items = items[:-1]
            items.reverse()  # servers may answer out of order; "index" says which is which
            body = {"object": "list", "model": payload["model"], "data": items}
            self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    return Handler


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def embedder_for(
    server: Server, *, batch_size: int = 16, sleeps: list[float] | None = None, **overrides: Any
) -> OpenAICompatibleEmbedder:
    options: dict[str, Any] = {
        "base_url": server.url,
        "dimension": server.dimension,
        "max_retries": 3,
        "timeout_s": 5.0,
        "api_key_env": "AGRAG_TEST_EMBEDDING_KEY",
    }
    options.update(overrides)
    recorded = sleeps if sleeps is not None else []
    return OpenAICompatibleEmbedder(
        OpenAICompatibleSettings(**options),
        model="test-embed",
        batch_size=batch_size,
        normalize=False,
        sleep=recorded.append,
    )


def test_embeddings_come_back_in_input_order_with_the_key(server, monkeypatch):
    monkeypatch.setenv("AGRAG_TEST_EMBEDDING_KEY", "sk-test-123")
    texts = ["alpha", "beta", "gamma"]
    vectors = embedder_for(server).embed(texts)
    expected = np.array([vector_for(t, 8) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    request = server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["model"] == "test-embed" and request["input"] == texts
    assert request["headers"]["Authorization"] == "Bearer sk-test-123"


def test_inputs_are_sent_in_batches(server):
    texts = [f"text {i}" for i in range(5)]
    vectors = embedder_for(server, batch_size=2).embed(texts)
    assert [r["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    assert vectors.shape == (5, 8)


def test_429_is_retried_after_the_servers_retry_after(server):
    server.script.extend(["429", "ok"])
    sleeps: list[float] = []
    vectors = embedder_for(server, sleeps=sleeps).embed(["x"])
    assert len(server.requests) == 2
    assert sleeps == [3.0]
    assert vectors.shape == (1, 8)


def test_5xx_backs_off_exponentially_then_gives_up(server):
    server.script.extend(["500"] * 10)
    sleeps: list[float] = []
    embedder = embedder_for(server, sleeps=sleeps, backoff_s=0.5, max_backoff_s=30.0)
    with pytest.raises(EmbeddingRequestError, match="after 4 attempts; last failure: HTTP 500"):
        embedder.embed(["x"])
    assert len(server.requests) == 4
    assert len(sleeps) == 3
    for attempt, delay in enumerate(sleeps):  # jittered within [half, full] of 0.5 * 2**attempt
        assert 0.25 * 2**attempt <= delay <= 0.5 * 2**attempt


def test_4xx_other_than_429_is_not_retried(server):
    server.script.append("400")
    with pytest.raises(EmbeddingRequestError, match=r"answered 400: .*input too long"):
        embedder_for(server).embed(["x"])
    assert len(server.requests) == 1


def test_wrong_dimension_is_an_error(server):
    server.script.append("wrong-dim")
    with pytest.raises(EmbeddingRequestError, match="dimension 9, expected 8"):
        embedder_for(server).embed(["x", "y"])


def test_short_response_is_an_error(server):
    server.script.append("short")
    with pytest.raises(EmbeddingRequestError, match="2 embeddings for 3 inputs"):
        embedder_for(server).embed(["x", "y", "z"])


def test_non_json_answer_is_an_error(server):
    server.script.append("not-json")
    with pytest.raises(EmbeddingRequestError, match="non-JSON"):
        embedder_for(server).embed(["x"])


def test_a_slow_server_times_out(server):
    server.script.extend(["slow", "slow"])
    embedder = embedder_for(server, timeout_s=0.2, max_retries=1)
    with pytest.raises(
        EmbeddingRequestError, match=r"after 2 attempts; last failure: timed out after"
    ):
        embedder.embed(["x"])


def test_a_server_that_is_down_is_retried_then_reported(server):
    sleeps: list[float] = []
    embedder = embedder_for(server, sleeps=sleeps, base_url="http://127.0.0.1:9/v1", max_retries=1)
    with pytest.raises(EmbeddingRequestError, match=r"after 2 attempts; .*ConnectionError"):
        embedder.embed(["x"])
    assert len(sleeps) == 1 and server.requests == []


def test_factory_builds_the_http_backend_with_the_models_tokenizer(server, tmp_path):
    settings = EmbeddingSettings(
        backend="openai",
        model="text-embedding-3-small",
        openai=OpenAICompatibleSettings(base_url=server.url, dimension=8),
    )
    embedder = make_embedder(settings, tmp_path)
    vectors = embedder.embed(["hello"])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.tokenizer_path is not None and embedder.tokenizer_path.name == "tokenizer.json"
    assert embedder.token_counts(["hello world"]) == [4]  # [CLS] hello world [SEP]
