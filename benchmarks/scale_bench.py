"""Scale: the raw-root sensor and the UI at 100,000 documents, and the shared profile's throughput.

    .venv/bin/python -m benchmarks.scale_bench --documents 100000 [--parts sensor,ui,throughput]
        [--instances sqlite,postgres] [--throughput-documents 1000] [--s3]

Everything it writes (the synthetic raw root, Dagster homes, a loopback PostgreSQL and SeaweedFS)
lives under one temporary folder that is deleted at the end; servers bind to 127.0.0.1 on free
ports and are stopped by their pid.

- sensor: N small varied Markdown documents; three ticks of the real ``raw_documents_sensor``
  (first: all new; quiet: nothing changed; after 1% changed), each in a fresh process so its
  peak RSS is its own, evaluated through ``dagster._grpc.impl.get_external_sensor_execution``
  (the function a code server runs for the daemon) on a real instance; the partitions it asks
  for are then registered as the sensor daemon does (``has_dynamic_partition`` per key, then
  ``add_dynamic_partitions``).
- ui: the real ``dagster-webserver`` on the SQLite instance the sensor filled; the GraphQL
  queries the asset page and its partitions tab send, taken verbatim (with their fragments)
  from the installed webapp bundle, timed one by one, and the page's HTML.
- throughput: ``benchmarks.stages``' backfill (ranged runs of 50 documents, two worker
  processes, chunks only) at M documents, local default (shipped SQLite instance, folders)
  against the shared profile (deploy/dagster.yaml on a loopback PostgreSQL; with ``--s3`` also
  raw root and warehouse in a loopback SeaweedFS bucket), side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from benchmarks.corpus import VOCABULARY, write_corpus
from benchmarks.stages import (
    CHUNK_ASSETS,
    RESULT_PREFIX,
    _DagsterBackfill,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
SHIPPED_INSTANCE = REPO_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml"
SHARED_INSTANCE = REPO_ROOT / "deploy" / "dagster.yaml"
SETTINGS = REPO_ROOT / "data" / "pipeline.yaml"
WEBAPP = "dagster_webserver/webapp/build/_next/static/chunks"
#: The asset whose pages are timed (every per-document asset has the same partitions).
UI_ASSET = "chunks"
#: Keys on which the sensor daemon's per-key existence check is timed.
DAEMON_CHECK_SAMPLE = 2000
#: The UI's queries timed on the asset page (overview and partitions tab).
UI_QUERIES = ("AssetViewDefinitionQuery", "AssetGraphLiveQuery", "PartitionHealthQuery")
#: The corpus vocabulary plus common words, so the synthetic documents read like prose.
WORDS = [
    *VOCABULARY,
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "that",
    "for",
    "with",
    "on",
    "as",
    "by",
    "it",
    "be",
    "are",
    "this",
    "from",
]


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# -- the synthetic raw root -------------------------------------------------------------------


def document_key(i: int) -> str:
    """100 folders of 1,000 documents each at 100,000 (``017/doc-017042.md``)."""
    return f"{i // 1000:03d}/doc-{i:06d}.md"


def small_markdown(i: int, edit: int = 0) -> str:
    """A small Markdown document (about 0.3-2 KB): headings, paragraphs, and sometimes a list,
    a table or a code block, seeded by ``i`` (``edit`` > 0 appends an edited paragraph)."""
    rng = random.Random(i)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    parts = [f"# Note {i}: {sentence(3)[:-1]}", sentence(rng.randrange(10, 40))]
    for s in range(rng.randrange(1, 4)):
        parts.append(f"## Part {s + 1}")
        parts.append(" ".join(sentence(rng.randrange(6, 20)) for _ in range(rng.randrange(1, 4))))
        kind = rng.randrange(4)
        if kind == 1:
            parts.append("\n".join(f"- {sentence(rng.randrange(3, 9))}" for _ in range(3)))
        elif kind == 2:
            rows = [f"| {rng.choice(WORDS)} | {rng.randrange(1000)} |" for _ in range(3)]
            parts.append("\n".join(["| name | value |", "|---|---:|", *rows]))
        elif kind == 3:
            parts.append(f"```python\nvalue_{i} = {rng.randrange(100)}\n```")
    if edit:
        parts.append(f"Edited ({edit}): {sentence(12)}")
    return "\n\n".join(parts) + "\n"


def write_raw_root(root: Path, n: int) -> int:
    total = 0
    for i in range(n):
        path = root / document_key(i)
        if i % 1000 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        data = small_markdown(i).encode()
        path.write_bytes(data)
        total += len(data)
    return total


def change_raw_root(root: Path, n: int, fraction: float) -> int:
    """Rewrite every ``1/fraction``-th document with an added paragraph; return how many."""
    step = max(1, round(1 / fraction))
    changed = 0
    for i in range(step // 2, n, step):
        (root / document_key(i)).write_text(small_markdown(i, edit=1))
        changed += 1
    return changed


# -- one sensor tick, in its own process --------------------------------------------------------


def tick(home: Path, raw_root: str, warehouse: str, cursor_file: Path) -> dict[str, Any]:
    """One evaluation of the real sensor, as a code server runs it for the daemon, then the
    partitions registered as the daemon registers them. The cursor comes from and goes back
    to ``cursor_file`` (the daemon keeps it in the instance's sensor state)."""
    import dagster as dg
    import psutil
    from dagster._core.remote_representation.external_data import SensorExecutionErrorSnap
    from dagster._grpc.impl import get_external_sensor_execution
    from dagster._serdes import serialize_value

    from agrag_pipeline.definitions import build_definitions
    from agrag_pipeline.defs.resources import PipelineResource
    from agrag_pipeline.defs.sensors import ScanState

    resource_ = PipelineResource(
        raw_root=raw_root,
        warehouse_root=warehouse,
        settings_path=str(SETTINGS),
        cache_dir=str(home / "cache"),
    )
    defs = build_definitions(resource_)
    repo = defs.get_repository_def()
    instance = dg.DagsterInstance.from_config(str(home))
    instance.get_dynamic_partitions("documents")  # storage opened (and migrated) outside timers
    cursor = cursor_file.read_text() if cursor_file.exists() else None
    known = set(instance.get_dynamic_partitions("documents"))
    rss_before = psutil.Process().memory_info().rss
    sampler = _PeakSampler()
    with sampler:
        started = time.perf_counter()
        data = get_external_sensor_execution(
            repo,
            None,  # type: ignore[arg-type]  # no code location origin outside a server
            instance.get_ref(),
            "raw_documents_sensor",
            None,
            None,
            cursor,
            None,
            None,
        )
        evaluate_s = time.perf_counter() - started
    if isinstance(data, SensorExecutionErrorSnap):
        raise RuntimeError(f"the sensor failed: {data.error.to_string() if data.error else ''}")
    serialize_start = time.perf_counter()
    wire_bytes = len(serialize_value(data).encode())
    serialize_s = time.perf_counter() - serialize_start
    new_cursor = data.cursor or ""
    cursor_file.write_text(new_cursor)

    added_by_sensor = [k for k in instance.get_dynamic_partitions("documents") if k not in known]
    # What the sensor daemon's _handle_dynamic_partitions_requests costs per requested key (one
    # has_dynamic_partition query each), on a sample of the keys just added.
    sample = added_by_sensor[:DAEMON_CHECK_SAMPLE]
    start = time.perf_counter()
    for key in sample:
        instance.has_dynamic_partition("documents", key)
    daemon_check_ms = 1000 * (time.perf_counter() - start) / len(sample) if sample else None
    # Add requests, were the sensor to return any, registered as the daemon does: one existence
    # check per key, then one add of the missing ones.
    registered = checked = 0
    check_s = add_s = 0.0
    for request in data.dynamic_partitions_requests or []:
        if not isinstance(request, dg.AddDynamicPartitionsRequest):
            continue
        start = time.perf_counter()
        missing = [
            k
            for k in request.partition_keys
            if not instance.has_dynamic_partition(request.partitions_def_name, k)
        ]
        check_s += time.perf_counter() - start
        checked += len(request.partition_keys)
        start = time.perf_counter()
        if missing:
            instance.add_dynamic_partitions(request.partitions_def_name, missing)
        add_s += time.perf_counter() - start
        registered += len(missing)
    requested = 0
    for run_request in data.run_requests or []:
        subset = run_request.asset_graph_subset
        if subset is not None:
            requested = max(
                requested, max(len(s) for s in subset.partitions_subsets_by_asset_key.values())
            )
    state = ScanState(instance, str(resource_.runtime().raw_root))
    stored = instance.run_storage.get_cursor_values({state.key}).get(state.key) or ""
    figures = {
        "evaluate_s": round(evaluate_s, 2),
        "register_check_s": round(check_s, 2),
        "register_add_s": round(add_s, 2),
        "partitions_added_by_sensor": len(added_by_sensor),
        "daemon_check_ms_per_key": round(daemon_check_ms, 3) if daemon_check_ms else None,
        "daemon_check_sample": len(sample),
        "partitions_checked": checked,
        "partitions_registered": registered,
        "partitions_total": len(instance.get_dynamic_partitions("documents")),
        "documents_requested": requested,
        "run_requests": len(data.run_requests or []),
        "skip_message": (data.skip_message or "")[:160],
        "cursor_bytes": len(new_cursor.encode()),
        "state_bytes": len(stored.encode()),
        "wire_bytes": wire_bytes,
        "serialize_s": round(serialize_s, 2),
        "rss_before_mb": round(rss_before / 2**20, 1),
        "rss_peak_during_mb": round(sampler.peak / 2**20, 1),
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    instance.dispose()
    return figures


class _PeakSampler:
    """The process's RSS, sampled every 20 ms in a thread (the peak of one stretch of code)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> _PeakSampler:
        import psutil

        process = psutil.Process()

        def sample() -> None:
            while not self._stop.is_set():
                self.peak = max(self.peak, process.memory_info().rss)
                self._stop.wait(0.02)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_tick(home: Path, raw_root: Path, warehouse: Path, env: dict[str, str]) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "benchmarks.scale_bench",
        "--tick",
        str(home),
        str(raw_root),
        str(warehouse),
        str(home / "cursor"),
    ]
    before = load()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"tick failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    figures["process_wall_s"] = round(time.perf_counter() - started, 1)
    figures["load_average"] = before
    return figures


def sensor_part(
    documents: int, work: Path, instance_yaml: Path, env: dict[str, str], raw_root: Path
) -> dict[str, Any]:
    """First, quiet and after-1%-changed ticks on one instance."""
    home = work / "home"
    home.mkdir(parents=True)
    shutil.copyfile(instance_yaml, home / "dagster.yaml")
    warehouse = work / "warehouse"
    warehouse.mkdir()
    env = {**env, "DAGSTER_HOME": str(home)}
    result: dict[str, Any] = {"home": str(home)}
    result["first"] = run_tick(home, raw_root, warehouse, env)
    print(f"  first tick: {result['first']}", flush=True)
    result["quiet"] = run_tick(home, raw_root, warehouse, env)
    print(f"  quiet tick: {result['quiet']}", flush=True)
    changed = change_raw_root(raw_root, documents, 0.01)
    result["changed_documents"] = changed
    result["after_1pct"] = run_tick(home, raw_root, warehouse, env)
    print(f"  after 1% changed: {result['after_1pct']}", flush=True)
    return result


# -- the UI -------------------------------------------------------------------------------------


def ui_queries(names: tuple[str, ...] = UI_QUERIES) -> dict[str, str]:
    """The UI's own GraphQL documents, from the installed webapp bundle, with their fragments."""
    import dagster_webserver
    import graphql

    chunks = Path(dagster_webserver.__file__).parent / "webapp/build/_next/static/chunks"
    bundle = "\n".join(p.read_text(errors="replace") for p in sorted(chunks.rglob("*.js")))
    strings = [
        s.encode().decode("unicode_escape")
        for s in re.findall(r'"((?:\\n|\s)*(?:query|fragment) [^"]*)"', bundle)
    ]
    definitions: dict[str, Any] = {}
    for text in strings:
        try:
            document = graphql.parse(text)
        except graphql.GraphQLError:
            continue
        for definition in document.definitions:
            name = getattr(getattr(definition, "name", None), "value", None)
            if name and name not in definitions:
                definitions[name] = definition
    found = {}
    for name in names:
        if name not in definitions:
            continue
        needed, queue = {name}, [definitions[name]]
        while queue:
            node = queue.pop()
            for spread in _spreads(node):
                if spread not in needed and spread in definitions:
                    needed.add(spread)
                    queue.append(definitions[spread])
        found[name] = "\n\n".join(graphql.print_ast(definitions[n]) for n in sorted(needed))
    return found


def _spreads(node: Any) -> Iterator[str]:
    import graphql

    class Visitor(graphql.Visitor):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def enter_fragment_spread(self, spread: Any, *_: Any) -> None:
            self.names.append(spread.name.value)

    visitor = Visitor()
    graphql.visit(node, visitor)
    yield from visitor.names


@contextmanager
def webserver(env: dict[str, str], log: Path) -> Iterator[str]:
    from agrag_pipeline_tests.dagster.dagster_dev_support import free_port

    port = free_port()
    command = [
        str(Path(sys.executable).with_name("dagster-webserver")),
        "-w",
        "workspace.yaml",
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def ui_part(home: Path, raw_root: Path, env: dict[str, str], work: Path) -> dict[str, Any]:
    """The webserver on the sensor's instance (N partitions; a few materialisations)."""
    import dagster as dg
    import requests

    from agrag_pipeline_tests.dagster.dagster_dev_support import WORKSPACE_QUERY

    os.environ["DAGSTER_HOME"] = str(home)  # the shipped instance file reads it
    instance = dg.DagsterInstance.from_config(str(home))
    keys = instance.get_dynamic_partitions("documents")
    reported = keys[:: max(1, len(keys) // 1000)][:1000]
    started = time.perf_counter()
    for asset in ("raw_documents", "sections", UI_ASSET):
        for key in reported:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(asset_key=asset, partition=key)
            )
    report_s = time.perf_counter() - started
    instance.dispose()
    queries = ui_queries()
    env = {
        **env,
        "DAGSTER_HOME": str(home),
        "AGRAG_RAW_ROOT": str(raw_root),
        "AGRAG_WAREHOUSE_ROOT": str(work / "warehouse"),
        "AGRAG_CACHE_DIR": str(work / "cache"),
        "AGRAG_AUTOMATION": "off",
    }
    result: dict[str, Any] = {
        "partitions": len(keys),
        "materialised_per_asset": len(reported),
        "materialisations_reported_s": round(report_s, 1),
        "queries_from_bundle": sorted(queries),
        "queries_missing": [q for q in UI_QUERIES if q not in queries],
    }
    with webserver(env, work / "webserver.log") as base:
        started = time.perf_counter()
        while True:
            with suppress(requests.RequestException):
                body = requests.post(
                    base + "/graphql", json={"query": WORKSPACE_QUERY}, timeout=30
                ).json()
                entries = body["data"]["workspaceOrError"].get("locationEntries", [])
                if entries and entries[0]["loadStatus"] == "LOADED":
                    break
            if time.perf_counter() - started > 300:
                raise RuntimeError((work / "webserver.log").read_text()[-3000:])
            time.sleep(1)
        result["ready_s"] = round(time.perf_counter() - started, 1)
        variables = {
            "AssetViewDefinitionQuery": {"assetKey": {"path": [UI_ASSET]}},
            "AssetGraphLiveQuery": {"assetKeys": [{"path": [UI_ASSET]}]},
            "PartitionHealthQuery": {"assetKey": {"path": [UI_ASSET]}},
        }
        timings: dict[str, Any] = {}
        for name, query in queries.items():
            for attempt in ("first", "second"):
                before = load()
                start = time.perf_counter()
                response = requests.post(
                    base + "/graphql",
                    json={"query": query, "variables": variables[name], "operationName": name},
                    timeout=600,
                )
                seconds = time.perf_counter() - start
                body = response.json()
                timings[f"{name} ({attempt})"] = {
                    "s": round(seconds, 2),
                    "bytes": len(response.content),
                    "errors": [e.get("message", "")[:200] for e in body.get("errors") or []],
                    "summary": _summary(name, body.get("data") or {}),
                    "load_average": before,
                }
                print(f"  {name} ({attempt}): {timings[f'{name} ({attempt})']}", flush=True)
        for path in (f"/assets/{UI_ASSET}", f"/assets/{UI_ASSET}?view=partitions"):
            start = time.perf_counter()
            page = requests.get(base + path, timeout=60)
            timings[f"GET {path}"] = {
                "s": round(time.perf_counter() - start, 3),
                "status": page.status_code,
                "bytes": len(page.content),
                "load_average": load(),
            }
        result["timings"] = timings
    return result


def _summary(name: str, data: dict[str, Any]) -> str:
    """What the answer holds (so a fast empty answer is not mistaken for a fast full one)."""
    if name == "PartitionHealthQuery":
        node = data.get("assetNodeOrError") or {}
        dims = node.get("partitionKeysByDimension") or [{}]
        statuses = node.get("assetPartitionStatuses") or {}
        return (
            f"{len(dims[0].get('partitionKeys') or [])} partition keys, "
            f"{len(statuses.get('materializedPartitions') or [])} materialised"
        )
    if name == "AssetGraphLiveQuery":
        nodes = data.get("assetNodes") or [{}]
        return f"partitionStats {nodes[0].get('partitionStats')}"
    if name == "AssetViewDefinitionQuery":
        asset = data.get("assetOrError") or {}
        definition = asset.get("definition") or {}
        return f"definition of {asset.get('key')}, group {definition.get('groupName')}"
    return ""


# -- throughput: local default against the shared profile -----------------------------------------


def _profile_backfill(
    raw_root: str, warehouse: str, work: Path, instance_yaml: Path
) -> _DagsterBackfill:
    """``stages._DagsterBackfill`` on an instance file and roots (folders or s3:// URIs): runs of
    50 documents, two at once, chunks only."""
    return _DagsterBackfill(
        raw_root, work, 50, instance_yaml, parallel=2, assets=CHUNK_ASSETS, warehouse=warehouse
    )


def throughput_part(
    documents: int, work: Path, postgres_url: str | None, s3: Any | None
) -> dict[str, Any]:
    raw = work / "raw"
    corpus = write_corpus(raw, documents)
    contenders: list[tuple[str, Callable[[Path], _DagsterBackfill]]] = [
        (
            "local default (shipped SQLite instance, folders)",
            lambda w: _profile_backfill(str(raw), str(w / "warehouse"), w, SHIPPED_INSTANCE),
        )
    ]
    if postgres_url:
        contenders.append(
            (
                "shared profile (deploy/dagster.yaml on PostgreSQL, folders)",
                lambda w: _profile_backfill(str(raw), str(w / "warehouse"), w, SHARED_INSTANCE),
            )
        )
    if postgres_url and s3 is not None:
        import s3fs

        from agrag_pipeline_tests.deploy.seaweed import BUCKET

        fs = s3fs.S3FileSystem(
            key=s3.access_key,
            secret=s3.secret_key,
            client_kwargs={"endpoint_url": s3.endpoint},
            skip_instance_cache=True,
        )
        started = time.perf_counter()
        fs.put(f"{raw}/", f"{BUCKET}/scale/raw/", recursive=True)
        upload_s = time.perf_counter() - started
        contenders.append(
            (
                "shared profile (PostgreSQL, raw root and warehouse on SeaweedFS S3)",
                lambda w: _profile_backfill(
                    f"s3://{BUCKET}/scale/raw",
                    f"s3://{BUCKET}/scale/warehouse-{w.name}",
                    w,
                    SHARED_INSTANCE,
                ),
            )
        )
    else:
        upload_s = None
    rows: dict[str, Any] = {}
    for index, (name, make) in enumerate(contenders):
        backfill = make(work / f"contender-{index}")
        before = load()
        seconds = backfill.full([])
        rows[name] = {
            "seconds": round(seconds, 1),
            "docs_per_s": round(documents / seconds, 2),
            "runs": backfill.runs_full,
            "failed_runs": backfill.failed_runs,
            "events": backfill.events_full,
            "load_average": before,
        }
        print(f"  {name}: {rows[name]}", flush=True)
        backfill.close()
    base = next(iter(rows.values()))["seconds"]
    for row in rows.values():
        row["over_local"] = round(row["seconds"] / base, 2)
    return {"corpus": corpus.as_dict(), "s3_upload_s": upload_s, "contenders": rows}


# -- entry point ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--parts", default="sensor,ui,throughput")
    parser.add_argument("--instances", default="sqlite,postgres", help="for the sensor part")
    parser.add_argument("--throughput-documents", type=int, default=1000)
    parser.add_argument("--s3", action="store_true", help="throughput also on SeaweedFS S3")
    parser.add_argument("--tick", nargs=4, metavar=("HOME", "RAW", "WAREHOUSE", "CURSOR"))
    args = parser.parse_args(argv)
    if args.tick:
        home, raw, warehouse, cursor = args.tick
        figures = tick(Path(home), raw, warehouse, Path(cursor))
        sys.stdout.write(RESULT_PREFIX + json.dumps(figures) + "\n")
        return
    parts = set(args.parts.split(","))
    instances = args.instances.split(",")
    results: dict[str, Any] = {
        "command": " ".join(["python -m benchmarks.scale_bench", *(argv or sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores": len(os.sched_getaffinity(0)),
        "load_average_at_start": load(),
    }
    base_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "PYTHONPATH": str(REPO_ROOT),
        "DAGSTER_EVENT_BATCH_SIZE": "50",
    }
    base_env.pop("AGRAG_SETTINGS", None)
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agrag-scale-")))
        postgres_url = None
        if "postgres" in instances or "throughput" in parts:
            from agrag_pipeline_tests.deploy.postgres import running_postgres

            url = stack.enter_context(running_postgres())
            postgres_url = url.replace("postgresql://", "postgresql+psycopg2://", 1)
            base_env["AGRAG_POSTGRES_URL"] = postgres_url
            os.environ["AGRAG_POSTGRES_URL"] = postgres_url
        if "sensor" in parts or "ui" in parts:
            raw_root = work / "raw"
            started = time.perf_counter()
            size = write_raw_root(raw_root, args.documents)
            results["raw_root"] = {
                "documents": args.documents,
                "bytes": size,
                "written_s": round(time.perf_counter() - started, 1),
            }
            print(f"raw root: {results['raw_root']}", flush=True)
            results["sensor"] = {}
            for kind in instances:
                yaml = SHIPPED_INSTANCE if kind == "sqlite" else SHARED_INSTANCE
                # Each instance sees the same root from its first state (edits undone).
                for i in range(50, args.documents, 100):
                    (raw_root / document_key(i)).write_text(small_markdown(i))
                print(f"sensor on {kind}:", flush=True)
                results["sensor"][kind] = sensor_part(
                    args.documents, work / f"sensor-{kind}", yaml, base_env, raw_root
                )
            if "ui" in parts and "sqlite" in results["sensor"]:
                print("ui:", flush=True)
                results["ui"] = ui_part(
                    Path(results["sensor"]["sqlite"]["home"]),
                    raw_root,
                    base_env,
                    work / "sensor-sqlite",
                )
        if "throughput" in parts:
            s3 = None
            if args.s3:
                from agrag_pipeline_tests.deploy.seaweed import start_seaweed

                seaweed_dir = work / "seaweed"
                seaweed_dir.mkdir()
                s3 = start_seaweed(seaweed_dir)
                stack.callback(s3.stop)
                os.environ.update(s3.env)
            print("throughput:", flush=True)
            results["throughput"] = throughput_part(
                args.throughput_documents, work / "throughput", postgres_url, s3
            )
    results["load_average_at_end"] = load()
    sys.stdout.write(RESULT_PREFIX + json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
