"""Documents of ``agrag core --workers N`` in N supervised worker processes.

Why not ``concurrent.futures``: one worker's death (the out-of-memory killer, a ``kill -9``)
breaks a ``ProcessPoolExecutor`` for good, so every document still queued failed with
``BrokenProcessPool``. Here each worker has its own pipe and the supervisor knows which document
each one is on: a death costs that document only, which is retried once in a fresh worker and
otherwise reported as failed with the cause; the other documents go on.

The other way round, workers die with the supervisor (``PR_SET_PDEATHSIG`` on Linux, else a
watchdog thread), so a killed ``agrag core`` leaves no orphan holding its memory.

Core module: no Dagster. Workers are started with ``spawn`` (a fresh interpreter, never a fork of
a process that holds threads: pyarrow, tokenizers) and each gets its share of the cores.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

from agrag_pipeline.batch import Outcome, run_isolated

if TYPE_CHECKING:
    from agrag_pipeline.runtime import Roots

log = logging.getLogger(__name__)

#: The step name failures of ``agrag core`` are recorded under (``Warehouse.record_failure``).
STEP = "core"
#: How often a document whose worker died is tried again, each time in a fresh worker.
RETRIES = 1
#: Thread pools of the math libraries a worker may load (torch, numpy's BLAS, tokenizers).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: ``prctl`` option: the signal this process gets when the thread that started it ends.
_PR_SET_PDEATHSIG = 1
#: How long a worker told to stop may take before it is killed.
_STOP_GRACE_S = 10.0

_WORKER: dict[str, Any] = {}


def run_documents(
    roots: Roots,
    keys: list[str],
    *,
    workers: int,
    embed: bool,
    force: bool,
    on_outcome: Callable[[Outcome[int]], None],
) -> None:
    """Every document through every step, ``workers`` documents at a time in worker processes
    (in this process when one worker suffices). Each document's output is the same either way:
    a document is processed by one process, start to end (a retry starts it again).

    Each document's ``Outcome`` goes to ``on_outcome`` as it comes and is not kept: a run over
    100,000 documents would otherwise hold 100,000 of them until its end; the caller keeps what
    its report needs (counts, the failures)."""
    workers = max(1, min(workers, len(keys)))
    if workers == 1:
        init_worker(roots, embed, force)
        for key in keys:
            on_outcome(run_one(key))
        return
    threads = max(1, (os.cpu_count() or 1) // workers)
    _Supervisor(roots, embed, force, workers, threads).run(keys, on_outcome)


def init_worker(roots: Roots, embed: bool, force: bool, threads: int | None = None) -> None:
    """Build the Runtime once per worker; in a pool, each worker's math libraries get their
    share of the cores (set before they load), so N workers do not each start N threads."""
    if threads is not None:
        for name in THREAD_VARIABLES:
            os.environ.setdefault(name, str(threads))
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from agrag_pipeline.runtime import Runtime

    _WORKER["runtime"] = Runtime.from_files(
        roots.settings_path, roots.raw_root, roots.warehouse_root, roots.cache_dir
    )
    _WORKER["embed"] = embed
    _WORKER["force"] = force


def run_one(key: str) -> Outcome[int]:
    """One document, all steps, its failure recorded (what each worker runs per document)."""
    from agrag_pipeline.pipeline import run_document

    rt = _WORKER["runtime"]

    def one(source_key: str) -> int:
        result = run_document(rt, source_key, embed=_WORKER["embed"], force=_WORKER["force"])
        return len(result.chunks)

    return run_isolated(STEP, [key], one, rt.warehouse)[0]


# -- the worker process --------------------------------------------------------------------------


def _worker_main(
    conn: Connection,
    parent_pid: int,
    roots: Roots,
    embed: bool,
    force: bool,
    threads: int,
) -> None:
    """A worker: source keys in, one ``Outcome`` out per key, until ``None`` or the pipe ends."""
    _die_with_parent(parent_pid)
    # Ctrl-C reaches the whole process group: the supervisor stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    start_error: str | None = None
    try:
        init_worker(roots, embed, force, threads)
    except Exception as exc:  # reported for each document it is given, never a silent exit
        start_error = f"the worker process could not start: {type(exc).__name__}: {exc}"
    while True:
        try:
            key = conn.recv()
        except EOFError:  # the supervisor is gone
            return
        if key is None:
            return
        outcome = (
            run_one(key) if start_error is None else Outcome(key, error=f"{key}: {start_error}")
        )
        conn.send(outcome)


def _die_with_parent(parent_pid: int) -> None:
    """Make this process end when the supervisor does, however it ends (even ``kill -9``).

    Linux: the kernel sends SIGKILL when the thread that started this process ends; that
    thread may have ended before the request was made, hence the check that the parent is
    still the expected one. Elsewhere: a thread that watches for a new parent (reparenting).
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent_pid:
                    os._exit(1)
                return
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    os._exit(1)


# -- the supervisor ------------------------------------------------------------------------------


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    #: The document it is working on (``None`` when idle).
    key: str | None = None
    #: Documents it has reported on.
    done: int = 0


