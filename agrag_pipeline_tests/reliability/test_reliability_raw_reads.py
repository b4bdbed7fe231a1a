"""Reads of a document's bytes never leave the raw root, even while the raw root changes under
them, and every entry of the raw root is named unmistakably in the run's summary.

The fault is real: a second process renames a symlink to a file (or folder) outside the raw
root over a regular document (or its folder), and the real one back, as fast as it can, while
the scan, the snapshot and the sensor's hash read the document again and again. Each test
asserts that the outside file's marker reached no result, and that the race was really run:
some reads found the symlink only at the open, after the path had been checked (a "late"
refusal), which is the window the old check-then-open code read the outside file through.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agrag_pipeline.cli import main
from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.freshness import plan_changes
from agrag_pipeline.parsing.errors import DocumentError
from agrag_pipeline.pipeline import snapshot_document
from agrag_pipeline.sources import OutsideRootError, read_head, scan_raw_root
from agrag_pipeline.storage import Warehouse

MARKER = b"OUTSIDE-THE-ROOT-race-5d1e0b"
SECRET = b"# Secret\n\n" + MARKER + b"\n"
INSIDE = b"# Inside\n\nThe document the race swaps away and back.\n"
#: Reads per test at most; the loop stops early once enough late refusals were seen.
MAX_READS = 20000
#: Late refusals that prove the race was run (the old code leaked within a few of these).
ENOUGH_LATE = 10

#: Swaps the raw root's ``doc.md`` (mode ``file``) or its folder ``sub`` (mode ``folder``, with
#: ``sub/doc.md``) for a symlink to its twin outside, and back, atomically, until killed. The
#: temporaries are hidden names, which the scan skips.
SWAPPER = """
import os, sys
mode, raw, outside = sys.argv[1:]
if mode == "file":
    doc, link, regular = raw + "/doc.md", raw + "/.swap-link", raw + "/.swap-file"
    body = open(doc, "rb").read()
    print("swapping", flush=True)
    while True:
        os.symlink(outside + "/doc.md", link)
        os.rename(link, doc)
        with open(regular, "wb") as f:
            f.write(body)
        os.rename(regular, doc)
