"""A real ``agrag core --workers 2`` whose processes are really killed with SIGKILL.

One worker killed mid-document: the run still exits 0, the document it was on is retried in a
fresh worker, and every document's stored outputs equal a one-process run's. The ``agrag core``
process itself killed: its workers end with it (none is left holding memory).

Why it holds: ``workers.py`` supervises its own worker processes (one pipe each, the document
each is on known), so a death costs only that document, retried once; each worker asks the
kernel to kill it when its parent ends (``PR_SET_PDEATHSIG``).

"Mid-document" is made certain, not hoped for: both workers are stopped (SIGSTOP) and the kill
lands only when the warehouse shows two documents snapshotted whose chunks are not yet written
(each worker does one document at a time, so each stopped worker is inside one of them).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agrag_pipeline.models import Document
from agrag_pipeline_tests.reliability.stored import stored_contents

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Enough documents, each long enough to parse (a few hundred ms), that a worker spends most
#: of its life inside one.
DOCS = {
    f"doc{i:02d}.md": f"# Document {i}\n"
    + "".join(
        f"\n## Section {s}\n\n"
        + " ".join(f"word{(i * 7 + s * 13 + w) % 997} is here." for w in range(120))
        + "\n"
        for s in range(60)
    )
    for i in range(12)
}
#: The layout ``agrag core --no-embed`` writes (``storage.warehouse``).
LAYOUT = ("raw", "text", "documents", "sections", "chunks", "failures")


def _raw_root(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    for name, text in DOCS.items():
        (raw / name).write_text(text, encoding="utf-8")
    return raw


def _argv(raw: Path, warehouse: Path, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "agrag_pipeline.cli",
        "core",
        "--raw-root",
        str(raw),
        "--warehouse",
        str(warehouse),
        "--cache-dir",
        str(raw.parent / "cache"),
        "--no-embed",
        "--workers",
        str(workers),
    ]


def _contents(warehouse: Path) -> dict[str, object]:
    """Every stored file of the layout (temporaries a killed writer left aside)."""
    return stored_contents(
        warehouse, lambda rel: rel.parts[0] in LAYOUT and ".tmp-" not in rel.name
    )


# -- processes, read from /proc ------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` from the state on (field 3), or None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rpartition(")")[2].split()


def _workers_of(parent: int) -> list[int]:
    """The worker processes (``multiprocessing`` spawn children) of ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is None or int(fields[1]) != parent:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return sorted(found)


def _identity(pid: int) -> tuple[int, str] | None:
    """(pid, start time): a pid the system reuses later is not mistaken for the same process."""
    fields = _stat(pid)
    return None if fields is None else (pid, fields[19])


def _running(identity: tuple[int, str]) -> bool:
    """Whether the process still exists and has not ended (a zombie holds no memory)."""
    fields = _stat(identity[0])
    return fields is not None and fields[19] == identity[1] and fields[0] not in ("Z", "X")


