"""Run workers forked from a process that has already loaded the code location.

Why: Dagster's code server starts every run in a fresh interpreter (``spawn``), which imports
Dagster and this project again and builds the definitions: about 2.5 CPU seconds a run here, more
than all of Dagster's per-event work for a run of 50 documents, and nearly all the cost of the
one-document runs an incremental update makes (BENCHMARKS.md, "Run workers forked from a loaded
code location"). A forkserver pays that once: it loads the code location and builds its
definitions, then forks one fresh process per run, which executes it exactly as ``dagster api
execute_run`` (the run worker Dagster's own container launchers start) does. Each run keeps a
process of its own: a ``kill -9`` costs that run only, run monitoring sees it gone, and
termination interrupts it the way Dagster's code server does (``SIGINT``).

Never stale: while loading, the forkserver records every file it reads (each imported module's
source, ``data/pipeline.yaml``, the OCR models the fingerprints hash); before each fork it checks
that none changed, and if one did it exits instead and the launcher starts a new one, so a run
always executes the code and settings on disk, as a freshly spawned worker would. The check
reads the kernel's notices of changes (inotify) to those files and to the folders on the way to
them, so it costs nothing while nothing changed; where inotify is missing it compares a stat of
each file (12,000 here, 40 ms a fork). Environment variables are those of the process that
started it, as a code server's are.

Fork safety: it forks only while it runs no Python thread but its own, and it never opens the
instance or any other connection. The native threads it holds (numpy's BLAS pool, pyarrow's
allocator) belong to libraries that re-create them in a forked child; torch is imported but
runs no operation here (``preload``), so its OpenMP pool, which would not survive a fork, starts
in each worker. What it loaded is frozen for the garbage collector (``gc.freeze``): a worker
neither traverses nor copies it. A worker ends as Python's shutdown ends a process (threads
joined, ``atexit``, every unreachable object collected and finalised) but without clearing the
loaded modules one by one (``_end_worker``).

The launcher side is ``RunForkserver``; ``python -m agrag_pipeline.defs.run_forkserver FD
ORIGIN`` is the server, talking over the socket ``FD`` in JSON lines.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import io
import json
import logging
import os
import re
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import traceback
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

log = logging.getLogger(__name__)

#: How long the launcher waits for a new forkserver to load the code location.
START_TIMEOUT_S = 300.0
#: How long the launcher waits for a loaded forkserver to fork (at worst a stat of each watched
#: file).
FORK_TIMEOUT_S = 30.0
#: How often the forkserver wakes to reap its finished children when no request comes.
_REAP_INTERVAL_S = 1.0
#: Files read while loading that are not inputs of the code (devices, the process's own state).
_UNWATCHED_PREFIXES = ("/dev/", "/proc/", "/sys/")


class ForkserverUnavailable(RuntimeError):
    """The forkserver could not start or fork this run: launch it the default way."""


class ForkserverStale(ForkserverUnavailable):
    """A file the forkserver loaded has changed since: start a new forkserver."""


# --- launcher side ---------------------------------------------------------------------------


class RunForkserver:
    """One forkserver process for one code location (its interpreter and code pointer).

    Not thread-safe: the run launcher serialises its calls.
    """

    def __init__(self, executable: str, serialized_origin: str, working_directory: str | None):
        self._executable = executable
        self._origin = serialized_origin
        self._cwd = working_directory
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._stream: io.BufferedRWPair | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def fork_run(self, run_id: str, serialized_instance_ref: str) -> int:
        """Fork a worker that executes ``run_id``; its pid. Starts the forkserver when needed."""
        for attempt in (1, 2):
            if self._process is None or self._process.poll() is not None:
                self._start()
            try:
                reply = self._call(
                    {"run_id": run_id, "instance_ref": serialized_instance_ref}, FORK_TIMEOUT_S
                )
            except ForkserverStale as stale:
                log.info("the run forkserver starts again: %s", stale)
                self.close()
                if attempt == 2:
                    raise
                continue
            return int(reply["pid"])
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop the forkserver (the runs it forked go on: they are processes of their own)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._socket is not None:
            self._socket.close()  # the forkserver reads the end of its input and exits
            self._socket = None
        if self._process is not None:
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def _start(self) -> None:
        self.close()
        ours, theirs = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [
                    self._executable,
                    "-m",
                    "agrag_pipeline.defs.run_forkserver",
                    str(theirs.fileno()),
                    self._origin,
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                cwd=self._cwd,
            )
        except OSError as error:
            ours.close()
            raise ForkserverUnavailable(f"cannot start {self._executable}: {error}") from error
        finally:
            theirs.close()
        self._socket, self._stream = ours, ours.makefile("rwb")
        self._call(None, START_TIMEOUT_S)  # the server's first line says it has loaded the code

    def _abandon(self, reason: str) -> NoReturn:
        """Kill a forkserver that stopped answering as it should; the run goes the default way."""
        assert self._process is not None
        self._process.kill()
        self.close()
        raise ForkserverUnavailable(reason)

    def _call(self, request: dict[str, str] | None, timeout_s: float) -> dict[str, Any]:
        stream, control = self._stream, self._socket
        assert stream is not None and control is not None and self._process is not None
        try:
            if request is not None:
                stream.write(json.dumps(request).encode() + b"\n")
                stream.flush()
            # one request at a time, so nothing is ever left in the stream's buffer
            ready, _, _ = select.select([control], [], [], timeout_s)
            line = stream.readline() if ready else b""
        except OSError as error:
            line = b""
            detail = str(error)
        else:
            detail = "no answer" if not ready else "it exited"
        if not line:
            self._abandon(f"the run forkserver failed: {detail}")
        try:
            reply: dict[str, Any] = json.loads(line)
        except ValueError:
            self._abandon(f"the run forkserver answered {line[:200]!r}")
        if "stale" in reply:
            raise ForkserverStale(f"{reply['stale']} changed since the forkserver loaded it")
        if "error" in reply:
            self.close()
            raise ForkserverUnavailable(reply["error"])
        return reply


# --- server side ------------------------------------------------------------------------------


@contextmanager
def _recording_opened_files() -> Iterator[set[str]]:
    """Every file path opened for reading while the block runs (Python's ``open`` audit event).

    A file opened to be written (a library's scratch file, deleted later) is an output, not an
    input of the code: watching it would make every fork after its deletion start again.
    """
    opened: set[str] = set()
    recording = True

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if not recording or event != "open" or not isinstance(args[0], str):
            return
        mode, flags = args[1], args[2]
        if isinstance(mode, str):
            reading = not any(c in mode for c in "wax+")
        else:  # os.open: mode None, the flags say
            reading = isinstance(flags, int) and flags & os.O_ACCMODE == os.O_RDONLY
        if reading:
            opened.add(args[0])

    sys.addaudithook(hook)  # cannot be removed: it stops recording instead
    try:
        yield opened
    finally:
        recording = False


def _stamp(path: str) -> tuple[int, int, int, int] | None:
    """What tells a file changed: its type, time, size and inode (an editor's save replaces
    it); None when it is gone."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return stat.S_IFMT(status.st_mode), status.st_mtime_ns, status.st_size, status.st_ino


class _WatchedFiles:
    """The files the loaded code came from, with the state they had when it was loaded."""

    def __init__(self, opened: set[str]) -> None:
        paths = set(opened)
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str):
                paths.add(path)
        watched = [os.path.abspath(p) for p in paths if not p.startswith(_UNWATCHED_PREFIXES)]
        # Notices first, then the stamps: a change after a stamp is always noticed.
        self._notices, unnoticed = _ChangeNotices.watching(watched)
        stamps = {path: _stamp(path) for path in watched}
        self._stamps = {  # a package's folder is no input (its files are)
            path: stamp
            for path, stamp in stamps.items()
            if stamp is None or stamp[0] != stat.S_IFDIR
        }
        self._unnoticed = {path: self._stamps[path] for path in unnoticed if path in self._stamps}

    def __len__(self) -> int:
        return len(self._stamps)

    @property
    def notified(self) -> bool:
        """Whether the kernel notices changes to the files (else each check stats every one)."""
        return self._notices is not None

    def first_changed(self) -> str | None:
        stamps = self._stamps
        if self._notices is not None:
            changed = self._notices.first_changed()
            if changed is not _NOTICES_LOST:
                if changed is not None:
                    return changed
                stamps = self._unnoticed  # those on file systems that give no notices
        for path, stamp in stamps.items():
            if _stamp(path) != stamp:
                return path
        return None

    def close(self) -> None:
        """Let go of the kernel's notices (a forked worker must not hold them)."""
        if self._notices is not None:
            self._notices.close()
            self._notices = None


#: What ``_ChangeNotices.first_changed`` answers when the kernel's queue overflowed.
_NOTICES_LOST = "<notices lost>"

#: File systems whose every change goes through this kernel, so inotify sees it. Not so for
#: network and user-space ones (NFS, SMB, FUSE, 9p and virtiofs of WSL and virtual machines):
#: another machine's write is never noticed there, so their files are compared with stamps.
_NOTICED_FILE_SYSTEMS = frozenset(
    {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "bcachefs", "f2fs", "jfs", "reiserfs", "zfs",
        "tmpfs", "ramfs", "overlay", "squashfs", "iso9660", "vfat", "exfat", "ntfs3", "hfsplus",
    }
)  # fmt: skip


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of this process's mounts, the deepest first."""
    mounts = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
            for line in table:
                fields, _, rest = line.partition(" - ")
                point = re.sub(r"\\([0-7]{3})", _octal_escape, fields.split(" ")[4])
                mounts.append((point, rest.split(" ", 1)[0]))
    except (OSError, IndexError):
        return []
    return sorted(mounts, key=lambda mount: len(mount[0]), reverse=True)


def _octal_escape(match: re.Match[str]) -> str:
    return chr(int(match[1], 8))  # mountinfo writes a space in a path as \040


class _ChangeNotices:
    """The kernel's notices (inotify) of changes to the watched files and to the folders on the
    way to them: read before each fork, they cost a system call while nothing changed.

    Each folder holding a watched file is watched for changes to that file (written, its
    metadata set, replaced, moved, deleted, created where it was missing); each folder on the way
    for its entry being replaced, moved or deleted (a symbolic link pointed elsewhere, a package's
    folder removed). Paths are watched as given and as resolved, so both a link and what it
    points to are covered. Stricter than the stamps: a write that puts the old modification time
    back is noticed too.
    """

    # inotify's event bits (inotify(7))
    _MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
    _MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
    _DELETE_SELF, _MOVE_SELF, _UNMOUNT, _Q_OVERFLOW, _IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
    _ENTRY = _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE
    _FILE = _ENTRY | _MODIFY | _ATTRIB | _CLOSE_WRITE
    _WATCH_ENDED = _DELETE_SELF | _MOVE_SELF | _UNMOUNT | _IGNORED

    def __init__(self, inotify: Any, folders: dict[int, tuple[str, dict[str, bool]]]) -> None:
        self._inotify = inotify
        self._folders = folders  # watch descriptor -> folder, entry name -> whether a file

    @classmethod
    def watching(cls, paths: list[str]) -> tuple[_ChangeNotices | None, list[str]]:
        """Notices for these files, and the files they do not cover (on a file system whose
        changes the kernel may not see); no notices at all where the kernel cannot give them
        (not Linux, the watch limit reached, a folder that cannot be read)."""
        try:
            from inotify_simple import INotify
        except ImportError:
            return None, paths
        mounts = _mounts()
        resolved: dict[str, str] = {}

        def noticed(folder: str) -> bool:
            real = resolved.get(folder) or resolved.setdefault(folder, os.path.realpath(folder))
            for point, kind in mounts:
                if real == point or real.startswith(point.rstrip("/") + "/"):
                    return kind in _NOTICED_FILE_SYSTEMS
            return False

        entries: dict[str, dict[str, bool]] = {}  # folder -> entry name -> whether a file

        def add(folder: str, name: str, is_file: bool) -> None:
            names = entries.setdefault(folder, {})
            names[name] = names.get(name, False) or is_file

        unnoticed = []
        for path in paths:
            targets = [os.path.split(path)]
            if os.path.islink(path):
                targets.append(os.path.split(os.path.realpath(path)))
            if not all(noticed(folder) for folder, _ in targets):
                unnoticed.append(path)
                continue
            for folder, name in targets:
                add(folder, name, True)
        chained: set[str] = set()  # folders whose own entry, and those above, are watched
        for folder in list(entries):
            for child in {folder, resolved.get(folder) or os.path.realpath(folder)}:
                while child not in chained:
                    chained.add(child)
                    parent, name = os.path.split(child)
                    if not name:
                        break
                    add(parent, name, False)
                    child = parent
        try:
            inotify = INotify(nonblocking=True)
        except OSError as error:
            log.info("the run forkserver stats its files before each fork: %s", error)
            return None, paths
        folders: dict[int, tuple[str, dict[str, bool]]] = {}
        try:
            for folder, names in entries.items():
                try:
                    watch = inotify.add_watch(folder, cls._FILE | cls._DELETE_SELF | cls._MOVE_SELF)
                except (FileNotFoundError, NotADirectoryError):
                    continue  # missing: its creation is an entry event of the folder above
                # One watch per folder, whichever path reached it (a link and its target).
                watched_names = folders.setdefault(watch, (folder, {}))[1]
                for name, is_file in names.items():
                    watched_names[name] = watched_names.get(name, False) or is_file
        except OSError as error:
            inotify.close()
            log.info("the run forkserver stats its files before each fork: %s", error)
            return None, paths
        return cls(inotify, folders), unnoticed

    def first_changed(self) -> str | None:
        """The first watched path noticed changed since the last call, else None;
        ``_NOTICES_LOST`` when the kernel's queue overflowed and notices were dropped."""
        for event in self._inotify.read(timeout=0):
            if event.mask & self._Q_OVERFLOW:
                return _NOTICES_LOST
            folder, names = self._folders.get(event.wd, ("", {}))
            if event.mask & self._WATCH_ENDED:
                return folder or _NOTICES_LOST
            is_file = names.get(event.name)
            if is_file is None:
                continue  # another entry of a watched folder
            if is_file or event.mask & self._ENTRY:
                return os.path.join(folder, event.name)
        return None

    def close(self) -> None:
        self._inotify.close()


def _load_code_location(serialized_origin: str) -> None:
    """Import the code location and build its definitions and jobs, as a run worker would, and
    load what its runs' first documents would."""
    from dagster import deserialize_value

    from agrag_pipeline.defs.dagster_internals import (
        RUN_WORKER_MODULES,
        RepositoryPythonOrigin,
        recon_repository_from_origin,
    )

    origin = deserialize_value(serialized_origin, RepositoryPythonOrigin)
    repository = recon_repository_from_origin(origin).get_definition()
    repository.get_all_jobs()
    for module in RUN_WORKER_MODULES:  # what every run worker imports next
        importlib.import_module(module)
    from agrag_pipeline.defs.instance_storage import warm_process

    warm_process()  # what every run worker's instance reads as it opens
    from agrag_pipeline.preload import preload

    preload()  # what each run's first documents would load (libraries, word lists)


def _execute_forked_run(run_id: str, serialized_instance_ref: str) -> int:
    """The body of ``dagster api execute_run``, in this already loaded process."""
    from dagster import DagsterInstance, deserialize_value

    from agrag_pipeline.defs.dagster_internals import (
        InstanceRef,
        capture_interrupts,
        execute_run_command_body,
    )

    with capture_interrupts():
        instance_ref = deserialize_value(serialized_instance_ref, InstanceRef)
        with DagsterInstance.from_ref(instance_ref) as instance:
            return execute_run_command_body(run_id, instance, set_exit_code_on_failure=True)


class _WorkerDone(BaseException):
    """Raised in a forked worker when its run is over: it unwinds the forkserver's frames to
    ``main``, which ends the worker (``_end_worker``)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _fork(
    run_id: str, serialized_instance_ref: str, control: socket.socket, watched: _WatchedFiles
) -> int:
    """Fork a worker for the run; its pid here. The worker raises ``_WorkerDone``."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        watched.close()
        # The worker must not hold the forkserver's end of the socket: the launcher could then
        # never see it exit. The descriptor now names /dev/null, so whatever closes it later
        # closes nothing else.
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, control.fileno(), inheritable=False)
        os.close(null)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = _execute_forked_run(run_id, serialized_instance_ref)
    except BaseException:
        traceback.print_exc()
    raise _WorkerDone(code)