else:  # a folder cannot be renamed over: exchange it with the symlink (renameat2)
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    sub, link = (raw + "/sub").encode(), (raw + "/.swap-link").encode()
    os.symlink(outside + "/sub", link)
    print("swapping", flush=True)
    while True:
        if libc.renameat2(-100, link, -100, sub, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
            raise OSError(ctypes.get_errno(), "renameat2")
"""
#: A file only the outside folder holds: its name must never reach a scan either.
ONLY_OUTSIDE = "only-outside.md"


@dataclass
class Race:
    raw: Path
    outside: Path
    warehouse: Path
    key: str
    swapper: subprocess.Popen[str]

    def settle(self) -> None:
        """Stop the swapper and put the inside document back in place, so that one more read
        sees it for certain (on a loaded machine every read of the race may meet the symlink)."""
        self.swapper.kill()
        self.swapper.wait()
        path = self.raw / self.key
        if self.key == "doc.md":
            if path.is_symlink() or not path.exists():
                path.unlink(missing_ok=True)
                path.write_bytes(INSIDE)
        elif (self.raw / "sub").is_symlink():
            (self.raw / "sub").unlink()
            (self.raw / ".swap-link").rename(self.raw / "sub")


@pytest.fixture(params=["file", "folder"])
def race(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Race]:
    """A raw root whose ``doc.md`` (or folder ``sub``) a second process keeps swapping for a
    symlink to a twin outside the raw root, which holds the marker."""
    mode: str = request.param
    raw, outside = tmp_path / "raw", tmp_path / "outside"
    key = "doc.md" if mode == "file" else "sub/doc.md"
    (raw / key).parent.mkdir(parents=True, exist_ok=True)
    (outside / key).parent.mkdir(parents=True)
    (raw / key).write_bytes(INSIDE)
    (outside / key).write_bytes(SECRET)
    (outside / key).with_name(ONLY_OUTSIDE).write_bytes(SECRET)
    before = sorted(p.relative_to(outside) for p in outside.rglob("*"))
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, mode, str(raw), str(outside)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "swapping\n"
        yield Race(raw, outside, tmp_path / "warehouse", key, swapper)
    finally:
        swapper.kill()
        swapper.wait()
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == before
    assert (outside / key).read_bytes() == SECRET


def _hold_the_race(read_once: Callable[[], int]) -> tuple[int, int]:
    """Read until ``ENOUGH_LATE`` late refusals or ``MAX_READS`` reads: (reads, late)."""
    late = reads = 0
    while reads < MAX_READS and late < ENOUGH_LATE:
        late += read_once()
        reads += 1
    return reads, late


def _holds_marker(folder: Path) -> bool:
    return any(p.is_file() and MARKER in p.read_bytes() for p in folder.rglob("*"))


def test_a_snapshot_never_stores_a_file_swapped_in_by_a_symlink_out_of_the_raw_root(
    race: Race,
) -> None:
    warehouse = Warehouse(str(race.warehouse))
    stored = 0

    def snapshot_once() -> int:
        nonlocal stored
        try:
            snapshot_document(warehouse, race.raw, race.key)
        except DocumentError as exc:
            # Refused by the path check ("resolves to …") or, late, by the open itself
            # ("a symlink to …"); or the folder was away at that instant.
            assert "outside the raw root" in exc.problem or "no longer exists" in exc.problem
            return int("a symlink to" in exc.problem)
        stored += 1
        return 0

    reads, late = _hold_the_race(snapshot_once)
    race.settle()
    snapshot_once()
    assert not _holds_marker(race.warehouse), "a snapshot stored the file outside the raw root"
    assert stored > 0, "no snapshot of the inside document was stored"
    assert late > 0, f"the race was never hit in {reads} snapshots; nothing was proven"


def test_the_scan_never_reads_or_lists_what_a_symlink_out_swapped_in_points_to(
    race: Race,
) -> None:
    heads: list[bytes] = []
    names: set[str] = set()

    def detect(key: str, head: bytes) -> tuple[str | None, str | None]:
        heads.append(head)
        return "text/markdown", None

    def scan_once() -> int:
        scan = scan_raw_root(race.raw, detect=detect)
        names.update(scan.keys)
        names.update(p.name for p in scan.refused + scan.skipped)
        assert all("vanished" in p.reason for p in scan.skipped), scan.skipped
        late = [p for p in scan.refused if "replaced while the scan read it" in p.reason]
        assert all("outside the raw root" in p.reason for p in late)
        return len(late)

    reads, late = _hold_the_race(scan_once)
    race.settle()
    scan_once()
    assert heads and not any(MARKER in head for head in heads)
    assert not any(ONLY_OUTSIDE in name for name in names), "a folder outside was listed"
    assert race.key in names
    assert late > 0, f"the race was never hit in {reads} scans; nothing was proven"


def test_the_sensor_never_hashes_a_file_swapped_in_by_a_symlink_out(race: Race) -> None:
    secret_hash = content_hash(SECRET)
    hashes: set[str] = set()

    def plan_once() -> int:
        plan = plan_changes(race.raw, None, [])
        hashes.update(seen.content_hash for seen in plan.seen.values())
        # Late in the scan's head read, or in the sensor's own hash read after the scan.
        late = [
            p
            for p in plan.refused
            if "replaced while" in p.reason or "cannot be read: a symlink" in p.reason
        ]
        return len(late)

    reads, late = _hold_the_race(plan_once)
    race.settle()
    plan_once()
    assert secret_hash not in hashes
    assert content_hash(INSIDE) in hashes
    assert late > 0, f"the race was never hit in {reads} scans; nothing was proven"


# -- symlinks that stay inside the raw root are still followed --------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """raw/real/doc.md and symlinks to it of every shape; outside/secret.md beside raw."""
    raw = tmp_path / "raw"
    (raw / "real" / "deeper").mkdir(parents=True)
    (raw / "real" / "doc.md").write_bytes(INSIDE)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_bytes(SECRET)
    os.symlink("real/doc.md", raw / "relative.md")
    os.symlink(raw / "real" / "doc.md", raw / "absolute.md")
    os.symlink("real", raw / "folder")  # a symlinked folder
    os.symlink("../doc.md", raw / "real" / "deeper" / "up.md")  # '..' that stays inside
    os.symlink("relative.md", raw / "chain.md")  # a symlink to a symlink
    os.symlink("../outside/secret.md", raw / "out.md")
    os.symlink(tmp_path / "outside", raw / "out-folder")
    os.symlink("real/../../outside/secret.md", raw / "dotdot-out.md")
    os.symlink("loop-b.md", raw / "loop-a.md")
    os.symlink("loop-a.md", raw / "loop-b.md")
    return raw


@pytest.mark.parametrize(
    "key",
    ["real/doc.md", "relative.md", "absolute.md", "folder/doc.md", "real/deeper/up.md",
     "folder/deeper/up.md", "chain.md"],
)  # fmt: skip
def test_a_symlink_that_resolves_inside_the_raw_root_is_read_through(tree: Path, key: str) -> None:
    data, _ = read_head(tree / key, 1 << 20, root=tree)
    assert data == INSIDE


@pytest.mark.parametrize(
    ("key", "link"),
    [("out.md", "out.md"), ("out-folder/secret.md", "out-folder"),
     ("dotdot-out.md", "dotdot-out.md")],
)  # fmt: skip
def test_a_symlink_that_leads_out_of_the_raw_root_is_never_opened(
    tree: Path, key: str, link: str
) -> None:
    with pytest.raises(OutsideRootError, match="outside the raw root") as caught:
        read_head(tree / key, 1 << 20, root=tree)
    assert caught.value.link == link


def test_a_symlink_loop_is_an_error_not_a_hang(tree: Path) -> None:
    with pytest.raises(OSError, match="symlinks"):
        read_head(tree / "loop-a.md", 1 << 20, root=tree)


# -- names in the run's summary ---------------------------------------------------------------


def test_a_file_name_with_a_backslash_is_named_unmistakably_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lit\\xffname.md`` (a backslash, then the letters x f f) and ``bad<0xff>name.md`` were
    both shown as ``…\\xffname.md``: the summary did not say which file it meant."""
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "good.md").write_text("# Good\n\nbody\n", encoding="utf-8")
    (raw / "lit\\xffname.md").write_text("# literal backslash\n", encoding="utf-8")
    (raw / "back\\slash.md").write_text("# backslash\n", encoding="utf-8")
    (raw / os.fsdecode(b"bad\xffname.md")).write_text("# not UTF-8\n", encoding="utf-8")
    status = main(
        ["core", "--raw-root", str(raw), "--warehouse", str(tmp_path / "w"),
         "--cache-dir", str(tmp_path / "cache"), "--no-embed", "--workers", "1"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1
    refused = sorted(line for line in out.splitlines() if line.startswith("REFUSED "))
    assert refused == [
        "REFUSED back\\\\slash.md: the path contains a backslash, which a source key cannot "
        "hold (it reads as a Windows folder separator); rename the file",
        "REFUSED bad\\xffname.md: the file name is not valid UTF-8, which a source key "
        "(a Dagster partition key) must be; rename the file",
        "REFUSED lit\\\\xffname.md: the path contains a backslash, which a source key cannot "
        "hold (it reads as a Windows folder separator); rename the file",
    ]
    assert "1 succeeded" in out


# -- layering ---------------------------------------------------------------------------------


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):  # module level and inside functions alike
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_object_store_scan_and_the_local_scan_do_not_import_each_other() -> None:
    """``sources`` dispatches an ``s3://`` root to ``storage.raw_remote``; both take the scan's
    vocabulary from ``source_keys``, which imports neither (they used to import each other)."""
    package = Path(__file__).resolve().parents[2] / "agrag_pipeline"
    raw_remote = _imported_modules(package / "storage" / "raw_remote.py")
    source_keys = _imported_modules(package / "source_keys.py")
    assert "agrag_pipeline.sources" not in raw_remote
    assert not {"agrag_pipeline.sources", "agrag_pipeline.storage.raw_remote"} & source_keys
    assert "agrag_pipeline.source_keys" in raw_remote
