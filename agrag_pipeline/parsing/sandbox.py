"""Running another program on a document (LibreOffice, mandoc, the Typst compiler): without
network, in an empty folder, bounded by the parse's deadline and an address-space limit.

A document may ask its converter to fetch things (a Typst package, a linked image, an OLE
link), so the program runs in a network namespace of its own where ``unshare`` allows it; the
memory limit is set by the shell that then ``exec``s the program (``preexec_fn`` is unsafe in a
threaded worker).
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence

from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import ParseTimeoutError

_log = logging.getLogger(__name__)


@functools.cache
def offline_prefix() -> tuple[str, ...]:
    """The command prefix that runs a program without network (``unshare``), or ``()``."""
    unshare = shutil.which("unshare")
    if unshare is not None:
        for flags in (("--net",), ("--map-root-user", "--net")):
            try:
                probe = subprocess.run(
                    [unshare, *flags, "--", "true"], capture_output=True, timeout=30, check=False
                )
            except (OSError, subprocess.SubprocessError):
                continue
            if probe.returncode == 0:
                return (unshare, *flags, "--")
    _log.warning("no network namespace available (unshare): converters run with network access")
    return ()


def memory_limited(command: Sequence[str], memory_bytes: int) -> list[str]:
    """``command`` run by a shell that first limits its address space to ``memory_bytes``."""
    return [
        "/bin/sh",
        "-c",
        'ulimit -v "$0" && exec "$@"',
        str(max(memory_bytes // 1024, 1)),
        *command,
    ]


def run_offline(
    command: Sequence[str],
    *,
    stdin: bytes,
    source_key: str,
    what: str,
    timeout_s: float,
    memory_bytes: int,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``command`` on ``stdin``, offline and bounded; its exit status is the caller's to read.

    It runs in ``cwd``, else in an empty folder of its own (also its ``HOME``), with ``env``,
    else only ``PATH`` and a UTF-8 locale: nothing of this process's folder or environment.

    Raises:
        ParseTimeoutError: naming ``what``, when the document's deadline (or ``timeout_s``)
            runs out first; the program is killed.
    """
    budget = min(timeout_s, current_deadline(source_key).remaining)
    if budget <= 0:
        raise ParseTimeoutError(source_key, f"no time left in the budget to run {what}")
    try:
        with tempfile.TemporaryDirectory(prefix="agrag-run-") as empty:
            return subprocess.run(
                [*offline_prefix(), *memory_limited(command, memory_bytes)],
                input=stdin,
                capture_output=True,
                cwd=cwd or empty,
                env=dict(env or {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": empty}),
                timeout=budget,
                check=False,
            )
    except subprocess.TimeoutExpired:
        raise ParseTimeoutError(
            source_key, f"{what} did not finish within {budget:g} s (time budget): it was stopped"
        ) from None


__all__ = ["memory_limited", "offline_prefix", "run_offline"]