def _all_stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` has stopped (SIGSTOP is delivered asynchronously)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return False
    states = [_stat_of_task(t) for t in tasks]
    return all(state in ("T", "t") for state in states)


def _stat_of_task(task: Path) -> str | None:
    try:
        return (task / "stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _in_progress(warehouse: Path) -> list[str]:
    """Documents snapshotted (their record stored) whose chunks are not written yet."""
    busy = []
    for key in DOCS:
        node = Document.node_id_for(key)
        record = warehouse / "documents" / f"{node}.json"
        chunks = warehouse / "chunks" / f"{node}.parquet"
        if record.exists() and not chunks.exists():
            busy.append(key)
    return busy


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal a worker that may have just ended (one finishing when the run does)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _stop_both_mid_document(
    core: subprocess.Popen[bytes], warehouse: Path
) -> tuple[list[int], list[str]]:
    """Stop both workers at a moment each is inside a document; their pids and documents."""
    deadline = time.monotonic() + 240
    while core.poll() is None and time.monotonic() < deadline:
        workers = _workers_of(core.pid)
        if len(workers) == 2:
            for pid in workers:
                _signal(pid, signal.SIGSTOP)
            settle = time.monotonic() + 10
            while not all(_all_stopped(p) for p in workers) and time.monotonic() < settle:
                time.sleep(0.01)
            busy = _in_progress(warehouse)
            if len(busy) == 2 and all(_all_stopped(p) for p in workers):
                return workers, busy
            for pid in workers:
                _signal(pid, signal.SIGCONT)
        time.sleep(0.02)
    pytest.fail(f"never saw both workers inside a document (agrag core exit {core.poll()})")


@pytest.fixture
def reaper() -> Iterator[list[subprocess.Popen[bytes] | tuple[int, str]]]:
    """Processes a failed test must not leave behind (on the code before the fix, orphans)."""
    started: list[subprocess.Popen[bytes] | tuple[int, str]] = []
    yield started
    for item in started:
        if isinstance(item, subprocess.Popen):
            if item.poll() is None:
                os.killpg(item.pid, signal.SIGKILL)
                item.wait()
        elif _running(item):
            os.kill(item[0], signal.SIGKILL)


@pytest.mark.slow
def test_a_worker_killed_mid_document_costs_no_document_and_the_run_equals_a_one_process_run(
    tmp_path: Path, reaper: list[subprocess.Popen[bytes] | tuple[int, str]]
) -> None:
    raw = _raw_root(tmp_path)
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    one = subprocess.run(
        _argv(raw, reference, workers=1), cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-3000:]
    log = tmp_path / "core.log"
    with log.open("wb") as out:
        core = subprocess.Popen(
            _argv(raw, crashed, workers=2),
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    reaper.append(core)
    (victim, survivor), busy = _stop_both_mid_document(core, crashed)
    reaper.extend(i for i in map(_identity, (victim, survivor)) if i is not None)
    os.kill(victim, signal.SIGKILL)
    os.kill(survivor, signal.SIGCONT)
    status = core.wait(timeout=300)
    output = log.read_text(encoding="utf-8", errors="replace")
    assert status == 0, output[-5000:]
    retried = [line for line in output.splitlines() if "retrying it in a fresh worker" in line]
    # The victim was inside one of the two documents in progress; that one was retried.
    assert len(retried) == 1, output[-5000:]
    assert "killed by SIGKILL (signal 9" in retried[0]
    assert any(retried[0].startswith(f"{key}: ") for key in busy), (retried, busy)
    assert f"{len(DOCS)} succeeded, 0 failed" in output
    expected = _contents(reference)
    assert len([name for name in expected if name.startswith("chunks/")]) == len(DOCS)
    assert _contents(crashed) == expected


@pytest.mark.slow
def test_a_document_whose_worker_dies_again_on_its_retry_fails_alone_with_the_cause(
    tmp_path: Path, reaper: list[subprocess.Popen[bytes] | tuple[int, str]]
) -> None:
    raw = _raw_root(tmp_path)
    warehouse = tmp_path / "warehouse"
    log = tmp_path / "core.log"
    with log.open("wb") as out:
        core = subprocess.Popen(
            _argv(raw, warehouse, workers=2),
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    reaper.append(core)
    (victim, survivor), busy = _stop_both_mid_document(core, warehouse)
    reaper.extend(i for i in map(_identity, (victim, survivor)) if i is not None)
    os.kill(victim, signal.SIGKILL)
    os.kill(survivor, signal.SIGCONT)
    # The fresh worker started for the retry is handed the victim's document at once: kill it
    # too (long before a new interpreter could finish a document).
    deadline = time.monotonic() + 240
    fresh: list[int] = []
    while core.poll() is None and time.monotonic() < deadline and not fresh:
        fresh = [p for p in _workers_of(core.pid) if p not in (victim, survivor)]
        time.sleep(0.01)
    assert fresh, "no fresh worker was started for the retry"
    os.kill(fresh[0], signal.SIGKILL)
    status = core.wait(timeout=300)
    output = log.read_text(encoding="utf-8", errors="replace")
    assert status == 1, output[-5000:]
    failed = [line for line in output.splitlines() if line.startswith("FAILED ")]
    assert len(failed) == 1, output[-5000:]
    key = failed[0].removeprefix("FAILED ").partition(":")[0]
    assert key in busy
    assert "the worker process was killed by SIGKILL (signal 9" in failed[0]
    assert "(retried once in a fresh worker)" in failed[0]
    assert f"{len(DOCS) - 1} succeeded, 1 failed" in output
    # The others are complete; the failure is recorded as any failure of ``agrag core`` is.
    for other in DOCS:
        chunks = warehouse / "chunks" / f"{Document.node_id_for(other)}.parquet"
        assert chunks.exists() == (other != key), other
    record = json.loads((warehouse / "failures" / f"{Document.node_id_for(key)}.json").read_text())
    assert record["core"]["type"] == "WorkerDiedError"
    assert "killed by SIGKILL" in record["core"]["error"]


def test_agrag_core_killed_takes_its_worker_processes_with_it(
    tmp_path: Path, reaper: list[subprocess.Popen[bytes] | tuple[int, str]]
) -> None:
    raw = _raw_root(tmp_path)
    warehouse = tmp_path / "warehouse"
    core = subprocess.Popen(
        _argv(raw, warehouse, workers=2),
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    reaper.append(core)
    # Both workers started and the run under way (a document snapshotted).
    deadline = time.monotonic() + 240
    workers: list[tuple[int, str]] = []
    while core.poll() is None and time.monotonic() < deadline:
        found = [i for i in map(_identity, _workers_of(core.pid)) if i is not None]
        if len(found) == 2 and (warehouse / "documents").is_dir():
            workers = found
            break
        time.sleep(0.02)
    assert len(workers) == 2, f"agrag core never ran two workers (exit {core.poll()})"
    reaper.extend(workers)
    os.kill(core.pid, signal.SIGKILL)
    core.wait()
    # Bounded: the kernel kills them at once; the wait only absorbs a busy machine.
    deadline = time.monotonic() + 10
    while any(map(_running, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid, start in workers if _running((pid, start))] == []
