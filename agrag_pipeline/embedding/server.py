"""An OpenAI-compatible embeddings server around the local model (``agrag serve-embeddings``).

One process holds the model; any number of pipeline runs (``embedding.backend: openai``) share
it over HTTP, so a machine with a GPU can embed for workers without one. It speaks the subset of
OpenAI's API that embedding clients use: ``POST /v1/embeddings`` (``input`` a string or a list
of strings, ``encoding_format`` float or base64), ``GET /v1/models``, plus ``GET /health`` and
``GET /stats`` (requests in flight and the most ever in flight, counted by the server itself, so
a client-side limit such as a Dagster pool can be checked from here).

Bounds: a request body over ``max_request_bytes`` is refused (413) before it is read whole; more
than ``max_inputs`` texts is a 400; at most ``max_concurrency`` requests use the model at once,
at most ``max_waiting`` more wait for it, and beyond that the answer is 503 with Retry-After
(the client backs off and retries). ``POST /admin/pause`` holds requests before the model
(they wait, within ``max_waiting``, instead of failing) until ``POST /admin/resume``: for a
moment's maintenance, such as lending the GPU to something else. Bad input is a 400 in
OpenAI's error shape whose message names the field and the problem. Starlette and uvicorn
(already installed with the Dagster webserver) carry the HTTP; the vectors are the local
backend's ``embed``, nothing added.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import numpy as np

from agrag_pipeline.embedding.base import Embedder, EmbeddingError

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    from agrag_pipeline.embedding.settings import EmbeddingSettings

logger = logging.getLogger(__name__)

ENCODING_FORMATS = ("float", "base64")


@dataclass(frozen=True)
class ServerLimits:
    """What one server accepts; see the module docstring."""

    max_request_bytes: int = 8 << 20
    max_inputs: int = 2048
    max_concurrency: int = 1
    max_waiting: int = 64


@dataclass
class ServerStats:
    """Counted by the server as requests arrive and leave (one event loop: no lock needed)."""

    started_at: float = field(default_factory=time.time)
    in_flight: int = 0
    max_in_flight: int = 0
    requests: int = 0
    texts: int = 0
    rejected: int = 0
    busy: int = 0
    paused: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "requests": self.requests,
            "texts": self.texts,
            "rejected": self.rejected,
            "busy": self.busy,
            "paused": self.paused,
            "uptime_s": round(time.time() - self.started_at, 3),
        }

    def reset(self) -> None:
        """Start counting afresh (requests in flight stay counted)."""
        self.max_in_flight = self.in_flight
        self.requests = self.texts = self.rejected = self.busy = 0


class BadRequest(Exception):
    """A request the server refuses or could not answer: its HTTP status and message."""

    def __init__(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code


def parse_request(
    body: bytes, *, model: str, dimension: int, max_inputs: int
) -> tuple[list[str], str]:
    """The texts and encoding format of an embeddings request, or ``BadRequest``."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(400, f"the request body is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise BadRequest(400, "the request body must be a JSON object")
    asked = payload.get("model")
    if not isinstance(asked, str) or not asked:
        raise BadRequest(400, "'model' is required (a string)", param="model")
    if asked != model:
        raise BadRequest(
            404,
            f"the model {asked!r} is not served here; this server serves {model!r}",
            param="model",
            code="model_not_found",
        )
    raw = payload.get("input")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise BadRequest(
            400, "'input' must be a string or a non-empty list of strings", param="input"
        )
    if len(raw) > max_inputs:
        raise BadRequest(400, f"'input' has {len(raw)} texts; at most {max_inputs}", param="input")
    for i, text in enumerate(raw):
        if isinstance(text, int) or (isinstance(text, list) and text):
            raise BadRequest(400, "token ids are not accepted here: send text", param="input")
        if not isinstance(text, str):
            raise BadRequest(
                400, f"'input[{i}]' is {type(text).__name__}, not a string", param="input"
            )
        if not text:
            raise BadRequest(400, f"'input[{i}]' is an empty string", param="input")
    encoding = payload.get("encoding_format") or "float"
    if encoding not in ENCODING_FORMATS:
        raise BadRequest(
            400,
            f"'encoding_format' is {encoding!r}; one of {', '.join(ENCODING_FORMATS)}",
            param="encoding_format",
        )
    dimensions = payload.get("dimensions")
    if dimensions is not None and dimensions != dimension:
        raise BadRequest(
            400,
            f"'dimensions' is {dimensions!r}, but this model's vectors have {dimension}",
            param="dimensions",
        )
    return raw, encoding


def _encode_vector(vector: np.ndarray, encoding: str) -> list[float] | str:
    if encoding == "base64":  # OpenAI's: the little-endian float32 bytes
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    result: list[float] = vector.tolist()
    return result


