"""A finished ``agrag`` run exits with its own status even when a native library's teardown would
abort the process after its last line.

The fault, injected for real: libc's ``abort`` registered in the ``agrag`` process the way C++
registers a static object's destructor (``__cxa_atexit``), so the native teardown after
Python's finalization raises SIGABRT, as Arrow's thread pools did on a busy machine after a
finished run ("terminate called without an active exception", exit -6). Python's own exit
handlers and threads still get their turn.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

#: libc's ``abort`` as a native exit handler, run after Python's finalization.
_FAULT = """
import ctypes
libc = ctypes.CDLL(None)
libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)
"""
#: Runs ``agrag`` (``cli.entry``, what the installed command calls) after arming the fault, with
#: a Python exit handler and a thread that is no daemon, whose work must not be cut short.
_ARMED_AGRAG = (
    _FAULT
    + """
import atexit, sys, threading, time
atexit.register(lambda: print("python exit handler ran", flush=True))
def finishing():
    time.sleep(0.5)
    print("thread finished its work", flush=True)
threading.Thread(target=finishing).start()
from agrag_pipeline.cli import entry
sys.argv = ["agrag", *sys.argv[1:]]
entry()
"""
)


def _armed_agrag(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _ARMED_AGRAG, *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_fault_aborts_an_ordinary_python_exit() -> None:
    """The injected fault is real: the same handler ends a plain interpreter with SIGABRT."""
    armed = _FAULT + "print('done')\n"
    out = subprocess.run(
        [sys.executable, "-c", armed], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.stdout == "done\n"
    assert out.returncode == -signal.SIGABRT


def test_a_finished_run_exits_with_its_status_when_native_teardown_would_abort(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "good.md").write_text("# Good\n\nKept.\n", encoding="utf-8")
    (raw / "broken.pdf").write_bytes(b"%PDF-1.7\nnot a PDF at all\n")
    warehouse = tmp_path / "warehouse"
    argv = ["core", "--no-embed", "--workers", "1", "--raw-root", str(raw)]
    out = _armed_agrag(*argv, "--warehouse", str(warehouse))
    assert out.returncode == 1, out.stdout + out.stderr  # a document failed: 1, not -6
    assert "1 succeeded, 1 failed" in out.stdout
    assert "FAILED broken.pdf:" in out.stdout
    assert "thread finished its work" in out.stdout
    assert "python exit handler ran" in out.stdout
    assert "terminate called" not in out.stderr

    (raw / "broken.pdf").unlink()
    again = _armed_agrag(*argv, "--warehouse", str(warehouse))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "python exit handler ran" in again.stdout
