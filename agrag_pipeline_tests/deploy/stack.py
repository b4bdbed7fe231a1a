"""The shared deployment's servers as real processes on loopback, for the deploy tests.

Each server runs in a session (process group) of its own, so a test can stop it with every
child it forked (a Celery worker's pool process, the code server's run workers), and
``kill -9`` a whole worker as a lost machine would vanish. ``Service.stop`` sends SIGTERM to the
group, waits, then SIGKILL; it reports what survived so a test can fail on a leak.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from agrag_pipeline_tests.dagster.dagster_dev_support import stop_group

#: How long SIGTERM may take to bring a group down before SIGKILL.
STOP_GRACE_S = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Service:
    """One server process (the leader of its own process group) and its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self, chars: int | None = None) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"
        return text if chars is None else text[-chars:]

    def assert_running(self) -> None:
        code = self.process.poll()
        assert code is None, f"{self.name} exited with {code}:\n{self.log(4000)}"

    def kill_group(self) -> None:
        """``kill -9`` the process and every child in its group, as a lost machine."""
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)

    def stop(self) -> list[str]:
        """SIGTERM the group, wait, SIGKILL what is left; return the members still alive."""
        return stop_group(self.process, STOP_GRACE_S)


def start_service(
    name: str, argv: Sequence[str], env: Mapping[str, str], workdir: Path, cwd: Path
) -> Service:
    """Start ``argv`` in a new session, its output in ``workdir/<name>.log``."""
    log_path = workdir / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Service(name, process, log_path)


def wait_for_log(service: Service, text: str, deadline_s: float) -> None:
    """Until ``text`` appears in the service's log; fail if it exits or the deadline passes."""
    end = time.monotonic() + deadline_s
    while text not in service.log():
        service.assert_running()
        assert time.monotonic() < end, f"{service.name}: no {text!r} in {deadline_s:.0f} s"
        time.sleep(0.3)


@contextmanager
def services() -> Iterator[list[Service]]:
    """A list to start services into; on exit every one is stopped, the last started first,
    and a process that outlived SIGKILL fails the test."""
    started: list[Service] = []
    try:
        yield started
    finally:
        survivors = []
        for service in reversed(started):
            survivors += [f"{service.name}: {m}" for m in service.stop()]
        assert not survivors, f"processes survived SIGKILL: {survivors}"


@contextmanager
def running_redis(workdir: Path) -> Iterator[str]:
    """``redis-server`` on a free loopback port, no persistence; yields ``redis://…/0``."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed: bin/setup installs it (apt)")
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir)]
    with services() as started:
        started.append(start_service("redis", argv, os.environ, workdir, workdir))
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                started[0].assert_running()
                assert time.monotonic() < deadline, "redis-server did not start in 20 s"
                time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
