"""Runs launched by forking a loaded code location (``run_forkserver``), with the shipped launcher.

Real runs in real forked processes against an instance made from the shipped ``dagster.yaml``:
the run executes and stores its chunks, its worker is a process of its own (neither the
launcher's nor the forkserver's), a changed settings file is read by the next run (the
forkserver starts again instead of forking stale code), termination cancels a running run, and
what the forkserver cannot load goes back to the default launch with the reason. The daemon's
side (a backfill through ``dagster dev``, a ``kill -9`` of a run's worker) runs through the same
launcher in ``test_dagster_dev_end_to_end.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import psutil
import pytest
from dagster import DagsterEventType, DagsterRunStatus

from agrag_pipeline.defs import run_forkserver
from agrag_pipeline.defs.dagster_internals import (
    GRPC_INFO_TAG,
    GrpcServerCodeLocationOrigin,
    LoadableTargetOrigin,
    ManagedGrpcPythonEnvCodeLocationOrigin,
    ReconstructableRepository,
)
from agrag_pipeline.defs.launch import MODULE, create_job_run
from agrag_pipeline.defs.run_forkserver import (
    ForkserverUnavailable,
    RunForkserver,
    _recording_opened_files,
    _WatchedFiles,
)
from agrag_pipeline.defs.run_launcher import LocalProcessRunLauncher, _served_here
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline_tests.dagster.dagster_support import (
    RANGE_END,
    RANGE_START,
    SAMPLE_RAW_ROOT,
    SHIPPED_INSTANCE,
)

CHUNK_ASSETS = ("raw_documents", "sections", "chunks")


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dg.DagsterInstance]:
    """The shipped instance over a copy of the sample documents; the settings file a copy too."""
    home, raw = tmp_path / "dagster_home", tmp_path / "raw"
    home.mkdir()
    shutil.copyfile(SHIPPED_INSTANCE, home / "dagster.yaml")
    shutil.copytree(SAMPLE_RAW_ROOT, raw)
    settings = tmp_path / "pipeline.yaml"
    shutil.copyfile(DEFAULT_SETTINGS_PATH, settings)
    for name, value in {
        "DAGSTER_HOME": home,
        "AGRAG_RAW_ROOT": raw,
        "AGRAG_WAREHOUSE_ROOT": tmp_path / "warehouse",
        "AGRAG_CACHE_DIR": tmp_path / "cache",
        "AGRAG_SETTINGS": settings,
        "AGRAG_AUTOMATION": "off",
    }.items():
        monkeypatch.setenv(name, str(value))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        keys = sorted(p.relative_to(raw).as_posix() for p in raw.rglob("*") if p.is_file())
        instance.add_dynamic_partitions("documents", keys)
        yield instance


def _launch(instance: dg.DagsterInstance, first: str, last: str) -> dg.DagsterRun:
    """A run of the chunk assets of the documents ``first``..``last``, launched as the daemon
    launches a backfill's run (the launcher of the instance, no code server involved)."""
    _, run = create_job_run(
        instance,
        "__ASSET_JOB",
        tags={RANGE_START: first, RANGE_END: last},
        run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}},
        asset_selection=[dg.AssetKey(a) for a in CHUNK_ASSETS],
    )
    instance.launch_run(run.run_id, workspace=None)  # type: ignore[arg-type]
    return run


def _wait(instance: dg.DagsterInstance, run_id: str, timeout_s: float = 240) -> dg.DagsterRun:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        if run.is_finished:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish in {timeout_s} s")


def _worker_pid(instance: dg.DagsterInstance, run_id: str) -> int:
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        if entry.message.startswith("Started process for run (pid: "):
            return int(entry.message.split("pid: ")[1].rstrip(")."))
    raise AssertionError("the run's worker never reported its start")


def _materialisation(instance: dg.DagsterInstance, asset: str, key: str) -> dg.EventLogRecord:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key]), limit=1
    ).records
    assert records, f"{asset} of {key} was not materialised"
    return records[0]


def _chunker_hash(instance: dg.DagsterInstance, key: str) -> str:
    chunks = _materialisation(instance, "chunks", key).asset_materialization
    assert chunks is not None
    return chunks.tags["agrag/chunker_hash"]


