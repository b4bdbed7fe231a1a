"""A real ``agrag core`` and a real ``agrag materialize`` killed with SIGKILL at random moments,
many times over, then run once more: the warehouse ends exactly as after one uninterrupted run
(every table and record of the core layout equal, ``created_at`` aside; raw snapshots and text
layers byte for byte) and no temporary file is left behind.

Why it holds: every file is written to a temporary name and renamed into place (a kill leaves
the old file or the new one); a rerun verifies what it reads (hashes, Parquet checksums) and
rebuilds what is missing or damaged; ``agrag`` removes the temporaries of killed writers when it
starts. The kill moments come from a seeded generator, spread over the whole run.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agrag_pipeline_tests.reliability.stored import stored_contents

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_INSTANCE = REPO_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml"

DOCS = {
    "guide/ownership.md": "# Ownership\n\nEach value has one owner.\n\n## Moves\n\n"
    + "Assigning a value moves it. " * 40
    + "\n\n## Borrowing\n\nReferences borrow without owning.\n",
    "guide/tables.md": "# Tables\n\n| name | kind |\n|---|---|\n"
    + "".join(f"| item{i} | kind{i % 3} |\n" for i in range(60)),
    "site/traits.html": "<h1>Traits</h1><p>Traits define shared behaviour.</p>"
    + "".join(f"<h2>Part {i}</h2><p>{'Generic code uses bounds. ' * 12}</p>" for i in range(8)),
    "notes.txt": "Plain notes about lifetimes.\n\n" + "Lifetimes name scopes. " * 50,
}


def _raw_root(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    for name, text in DOCS.items():
        (raw / name).parent.mkdir(parents=True, exist_ok=True)
        (raw / name).write_text(text, encoding="utf-8")
    return raw


def _argv(command: str, raw: Path, warehouse: Path, cache: Path) -> list[str]:
    argv = [sys.executable, "-m", "agrag_pipeline.cli", command]
    argv += ["--raw-root", str(raw), "--warehouse", str(warehouse), "--cache-dir", str(cache)]
    return argv + (["--no-embed", "--workers", "1"] if command == "core" else [])


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "DAGSTER_HOME": str(home), "AGRAG_AUTOMATION": "off"}


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _kill_at(argv: list[str], env: dict[str, str], after_s: float) -> bool:
    """Start ``argv`` in its own process group and SIGKILL the whole group after ``after_s``;
    False if it finished first."""
    proc = subprocess.Popen(
        argv,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(timeout=after_s)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return True


#: The warehouse layout the pipeline's steps write (``storage.warehouse``). The sinks' outputs
#: (``graph_*``, ``_graph/``, the LanceDB ``index/``, versioned by design) are left out here.
CORE_LAYOUT = ("raw", "text", "documents", "sections", "chunks", "embeddings", "failures")


def _contents(root: Path) -> dict[str, object]:
    """Every file of the core layout, its content with ``created_at`` aside."""
    return stored_contents(root, lambda relative: relative.parts[0] in CORE_LAYOUT)


def _temporaries(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if ".tmp-" in p.name or ".corrupt-" in p.name]


def _crash_and_rerun(
    command: str, tmp_path: Path, kills: int, window_s: tuple[float, float], seed: int
) -> tuple[Path, Path, int]:
    raw, cache, home = _raw_root(tmp_path), tmp_path / "cache", tmp_path / "home"
    home.mkdir()
    shutil.copyfile(SHIPPED_INSTANCE, home / "dagster.yaml")
    env = _env(home)
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    started = time.monotonic()
    _run(_argv(command, raw, reference, cache), env)
    full_s = time.monotonic() - started
    rng = random.Random(seed)
    killed = 0
    # Each run reuses what the killed ones finished, so it is shorter than the reference and
    # some end before their kill: try until ``kills`` kills have landed (bounded attempts).
    # A run that ended first bounds the later kill moments: the later runs take no longer,
    # and a reference timed on a busier machine than the runs after it would put most kill
    # moments past their end (8 of 10 landed in 30 tries in a fresh clone's suite).
    low, high = window_s
    for _ in range(3 * kills):
        began = time.monotonic()
        landed = _kill_at(
            _argv(command, raw, crashed, cache), env, rng.uniform(low, max(low, min(high, full_s)))
        )
        if not landed:
            full_s = min(full_s, time.monotonic() - began)
        killed += landed
        if killed == kills:
            break
    _run(_argv(command, raw, crashed, cache), env)
    return reference, crashed, killed


@pytest.mark.slow
def test_agrag_core_killed_ten_times_then_rerun_equals_one_uninterrupted_run(
    tmp_path: Path,
) -> None:
    reference, crashed, killed = _crash_and_rerun(
        "core", tmp_path, kills=10, window_s=(0.5, 6.0), seed=20261201
    )
    assert killed == 10  # ten runs really were killed before they ended
    expected = _contents(reference)
    assert len([n for n in expected if n.startswith("chunks/")]) == len(DOCS)
    assert _contents(crashed) == expected
    assert _temporaries(crashed) == []


@pytest.mark.slow
def test_agrag_materialize_killed_at_random_then_rerun_equals_one_uninterrupted_run(
    tmp_path: Path,
) -> None:
    reference, crashed, killed = _crash_and_rerun(
        "materialize", tmp_path, kills=3, window_s=(3.0, 40.0), seed=7
    )
    assert killed == 3
    expected = _contents(reference)
    assert len([n for n in expected if n.startswith("embeddings/")]) == len(DOCS)
    assert _contents(crashed) == expected
    assert _temporaries(crashed) == []
