"""Fixtures shared by the whole suite."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = (REPO_ROOT / ".." / "shared" / "corpus").resolve()

# A suite started in the background by a shell without job control (`./bin/test &` in a script,
# nohup) starts with SIGINT ignored, and every server a test starts inherits that. Dagster's
# code server answers SIGTERM with its SIGINT handler, so it then ignores the SIGTERM that stops
# it. A handled signal is reset to its default in a child, so the servers get what a service
# manager gives them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The reference corpus beside the checkout (``../shared/corpus``); CI always has it."""
    if not CORPUS_DIR.is_dir():
        raise RuntimeError(f"the reference corpus is missing: expected it at {CORPUS_DIR}")
    return CORPUS_DIR