def _wait_gone(pid: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        assert time.monotonic() < deadline, f"the run worker (pid {pid}) did not exit"
        time.sleep(0.1)


def _holds_change_notices(pid: int) -> bool:
    descriptors = Path(f"/proc/{pid}/fd")
    return any("inotify" in os.readlink(fd) for fd in descriptors.iterdir())


def _keys(instance: dg.DagsterInstance) -> list[str]:
    return instance.get_dynamic_partitions("documents")


def test_a_forked_run_executes_in_a_process_of_its_own_and_stores_its_chunks(
    instance: dg.DagsterInstance,
) -> None:
    launcher = instance.run_launcher
    assert isinstance(launcher, LocalProcessRunLauncher)
    keys = _keys(instance)
    run = _wait(instance, _launch(instance, keys[0], keys[1]).run_id)
    assert run.status == DagsterRunStatus.SUCCESS
    assert GRPC_INFO_TAG not in run.tags  # not through a code server
    worker = _worker_pid(instance, run.run_id)
    (forkserver,) = launcher._forkservers.values()
    assert worker not in (os.getpid(), forkserver.pid)
    _wait_gone(worker)  # and it ends once its run is over
    for asset in CHUNK_ASSETS:
        for key in keys[:2]:
            materialised = _materialisation(instance, asset, key)
            assert materialised.run_id == run.run_id
    chunks = _materialisation(instance, "chunks", keys[0]).asset_materialization
    assert chunks is not None
    assert int(str(chunks.metadata["dagster/row_count"].value)) > 0
    table = str(chunks.metadata["dagster/uri"].value).removeprefix("file://")
    assert Path(table).is_file(), table


def test_a_changed_settings_file_is_read_by_the_next_run_from_a_new_forkserver(
    instance: dg.DagsterInstance,
) -> None:
    launcher = instance.run_launcher
    assert isinstance(launcher, LocalProcessRunLauncher)
    keys = _keys(instance)
    first = _wait(instance, _launch(instance, keys[0], keys[0]).run_id)
    assert first.status == DagsterRunStatus.SUCCESS
    (forkserver,) = launcher._forkservers.values()
    loaded_by = forkserver.pid
    second = _wait(instance, _launch(instance, keys[1], keys[1]).run_id)
    assert second.status == DagsterRunStatus.SUCCESS
    assert forkserver.pid == loaded_by  # nothing changed: the same forkserver forked it

    settings = Path(os.environ["AGRAG_SETTINGS"])
    text = settings.read_text()
    assert "max_tokens: 256" in text
    settings.write_text(text.replace("max_tokens: 256", "max_tokens: 200", 1))
    third = _wait(instance, _launch(instance, keys[2], keys[2]).run_id)
    assert third.status == DagsterRunStatus.SUCCESS
    assert forkserver.pid not in (None, loaded_by)  # started again: the old one exited
    hashes = [_chunker_hash(instance, key) for key in keys[:3]]
    assert hashes[0] == hashes[1] != hashes[2], hashes  # the third chunked at 200 tokens


def test_terminating_a_forked_run_interrupts_its_worker_and_cancels_the_run(
    instance: dg.DagsterInstance,
) -> None:
    keys = _keys(instance)
    run = _launch(instance, keys[0], keys[-1])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        current = instance.get_run_by_id(run.run_id)
        assert current is not None
        if current.status == DagsterRunStatus.STARTED:
            break
        assert not current.is_finished, current.status
        time.sleep(0.05)
    worker = _worker_pid(instance, run.run_id)
    launcher = instance.run_launcher
    assert isinstance(launcher, LocalProcessRunLauncher)
    (forkserver,) = launcher._forkservers.values()
    assert forkserver.pid is not None
    # The forkserver holds the kernel's change notices; the worker it forked let go of them.
    assert _holds_change_notices(forkserver.pid)
    assert not _holds_change_notices(worker)
    assert launcher.terminate(run.run_id)
    finished = _wait(instance, run.run_id, 120)
    assert finished.status == DagsterRunStatus.CANCELED
    _wait_gone(worker)


def test_a_code_location_the_forkserver_cannot_load_is_reported_with_the_reason(
    tmp_path: Path,
) -> None:
    origin = dg.serialize_value(
        ReconstructableRepository.for_module(
            "agrag_pipeline.no_such_module", "defs", str(tmp_path)
        ).get_python_origin()
    )
    forkserver = RunForkserver(sys.executable, origin, str(tmp_path))
    with pytest.raises(ForkserverUnavailable, match="no_such_module"):
        forkserver.fork_run("no-run", "{}")
    assert forkserver.pid is None  # nothing left running


def test_only_code_locations_loaded_on_this_machine_are_forked() -> None:
    def server(**kwargs: object) -> GrpcServerCodeLocationOrigin:
        return GrpcServerCodeLocationOrigin(location_name=MODULE, **kwargs)  # type: ignore[arg-type]

    assert _served_here(server(host="localhost", socket="/tmp/dagster.sock"))
    assert _served_here(server(host="127.0.0.1", port=4266))
    assert not _served_here(server(host="code.internal", port=4266))
    managed = ManagedGrpcPythonEnvCodeLocationOrigin(
        LoadableTargetOrigin(executable_path=sys.executable, module_name=MODULE), MODULE
    )
    assert _served_here(managed)


def test_the_forkserver_watches_the_files_code_reads_not_those_it_writes(tmp_path: Path) -> None:
    """A scratch file a library writes while loading and deletes later is no input of the code:
    watched, its deletion would make every fork after it start a new forkserver."""
    read, written, scratch = tmp_path / "read.yaml", tmp_path / "out.log", tmp_path / "scratch"
    read.write_text("a: 1\n")
    with _recording_opened_files() as opened:
        read.read_text()
        written.write_text("log line\n")
        descriptor = os.open(scratch, os.O_RDWR | os.O_CREAT)
        os.close(descriptor)
    watched = _WatchedFiles(opened)
    scratch.unlink()
    written.unlink()
    assert watched.first_changed() is None
    read.write_text("a: 2\n")
    assert watched.first_changed() == str(read)


def _watching(*paths: Path) -> _WatchedFiles:
    """Watched files as the forkserver records them (modules in memory come with them)."""
    with _recording_opened_files() as opened:
        for path in paths:
            # a file code looked for and did not find is watched too
            with contextlib.suppress(FileNotFoundError):
                path.read_bytes()
    watched = _WatchedFiles(opened)
    assert watched.notified, "the kernel's change notices were not available"
    return watched


def test_the_forkserver_notices_a_rewrite_that_puts_the_old_modification_time_back(
    tmp_path: Path,
) -> None:
    """Same size, same modification time, same inode: only the kernel's notice tells."""
    read = tmp_path / "settings.yaml"
    read.write_text("a: 1\n")
    before = read.stat()
    watched = _watching(read)
    with read.open("r+b") as handle:
        handle.write(b"a: 2\n")
    os.utime(read, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert watched.first_changed() == str(read)


def test_the_forkserver_notices_a_link_on_the_way_pointed_at_another_copy(tmp_path: Path) -> None:
    """A release folder swapped by pointing a symbolic link elsewhere: the files read through
    it are now others, though nothing was written to them."""
    for release in ("v1", "v2"):
        (tmp_path / release).mkdir()
        (tmp_path / release / "settings.yaml").write_text("a: 1\n")
    current = tmp_path / "current"
    current.symlink_to("v1")
    watched = _watching(current / "settings.yaml")
    (tmp_path / "v1" / "unrelated.log").write_text("written beside it\n")
    assert watched.first_changed() is None
    (tmp_path / "next").symlink_to("v2")
    (tmp_path / "next").replace(current)  # as deployments swap a link: atomically
    assert watched.first_changed() == str(current)


def test_the_forkserver_notices_a_file_it_did_not_find_appearing_in_a_new_folder(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "conf.d" / "local" / "override.yaml"
    watched = _watching(missing)
    assert watched.first_changed() is None
    missing.parent.mkdir(parents=True)
    missing.write_text("a: 2\n")
    assert watched.first_changed() == str(tmp_path / "conf.d")


def test_notices_lost_to_a_full_queue_fall_back_to_a_stat_of_each_file(tmp_path: Path) -> None:
    """More changes beside the watched files than the kernel queues: the notices are lost, the
    watched file's among them, so every file is compared with its stamp instead."""
    read = tmp_path / "settings.yaml"
    read.write_text("a: 1\n")
    watched = _watching(read)
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())

    def flood(round: int) -> None:
        for i in range(queued + 1):
            (tmp_path / f"scratch-{round}-{i}").touch()

    flood(1)
    assert watched.first_changed() is None  # lost notices alone start no new forkserver
    flood(2)
    read.write_text("a: 22\n")  # its notice does not fit in the full queue
    assert watched.first_changed() == str(read)


def test_a_worker_ends_without_unregistering_torchs_operators_and_runs_the_other_finalizers(
    tmp_path: Path,
) -> None:
    """A forked worker's exit skips torch's exit-time unregistration of its operators (it wrote
    to pages shared with the forkserver) and nothing else: a folder a finalizer removes at exit
    is removed."""
    folder = tmp_path / "removed at exit"
    script = f"""
import os, shutil, sys, weakref, torch
import agrag_pipeline.defs.run_forkserver as forkserver
class Holder: pass
holder = Holder()
os.mkdir({str(folder)!r})
weakref.finalize(holder, shutil.rmtree, {str(folder)!r})
torch_finalizers = [i for i in weakref.finalize._registry.values()
                    if i.func is sys.modules["torch.library"]._del_library]
assert torch_finalizers, "torch registers no operator library here any more"
forkserver._skip_torch_operator_unregistration()
left = [i for i in weakref.finalize._registry.values()
        if i.func is sys.modules["torch.library"]._del_library]
print(len(torch_finalizers), len(left))
forkserver._end_worker(0)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    registered, left = map(int, done.stdout.split())
    assert registered > 0 and left == 0
    assert not folder.exists()


def test_files_on_a_file_system_without_notices_are_compared_with_their_stamps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On NFS, SMB, FUSE or a virtual machine's shared folder another machine's write reaches
    no inotify watch here: such files are stat'ed before each fork, as without notices."""
    mounts = run_forkserver._mounts()
    assert mounts[-1][0] == "/", "the root is the shallowest mount"
    monkeypatch.setattr(run_forkserver, "_mounts", lambda: [(str(tmp_path), "nfs4"), *mounts])
    shared = tmp_path / "settings.yaml"
    shared.write_text("a: 1\n")
    watched = _watching(shared)
    notices = watched._notices
    assert notices is not None
    # No notice is trusted for its folder: a local write would raise one, another machine's not.
    assert str(tmp_path) not in {folder for folder, _ in notices._folders.values()}
    assert watched.first_changed() is None
    shared.write_text("a: 22\n")
    assert watched.first_changed() == str(shared)