def _reap_children() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _serve(control: socket.socket, watched: _WatchedFiles) -> None:
    stream = control.makefile("rwb")

    def reply(message: dict[str, Any]) -> None:
        stream.write(json.dumps(message).encode() + b"\n")
        stream.flush()

    reply({"ready": True, "watched_files": len(watched), "notified": watched.notified})
    while True:
        ready, _, _ = select.select([control], [], [], _REAP_INTERVAL_S)
        _reap_children()
        if not ready:
            continue
        line = stream.readline()
        if not line:  # the launcher closed the socket or died: the runs go on without us
            return
        request = json.loads(line)
        changed = watched.first_changed()
        if changed is not None:
            reply({"stale": changed})
            return
        if threading.active_count() != 1:
            reply({"error": "the run forkserver has started a thread; it cannot fork safely"})
            return
        gc.freeze()
        reply({"pid": _fork(request["run_id"], request["instance_ref"], control, watched)})


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[0]))
    control.set_inheritable(False)  # not to the OCR engine or LibreOffice a run starts
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C of `dagster dev` is the daemon's
    try:
        with _recording_opened_files() as opened:
            _load_code_location(argv[1])
        watched = _WatchedFiles(opened)
    except BaseException:
        error = f"loading the code location failed:\n{traceback.format_exc()}"
        control.sendall(json.dumps({"error": error}).encode() + b"\n")
        return 1
    # What is loaded now is never collected again, here or in a worker: a worker neither
    # traverses it nor copies its pages.
    gc.collect()
    gc.freeze()
    try:
        _serve(control, watched)
    except _WorkerDone as done:  # in a forked worker, its run over
        _end_worker(done.code)
    return 0


