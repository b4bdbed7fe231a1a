"""Screenshots of the Dagster UI with failed documents, as a user would take them.

Copies a few sample documents and two broken ones (a truncated PDF, a ``.docx`` of random
bytes) into a temporary raw root, runs ``agrag materialize`` over them (one batched run of the
``ingest_documents`` job, which fails for the two broken documents and materialises the
others), starts ``dagster dev`` on the same instance and warehouse, and takes screenshots of
the pages issue 21 names with headless Chromium (``chromium --headless --screenshot``): the
chunks asset's Partitions tab (all, and a broken document selected), the lineage, the runs list
and the failed run.

Chromium is not part of the project's setup (nor of CI): install it first, e.g. on Debian
``apt-get install chromium``. Then::

    .venv/bin/python -m benchmarks.ui_screenshots --out /tmp/agrag-ui-shots

and look at the PNG files it names. Nothing is written outside ``--out`` and a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLES = (
    "docling-md/wiki.md",
    "docling-md/mixed.md",
    "docling-pdf/multi_page.pdf",
    "rust-book/ch03-05-control-flow.md",
    "docling-html/example_01.html",
)
BROKEN_PDF = "broken/truncated.pdf"
BROKEN_DOCX = "broken/random-bytes.docx"
#: The pages (relative URLs of the UI) and the file each is saved as.
PAGES = {
    "chunks-partitions.png": "/assets/chunks?view=partitions",
    "chunks-partition-failed.png": "/assets/chunks?view=partitions&partition="
    + quote(BROKEN_PDF, safe=""),
    "chunks-partition-good.png": "/assets/chunks?view=partitions&partition="
    + quote(SAMPLES[0], safe=""),
    "lineage.png": "/asset-groups/ingestion/lineage",
    "runs.png": "/runs",
}


def _corpus(raw_root: Path) -> list[str]:
    keys = []
    for key in SAMPLES:
        source = REPO_ROOT / "data" / "raw" / key
        if source.exists():
            (raw_root / key).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, raw_root / key)
            keys.append(key)
    (raw_root / "broken").mkdir(parents=True, exist_ok=True)
    pdf = (REPO_ROOT / "data" / "raw" / "docling-pdf" / "multi_page.pdf").read_bytes()
    (raw_root / BROKEN_PDF).write_bytes(pdf[: len(pdf) // 3])
    (raw_root / BROKEN_DOCX).write_bytes(random.Random(21).randbytes(4096))
    return [*keys, BROKEN_PDF, BROKEN_DOCX]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_ui(url: str, deadline_s: float) -> None:
    query = json.dumps({"query": "{ version }"}).encode()
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(
                f"{url}/graphql", query, {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise TimeoutError(f"dagster dev did not answer at {url} within {deadline_s:.0f} s")


def _graphql(url: str, query: str) -> dict:
    body = json.dumps({"query": query}).encode()
    request = urllib.request.Request(f"{url}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return dict(json.load(answer)["data"])


def _location(url: str) -> str | None:
    """The code location's name, as the UI's URLs name it (its one repository is implicit)."""
    query = "{ repositoriesOrError { ... on RepositoryConnection { nodes { location { name } } } }}"
    nodes = _graphql(url, query)["repositoriesOrError"].get("nodes") or []
    return str(nodes[0]["location"]["name"]) if nodes else None


def _latest_run_id(url: str) -> str | None:
    found = _graphql(url, "{ runsOrError(limit: 1) { ... on Runs { results { runId } } } }")
    runs = found["runsOrError"].get("results") or []
    return runs[0]["runId"] if runs else None


def screenshot(chromium: str, url: str, path: Path, wait_ms: int) -> None:
    """One page, rendered by headless Chromium after ``wait_ms`` of its virtual time."""
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1600,1000",
            f"--virtual-time-budget={wait_ms}",
            f"--screenshot={path}",
            url,
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=120,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--wait-ms", type=int, default=15000, help="render time per page")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agrag-ui-") as tmp:
        base = Path(tmp)
        raw, warehouse, home = base / "raw", base / "warehouse", base / "dagster_home"
        for folder in (raw, warehouse, home):
            folder.mkdir()
        shutil.copyfile(
            REPO_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml", home / "dagster.yaml"
        )
        keys = _corpus(raw)
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "AGRAG_RAW_ROOT": str(raw),
            "AGRAG_WAREHOUSE_ROOT": str(warehouse),
            "AGRAG_CACHE_DIR": str(base / "cache"),
            "AGRAG_AUTOMATION": "off",
            "DAGSTER_DISABLE_TELEMETRY": "1",
        }
        env.pop("AGRAG_SETTINGS", None)
        agrag = [str(Path(sys.executable).with_name("agrag")), "materialize"]
        done = subprocess.run(
            [*agrag, "--raw-root", str(raw), "--warehouse", str(warehouse)],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        )
        print(done.stdout[-3000:])
        print(f"materialised {len(keys)} documents, 2 of them broken (exit {done.returncode})")
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log = (args.out / "dagster-dev.log").open("wb")
        dagster = str(Path(sys.executable).with_name("dagster"))
        dev = subprocess.Popen(
            [dagster, "dev", "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_for_ui(url, 300)
            # A new instance greets its first visitor with a "Join the community" dialog over
            # the page; what its Skip button does, done first.
            _graphql(url, "mutation { setNuxSeen }")
            pages = dict(PAGES)
            location = _location(url)
            if location:  # the group's lineage, expanded (the global one shows groups only)
                pages["lineage.png"] = f"/locations/{location}/asset-groups/ingestion/lineage"
            run_id = _latest_run_id(url)
            if run_id:
                pages["run.png"] = f"/runs/{run_id}"
            for name, page in pages.items():
                screenshot(args.chromium, url + page, args.out / name, args.wait_ms)
                print(f"{args.out / name}: {page}")
        finally:
            os.killpg(dev.pid, signal.SIGTERM)
            try:
                dev.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(dev.pid, signal.SIGKILL)
                dev.wait(timeout=60)
            log.close()


if __name__ == "__main__":
    main()
