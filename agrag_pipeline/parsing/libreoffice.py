"""LibreOffice headless as a converter: one file in, its OOXML equivalent out, within budgets.

Why a converter: legacy binary Office (.doc/.xls/.ppt), OpenDocument and RTF are read by
LibreOffice far better than by any permissive Python library, and its OOXML output is what our
DOCX/XLSX/PPTX parsers already read well (BENCHMARKS.md, "Legacy Office and OpenDocument").

Each conversion is one ``soffice --headless --convert-to`` process with

- its own temporary profile (``-env:UserInstallation``), so parallel conversions never share or
  lock a profile, and nothing is left in the user's home. It is a copy of the profile the
  process's first successful conversion made (``_keep_profile_template``): LibreOffice's set-up of a
  new profile cost every conversion 0.2-0.4 s of its ~1.4 s;
- a memory budget (``ulimit -v``, applied by ``sh`` before it execs ``soffice``: no
  ``preexec_fn``, which is unsafe in a threaded worker);
- a time budget: the smaller of ``CONVERT_TIMEOUT_S`` and what the parse's ``Deadline`` has
  left. It runs in a new process group (session); past the budget the whole group is killed
  with SIGKILL (``soffice`` is a script that starts ``oosplash``, which starts ``soffice.bin``:
  killing only the first would leave the others running). The group is killed after a normal
  exit too, so a straggler never outlives its conversion;
- no network where the machine allows a network namespace (``unshare --net``, else an
  unprivileged ``unshare --map-root-user --net``; ``sandbox.offline_prefix``): a document's
  linked images or remote references cannot be fetched while it is converted. Where neither
  works (a container without namespaces) the conversion runs with the machine's network and a
  warning is logged once.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    ParseTimeoutError,
    UnsupportedFormatError,
)
from agrag_pipeline.parsing.sandbox import memory_limited, offline_prefix

#: Longest one conversion may run, in seconds (the parse's own deadline may cut it shorter).
#: LibreOffice starts in 2-3 s; a large real document converts in well under a minute.
CONVERT_TIMEOUT_S = 120.0
#: Address-space limit of the converter, in bytes (soffice.bin converts in ~0.5 GiB).
CONVERT_MEMORY_BYTES = 2 * 1024**3
#: How much of the converter's output an error quotes.
_OUTPUT_TAIL = 600

#: Lines of converter output that say nothing about the document.
_NOISE = re.compile(r"failed to launch javaldx|java may not function correctly")


def soffice_path() -> str | None:
    """The ``soffice`` (or ``libreoffice``) executable on PATH, or None."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def convert(
    raw: bytes,
    source_key: str,
    *,
    source_suffix: str,
    target: str,
    timeout_s: float = CONVERT_TIMEOUT_S,
    memory_bytes: int = CONVERT_MEMORY_BYTES,
) -> bytes:
    """``raw`` (a file ending in ``source_suffix``) converted by LibreOffice to ``target``
    (``"docx"``, ``"xlsx"``, ``"pptx"``).

    Raises:
        UnsupportedFormatError: LibreOffice is not installed.
        ParseTimeoutError: the conversion ran past its time budget (its processes are killed).
        CorruptDocumentError: LibreOffice gave no output (it could not read the file).
    """
    program = soffice_path()
    if program is None:
        raise UnsupportedFormatError(
            source_key,
            f"reading {source_suffix} files needs LibreOffice (soffice), which is not installed "
            "(bin/setup installs it)",
        )
    budget = min(timeout_s, current_deadline(source_key).remaining)
    if budget <= 0:
        raise ParseTimeoutError(source_key, "no time left in the budget to convert it")
    with tempfile.TemporaryDirectory(prefix="agrag-soffice-") as tmp:
        work = Path(tmp)
        source = work / f"document{source_suffix}"
        source.write_bytes(raw)
        out_dir = work / "out"
        profile = work / "profile"
        template = _PROFILE_TEMPLATES.get(os.getpid())
        if template is not None:
            try:
                shutil.copytree(template, profile, symlinks=True)
            except OSError:  # LibreOffice makes one, as at first
                shutil.rmtree(profile, ignore_errors=True)
        command = [
            *offline_prefix(),
            *memory_limited(
                [
                    program,
                    "--headless",
                    "--norestore",
                    "--nologo",
                    "--nolockcheck",
                    "--nodefault",
                    f"-env:UserInstallation={profile.as_uri()}",
                    "--convert-to",
                    target,
                    "--outdir",
                    str(out_dir),
                    str(source),
                ],
                memory_bytes,
            ),
        ]
        log_path = work / "soffice.log"
        env = {**os.environ, "HOME": str(work), "SAL_USE_VCLPLUGIN": "svp"}
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=work,
                env=env,
                start_new_session=True,
            )
            try:
                process.wait(timeout=budget)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                raise ParseTimeoutError(
                    source_key,
                    f"LibreOffice did not convert it within {budget:g} s (time budget): "
                    "the converter was killed",
                ) from None
            except BaseException:
                _kill_group(process)
                raise
            _kill_group(process)  # stragglers of a finished conversion
        converted = out_dir / f"document.{target}"
        if not converted.is_file():
            output = _converter_output(log_path.read_text("utf-8", "replace"))
            raise CorruptDocumentError(
                source_key,
                f"LibreOffice could not read it as {source_suffix} (exit status "
                f"{process.returncode}): {output or 'no output'}",
            )
        if template is None:
            _keep_profile_template(profile)
        return converted.read_bytes()