def _end_worker(code: int) -> None:
    """End a forked run worker: Python's shutdown, less tearing down the loaded code.

    Non-daemon threads are joined, ``atexit`` handlers run (logging's flush among them) and
    every object the run left unreachable is collected, finalisers run; then the process
    exits without clearing each module of the forkserver's loaded code one by one, which
    wrote to every page the worker shares with the forkserver (0.4 CPU s and 80,000 page
    copies a worker here) to free memory the exit frees anyway.
    """
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # Python's shutdown does it first
        _skip_torch_operator_unregistration()
        atexit._run_exitfuncs()
        gc.collect()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _skip_torch_operator_unregistration() -> None:
    """Detach the exit-time finalizers with which ``torch.library`` unregisters the operator
    kernels torch's Python code registered (thousands, one finalizer per library): unregistering
    them in a worker about to exit wrote to pages of torch's dispatcher that it shares with the
    forkserver (about 8,000 page copies and 0.05 CPU s a worker). The other finalizers run."""
    library = sys.modules.get("torch.library")
    unregister = getattr(library, "_del_library", None)
    if unregister is None:
        return
    registry = getattr(weakref.finalize, "_registry", {})  # CPython's, since 3.4
    for finalizer, info in list(registry.items()):
        if getattr(info, "func", None) is unregister:
            finalizer.detach()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