def build_app(embedder: Embedder, model: str, limits: ServerLimits | None = None) -> Starlette:
    """The ASGI app serving ``embedder`` under the name ``model``."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    limits = limits or ServerLimits()
    stats = ServerStats()
    model_slots = anyio.Semaphore(limits.max_concurrency)
    waiting = 0

    def error(exc: BadRequest) -> JSONResponse:
        stats.rejected += 1
        body = {
            "error": {
                "message": exc.message,
                "type": "invalid_request_error" if exc.status < 500 else "server_error",
                "param": exc.param,
                "code": exc.code,
            }
        }
        headers = {"Retry-After": "1"} if exc.status == 503 else None
        return JSONResponse(body, status_code=exc.status, headers=headers)

    def embed_to_json(texts: list[str], encoding: str) -> tuple[bytes, int]:
        """The response body (made off the event loop: encoding thousands of floats takes
        time) and how many texts the model truncated."""
        embedded = embedder.embed_counted(texts)
        counts = embedder.token_counts(texts)
        tokens = sum(counts) if counts is not None else 0
        data = [
            {"object": "embedding", "index": i, "embedding": _encode_vector(v, encoding)}
            for i, v in enumerate(embedded.vectors)
        ]
        body = {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return json.dumps(body, separators=(",", ":")).encode(), embedded.truncated_count

    async def read_body(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_request_bytes:
            raise BadRequest(
                413, f"the request body is {declared} bytes; at most {limits.max_request_bytes}"
            )
        parts, size = [], 0
        async for part in request.stream():
            size += len(part)
            if size > limits.max_request_bytes:
                raise BadRequest(413, f"the request body exceeds {limits.max_request_bytes} bytes")
            parts.append(part)
        return b"".join(parts)

    async def embeddings(request: Request) -> Response:
        nonlocal waiting
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        stats.requests += 1
        try:
            texts, encoding = parse_request(
                await read_body(request),
                model=model,
                dimension=embedder.dimension,
                max_inputs=limits.max_inputs,
            )
            if waiting >= limits.max_waiting:
                stats.busy += 1
                raise BadRequest(503, f"{waiting} requests already wait for the model; retry")
            waiting += 1
            try:
                while stats.paused:
                    await anyio.sleep(0.05)
                await model_slots.acquire()
            finally:
                waiting -= 1
            try:
                # A worker thread, so the loop keeps answering; not abandoned on cancellation,
                # so the slot is freed only when the model is done.
                body, truncated = await anyio.to_thread.run_sync(embed_to_json, texts, encoding)
            except EmbeddingError as exc:
                raise BadRequest(500, f"the model failed: {exc}") from exc
            finally:
                model_slots.release()
            stats.texts += len(texts)
            return Response(
                body,
                media_type="application/json",
                headers={"X-Truncated-Inputs": str(truncated)},
            )
        except BadRequest as exc:
            return error(exc)
        finally:
            stats.in_flight -= 1

    async def models(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": model,
                        "object": "model",
                        "created": int(stats.started_at),
                        "owned_by": "agrag_pipeline",
                        # Not OpenAI's: what a client needs to configure embedding.openai.
                        "dimension": embedder.dimension,
                        "max_sequence_tokens": embedder.max_sequence_tokens,
                        "fingerprint": embedder.fingerprint,
                    }
                ],
            }
        )

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": model, "dimension": embedder.dimension})

    async def get_stats(request: Request) -> JSONResponse:
        return JSONResponse(stats.as_dict())

    async def reset_stats(request: Request) -> JSONResponse:
        before = stats.as_dict()
        stats.reset()
        return JSONResponse(before)

    async def pause(request: Request) -> JSONResponse:
        stats.paused = True
        return JSONResponse(stats.as_dict())

    async def resume(request: Request) -> JSONResponse:
        stats.paused = False
        return JSONResponse(stats.as_dict())

    return Starlette(
        routes=[
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/stats", get_stats, methods=["GET"]),
            Route("/stats/reset", reset_stats, methods=["POST"]),
            Route("/admin/pause", pause, methods=["POST"]),
            Route("/admin/resume", resume, methods=["POST"]),
        ]
    )


def local_settings(settings: EmbeddingSettings) -> EmbeddingSettings:
    """The settings of the model to serve: a client's settings (``backend: openai``) serve the
    same model with the local sentence-transformers backend, so one file configures both."""
    if settings.backend == "openai":
        return settings.model_copy(update={"backend": "sentence-transformers"})
    return settings


def serve(
    settings: EmbeddingSettings,
    cache_dir: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: ServerLimits | None = None,
) -> None:
    """Load the model, then serve it until interrupted (SIGINT/SIGTERM stop it cleanly)."""
    import uvicorn

    from agrag_pipeline.embedding.factory import make_embedder

    limits = limits or ServerLimits()
    served = local_settings(settings)
    embedder = make_embedder(served, cache_dir)
    app = build_app(embedder, served.model, limits)
    print(
        f"agrag serve-embeddings: {served.model} ({served.backend}, dimension "
        f"{embedder.dimension}, fingerprint {embedder.fingerprint[:12]}) on http://{host}:{port}/v1",
        flush=True,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        # Connections beyond this get 503 from uvicorn itself; room for health probes.
        limit_concurrency=limits.max_concurrency + limits.max_waiting + 16,
    )
    uvicorn.Server(config).run()