#: This process's copy of a profile LibreOffice made, by process id (a forked worker makes its
#: own, and only the process that made one removes it at exit).
_PROFILE_TEMPLATES: dict[int, Path] = {}
_TEMPLATE_LOCK = threading.Lock()
#: A kept profile's folder: this, the process id that made it, "-", a random part.
_TEMPLATE_PREFIX = "agrag-soffice-profile-"


def _keep_profile_template(profile: Path) -> None:
    """Keep a copy of ``profile``, made by a conversion that succeeded, for this process's next
    conversions to start from."""
    pid = os.getpid()
    with _TEMPLATE_LOCK:
        if pid in _PROFILE_TEMPLATES or not profile.is_dir():
            return
        kept = Path(tempfile.mkdtemp(prefix=f"{_TEMPLATE_PREFIX}{pid}-"))
        _remove_orphaned_templates(kept.parent)
        try:
            shutil.copytree(profile, kept / "profile", symlinks=True)
        except OSError:
            shutil.rmtree(kept, ignore_errors=True)
            return
        _PROFILE_TEMPLATES[pid] = kept / "profile"
        atexit.register(_remove_profile_template, pid, kept)


def _remove_profile_template(pid: int, kept: Path) -> None:
    if os.getpid() == pid:
        shutil.rmtree(kept, ignore_errors=True)


def _remove_orphaned_templates(folder: Path) -> None:
    """Remove the kept profiles whose process is gone without removing its own (killed with
    SIGKILL: no exit handler runs), so a worker killed again and again leaves nothing behind."""
    for found in folder.glob(f"{_TEMPLATE_PREFIX}*"):
        pid = found.name[len(_TEMPLATE_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(found, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _converter_output(log: str) -> str:
    """The tail of the converter's output, without the start-up noise every run prints (no
    Java here: "failed to launch javaldx"), so an error quotes LibreOffice's own reason
    ("Error: source file could not be loaded")."""
    lines = [line for line in log.splitlines() if line.strip() and not _NOISE.search(line)]
    return "\n".join(lines).strip()[-_OUTPUT_TAIL:]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL every process of the conversion's group, then reap its leader."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


__all__ = [
    "CONVERT_MEMORY_BYTES",
    "CONVERT_TIMEOUT_S",
    "convert",
    "offline_prefix",
    "soffice_path",
]