class _Supervisor:
    """Starts up to ``size`` workers, hands each one document at a time, replaces the dead."""

    def __init__(self, roots: Roots, embed: bool, force: bool, size: int, threads: int) -> None:
        self._context = get_context("spawn")
        self._roots = roots
        self._worker_args = (os.getpid(), roots, embed, force, threads)
        self._size = size
        self._live: list[_Worker] = []
        self._stopping: list[_Worker] = []
        self._pending: deque[str] = deque()
        #: Documents whose worker died, each waiting for a fresh worker of its own.
        self._retries: deque[str] = deque()
        #: How each document's workers ended, for the documents that lost one.
        self._deaths: dict[str, list[str]] = {}
        self._finish: Callable[[Outcome[int]], None] = lambda outcome: None

    def run(self, keys: list[str], finish: Callable[[Outcome[int]], None]) -> None:
        self._pending, self._finish = deque(keys), finish
        try:
            while self._pending or self._retries or self._live:
                self._dispatch()
                if not self._live:
                    continue
                ready = set(wait([h for w in self._live for h in (w.conn, w.process.sentinel)]))
                for worker in list(self._live):
                    if worker.conn in ready or worker.process.sentinel in ready:
                        self._collect(worker)
        finally:
            self._stop_all()

    def _dispatch(self) -> None:
        """Give each idle worker the next document and let it go once none is left (its
        memory is freed); start workers for the rest, up to the size, retries first. A death
        frees a place, so a retried document always gets a fresh worker at once."""
        for worker in list(self._live):
            if worker.key is None:
                if self._pending:
                    self._assign(worker, self._pending.popleft())
                else:
                    self._retire(worker)
        while (self._retries or self._pending) and len(self._live) < self._size:
            queue = self._retries or self._pending
            self._assign(self._start(), queue.popleft())

    def _start(self) -> _Worker:
        ours, theirs = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main, args=(theirs, *self._worker_args), name="agrag-core-worker"
        )
        process.start()
        theirs.close()  # so that its death reads as the end of our pipe
        worker = _Worker(process, ours)
        self._live.append(worker)
        return worker

    def _assign(self, worker: _Worker, key: str) -> None:
        worker.key = key
        try:
            worker.conn.send(key)
        except OSError:  # it is already dead
            if worker.done:  # it died idle, before it got the document: not the document's fault
                worker.key = None
                self._bury(worker)
                self._pending.appendleft(key)  # (only idle workers take pending documents)
            else:  # a fresh worker that cannot even start is charged, so this cannot loop
                self._charge_death(worker)

    def _retire(self, worker: _Worker) -> None:
        self._live.remove(worker)
        with contextlib.suppress(OSError):
            worker.conn.send(None)
        self._stopping.append(worker)

    def _collect(self, worker: _Worker) -> None:
        """Take what the worker sent; if it has ended, charge its document with its death."""
        try:
            while worker.conn.poll():
                outcome: Outcome[int] = worker.conn.recv()
                worker.key = None
                worker.done += 1
                self._finish(outcome)
        except (EOFError, OSError):  # its end of the pipe closed: it is dead or dying
            pass
        else:
            if worker.process.is_alive():
                return
        self._charge_death(worker)

    def _charge_death(self, worker: _Worker) -> None:
        """Bury the worker; its document, if it had one, is retried or failed with the cause."""
        key = worker.key
        cause = self._bury(worker)
        if key is None:
            return
        causes = self._deaths.setdefault(key, [])
        causes.append(cause)
        if len(causes) <= RETRIES:
            log.warning(
                "%s: the worker process %s while working on it; retrying it in a fresh worker",
                key,
                cause,
            )
            self._retries.append(key)
            return
        self._finish(self._record_death(key, _death_message(key, causes)))

    def _bury(self, worker: _Worker) -> str:
        """Remove a dead (or dying) worker and say how it ended."""
        if worker in self._live:
            self._live.remove(worker)
        worker.process.join(_STOP_GRACE_S)
        if worker.process.is_alive():  # its pipe broke but it lingers: make sure it is gone
            worker.process.kill()
            worker.process.join()
        worker.conn.close()
        return describe_exit(worker.process.exitcode)

    def _record_death(self, key: str, message: str) -> Outcome[int]:
        """The document's failure, recorded as a failure inside a worker would have been."""
        from agrag_pipeline.storage import Warehouse

        def died(_: str) -> int:
            raise WorkerDiedError(message)

        return run_isolated(STEP, [key], died, Warehouse(self._roots.warehouse_root))[0]

    def _stop_all(self) -> None:
        """Tell every worker to stop and wait for it; one still on a document (an interrupted
        run) is killed. Nothing outlives the supervisor."""
        for worker in self._live:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        deadline = time.monotonic() + _STOP_GRACE_S
        for worker in self._stopping + self._live:
            if worker.key is not None:
                worker.process.kill()
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self._live, self._stopping = [], []


def _death_message(key: str, causes: list[str]) -> str:
    retried = f"retried {_times(len(causes) - 1)} in a fresh worker"
    if len(set(causes)) == 1:
        return f"{key}: the worker process {causes[0]} while working on it ({retried})"
    return f"{key}: the worker processes working on it ended: {'; '.join(causes)} ({retried})"


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


class WorkerDiedError(RuntimeError):
    """The process working on a document ended before it reported (killed, out of memory)."""


def describe_exit(exitcode: int | None) -> str:
    """``was killed by SIGKILL (signal 9)``, ``exited with status 3``: how a process ended."""
    if exitcode is None:
        return "did not end"
    if exitcode < 0:
        number = -exitcode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        hint = ": out of memory, or kill -9" if number == signal.SIGKILL else ""
        return f"was killed by {name} (signal {number}{hint})"
    return f"exited with status {exitcode}"
