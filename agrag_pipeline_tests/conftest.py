"""Fixtures shared by the whole suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = (REPO_ROOT / ".." / "shared" / "corpus").resolve()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The reference corpus beside the checkout (``../shared/corpus``); CI always has it."""
    if not CORPUS_DIR.is_dir():
        raise RuntimeError(f"the reference corpus is missing: expected it at {CORPUS_DIR}")
    return CORPUS_DIR
