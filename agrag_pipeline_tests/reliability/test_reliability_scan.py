"""The raw root as a hostile user leaves it: every fault is real (a FIFO made with ``mkfifo``, a
socket, real symlink loops, a file name with a ``\\xff`` byte, a folder root cannot list because
the run lost ``CAP_DAC_OVERRIDE``), and each test asserts three things: the good documents of
the same run are complete and correct, the bad entry is named with its reason, and nothing
outside the roots was read (a marker only the outside file holds appears in no output) or
written (the outside folder is byte-for-byte unchanged).
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agrag_pipeline.cli import main
from agrag_pipeline.freshness import plan_changes
from agrag_pipeline.models import Document
from agrag_pipeline.parsing.errors import DocumentError, DocumentTooLargeError
from agrag_pipeline.pipeline import snapshot_document
from agrag_pipeline.reporting import Progress
from agrag_pipeline.runtime import DEFAULT_WAREHOUSE_ROOT, resolve_roots
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline.storage import Warehouse
from agrag_pipeline.storage.tables import chunks_from_table

REPO_ROOT = Path(__file__).resolve().parents[2]
MARKER = "OUTSIDE-THE-ROOT-7f3a9c"
GOOD = {
    "good.md": ("# Good heading\n\nThe good body text survives every fault.\n", "Good heading"),
    "sub/notes.txt": ("Plain notes beside the faults.\n", None),
}


@dataclass
class Roots:
    base: Path
    raw: Path
    warehouse: Path
    outside: Path

    @property
    def wh(self) -> Warehouse:
        return Warehouse(str(self.warehouse))

    def core(self, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
        """``agrag core`` in this process (one worker), its exit status and its output."""
        status = main(
            [
                "core",
                "--raw-root",
                str(self.raw),
                "--warehouse",
                str(self.warehouse),
                "--cache-dir",
                str(self.base / "cache"),
                "--no-embed",
                "--workers",
                "1",
                *extra,
            ]
        )
        captured = capsys.readouterr()
        return status, captured.out + captured.err


@pytest.fixture
def roots(tmp_path: Path) -> Iterator[Roots]:
    raw, outside = tmp_path / "raw", tmp_path / "outside"
    (raw / "sub").mkdir(parents=True)
    outside.mkdir()
    for key, (text, _) in GOOD.items():
        (raw / key).write_text(text, encoding="utf-8")
    (outside / "secret.md").write_text(f"# Secret\n\n{MARKER}\n", encoding="utf-8")
    r = Roots(tmp_path, raw, tmp_path / "warehouse", outside)
    before = _tree(outside)
    yield r
    assert _tree(outside) == before, "something outside the roots was written"
    assert not _holds_marker(r.warehouse), "a file from outside the raw root was read"


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _holds_marker(folder: Path) -> bool:
    if not folder.exists():
        return False
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and MARKER.encode() in path.read_bytes():
            return True
    return False


def _chunks(warehouse: Warehouse, key: str) -> list:
    return chunks_from_table(warehouse.read_table("chunks", Document.node_id_for(key)))


def assert_good_documents_complete(warehouse: Warehouse, keys: dict[str, tuple] = GOOD) -> None:
    for key, (text, heading) in keys.items():
        document = warehouse.get_document(Document.node_id_for(key))
        assert document is not None and document.source_key == key
        chunks = _chunks(warehouse, key)
        body = text.strip().splitlines()[-1]
        assert any(body in c.text for c in chunks), (key, [c.text for c in chunks])
        if heading:
            assert any(heading in (c.section_label() or "") for c in chunks)


# -- 1. roots: flag, else environment, else default -------------------------------------------


def test_roots_come_from_the_flag_else_the_environment_else_the_default(
    roots: Roots, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        DEFAULT_SETTINGS_PATH.read_text(encoding="utf-8")
        + "\n# proof that this file is the one in use\n",
        encoding="utf-8",
    )
    # Give the environment's settings file an exclude that only it has: sub/ is skipped.
    text = settings.read_text(encoding="utf-8").replace(
        "  exclude:\n", '  exclude:\n    - "sub/**"\n', 1
    )
    settings.write_text(text, encoding="utf-8")
    env = {
        **os.environ,
        "AGRAG_RAW_ROOT": str(roots.raw),
        "AGRAG_WAREHOUSE_ROOT": str(roots.warehouse),
        "AGRAG_SETTINGS": str(settings),
        "AGRAG_CACHE_DIR": str(tmp_path / "env-cache"),
    }
    default_stamp = _stamp(DEFAULT_WAREHOUSE_ROOT)
    out = _run_cli(["core", "--no-embed", "--workers", "1"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"raw root: {roots.raw} (AGRAG_RAW_ROOT)" in out.stdout
    assert f"warehouse: {roots.warehouse} (AGRAG_WAREHOUSE_ROOT)" in out.stdout
    assert f"settings: {settings} (AGRAG_SETTINGS)" in out.stdout
    assert f"embedding cache: {tmp_path / 'env-cache'} (AGRAG_CACHE_DIR)" in out.stdout
    assert "SKIPPED sub/notes.txt: excluded by the documents.exclude pattern 'sub/**'" in out.stdout
    assert_good_documents_complete(roots.wh, {"good.md": GOOD["good.md"]})
    assert _stamp(DEFAULT_WAREHOUSE_ROOT) == default_stamp, "the package's warehouse was written"

    flagged = tmp_path / "flag-warehouse"
    out = _run_cli(["core", "--no-embed", "--workers", "1", "--warehouse", str(flagged)], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"warehouse: {flagged} (flag)" in out.stdout
    assert_good_documents_complete(Warehouse(str(flagged)), {"good.md": GOOD["good.md"]})

    # dagster dev and the benchmarks share the rule (runtime.resolve_roots).
    from agrag_pipeline.defs.resources import default_pipeline_resource

    for name in ("AGRAG_RAW_ROOT", "AGRAG_WAREHOUSE_ROOT", "AGRAG_SETTINGS", "AGRAG_CACHE_DIR"):
        os.environ[name] = env[name]
    try:
        resource = default_pipeline_resource()
        assert (resource.raw_root, resource.warehouse_root, resource.settings_path) == (
            str(roots.raw),
            str(roots.warehouse),
            str(settings),
        )
        assert resource.cache_dir == str(tmp_path / "env-cache")
    finally:
        for name in ("AGRAG_RAW_ROOT", "AGRAG_WAREHOUSE_ROOT", "AGRAG_SETTINGS", "AGRAG_CACHE_DIR"):
            os.environ.pop(name, None)
    defaults = resolve_roots(environ={})
    assert defaults.warehouse_root == str(DEFAULT_WAREHOUSE_ROOT)
    assert defaults.sources["raw_root"] == "default" and defaults.cache_dir is None


def _stamp(folder: Path) -> list[tuple[str, int]] | None:
    if not folder.exists():
        return None
    return sorted((str(p), p.stat().st_mtime_ns) for p in folder.rglob("*"))


def _run_cli(
    argv: list[str], env: dict[str, str], prefix: list[str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "agrag_pipeline.cli", *argv],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# -- 2. a file name that is not UTF-8 --------------------------------------------------------


def test_a_file_name_that_is_not_utf8_is_refused_by_name_and_never_renamed(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = os.fsencode(roots.raw) + b"/bad\xffname.md"
    with open(bad, "wb") as handle:
        handle.write(b"# Bad name\n\ntext\n")
    listing = sorted(os.listdir(os.fsencode(roots.raw)))
    status, out = roots.core(capsys=capsys)
    assert status == 1
    assert (
        "REFUSED bad\\xffname.md: the file name is not valid UTF-8, which a source key "
        "(a Dagster partition key) must be; rename the file"
    ) in out
    assert_good_documents_complete(roots.wh)
    assert sorted(os.listdir(os.fsencode(roots.raw))) == listing  # never renamed
    assert len(list((roots.warehouse / "documents").iterdir())) == len(GOOD)


# -- 3. symlink loops, dangling symlinks, a file that vanishes mid-scan -----------------------


def test_symlink_loops_and_dangling_symlinks_are_named_and_skipped_never_abort(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    os.symlink("loop-b.md", roots.raw / "loop-a.md")
    os.symlink("loop-a.md", roots.raw / "loop-b.md")
    os.symlink("..", roots.raw / "sub" / "up")  # a folder loop
    os.symlink("missing.md", roots.raw / "dangling.md")
    status, out = roots.core(capsys=capsys)
    assert status == 1
    assert "REFUSED loop-a.md: a symlink loop (-> loop-b.md)" in out
    assert "REFUSED loop-b.md: a symlink loop (-> loop-a.md)" in out
    assert (
        f"REFUSED sub/up: a symlink loop: it points to {roots.raw}, a folder that contains it"
        in out
    )
    assert "REFUSED dangling.md: a dangling symlink: its target missing.md does not exist" in out
    assert_good_documents_complete(roots.wh)


def test_a_file_that_vanishes_between_listing_and_stat_is_named_and_skipped(
    roots: Roots,
) -> None:
    from agrag_pipeline.parsing.detect import detect_media_type

    (roots.raw / "sub" / "zz-vanishing.md").write_text("# Gone soon\n", encoding="utf-8")

    def detect_then_delete(key: str, head: bytes) -> tuple[str | None, str | None]:
        # sub/ is listed already (notes.txt, zz-vanishing.md): the next file goes, for real.
        if key == "sub/notes.txt":
            (roots.raw / "sub" / "zz-vanishing.md").unlink()
        return detect_media_type(key, head), None

    scan = scan_raw_root(roots.raw, detect=detect_then_delete)
    assert scan.keys == ["good.md", "sub/notes.txt"]
    assert [(p.name, p.reason) for p in scan.skipped] == [
        ("sub/zz-vanishing.md", "it vanished during the scan")
    ]
    assert scan.refused == []


def test_a_sensor_scan_over_broken_symlinks_still_reports_the_deleted_documents(
    roots: Roots,
) -> None:
    first = plan_changes(roots.raw, None, [])
    assert first.new == ["good.md", "sub/notes.txt"]
    (roots.raw / "sub" / "notes.txt").unlink()
    os.symlink("loop-b", roots.raw / "loop-a")
    os.symlink("loop-a", roots.raw / "loop-b")
    os.symlink("nowhere", roots.raw / "dangling.md")
    second = plan_changes(roots.raw, first.cursor(), first.new)
    assert second.deleted == ["sub/notes.txt"]
    assert second.unchanged == 1
    assert sorted(p.name for p in second.refused) == ["dangling.md", "loop-a", "loop-b"]


def test_a_sensor_scan_over_a_corrupt_document_record_redoes_it_and_still_deletes(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    assert roots.core(capsys=capsys)[0] == 0
    record = roots.warehouse / "documents" / f"{Document.node_id_for('good.md')}.json"
    record.write_bytes(b'{"source_key": "good.md", "trunc')  # a real torn record
    (roots.raw / "sub" / "notes.txt").unlink()

    def stored_hash(key: str) -> str | None:  # what the sensor passes
        document = roots.wh.get_document(Document.node_id_for(key))
        return document.content_hash if document else None

    plan = plan_changes(roots.raw, None, ["good.md", "sub/notes.txt"], stored_hash)
    assert plan.changed == ["good.md"] and plan.deleted == ["sub/notes.txt"]


# -- 4. FIFOs, sockets: only regular files are read -------------------------------------------


def test_a_fifo_and_a_socket_are_skipped_without_blocking_the_run(roots: Roots) -> None:
    os.mkfifo(roots.raw / "pipe.md")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(roots.raw / "sock.md"))
    try:
        # A real process: a read of the FIFO would hang it past the timeout.
        out = _run_cli(
            [
                "core",
                "--no-embed",
                "--workers",
                "1",
                "--raw-root",
                str(roots.raw),
                "--warehouse",
                str(roots.warehouse),
            ],
            dict(os.environ),
            timeout=60,
        )
    finally:
        server.close()
    assert out.returncode == 0, out.stdout + out.stderr  # deliberately skipped: exit 0
    assert "SKIPPED pipe.md: not a regular file (a FIFO); it is never read" in out.stdout
    assert "SKIPPED sock.md: not a regular file (a socket); it is never read" in out.stdout
    assert_good_documents_complete(roots.wh)
    with pytest.raises(DocumentError, match=r"pipe\.md.*not a regular file \(a FIFO\)"):
        snapshot_document(roots.wh, roots.raw, "pipe.md")  # returns at once, nothing stored
    assert roots.wh.get_document(Document.node_id_for("pipe.md")) is None


# -- 5. symlinks out of the raw root, and keys like ../outside.md -----------------------------


def test_symlinks_are_followed_only_inside_the_raw_root(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    os.symlink(roots.outside / "secret.md", roots.raw / "passwd.md")
    os.symlink("good.md", roots.raw / "alias.md")  # inside: followed, under its own key
    status, out = roots.core(capsys=capsys)
    assert status == 1
    assert (
        f"REFUSED passwd.md: a symlink to {roots.outside / 'secret.md'}, outside the raw root "
        "(only symlinks within the raw root are followed)"
    ) in out
    assert_good_documents_complete(roots.wh, {**GOOD, "alias.md": GOOD["good.md"]})
    assert roots.wh.get_document(Document.node_id_for("passwd.md")) is None


@pytest.mark.parametrize("key", ["../outside/secret.md", "sub/../../outside/secret.md"])
def test_a_partition_key_leading_out_of_the_raw_root_is_refused(roots: Roots, key: str) -> None:
    with pytest.raises(DocumentError, match=r"refused: .*'\.\.' components"):
        snapshot_document(roots.wh, roots.raw, key)
    assert roots.wh.get_document(Document.node_id_for(key)) is None
    assert not (roots.warehouse / "raw").exists()


def test_a_symlinked_key_leading_out_of_the_raw_root_is_refused_at_snapshot(
    roots: Roots,
) -> None:
    os.symlink(roots.outside, roots.raw / "escape")
    with pytest.raises(DocumentError, match=r"escape/secret\.md.*outside the raw root"):
        snapshot_document(roots.wh, roots.raw, "escape/secret.md")
    assert roots.wh.get_document(Document.node_id_for("escape/secret.md")) is None


# -- 10. deleted documents --------------------------------------------------------------------


def test_core_removes_the_outputs_of_a_deleted_document(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _ = roots.core(capsys=capsys)
    assert status == 0
    gone_id = Document.node_id_for("sub/notes.txt")
    assert roots.wh.has_table("chunks", gone_id)
    (roots.raw / "sub" / "notes.txt").unlink()
    status, out = roots.core(capsys=capsys)
    assert status == 0, out
    assert "REMOVED sub/notes.txt: no longer a document; removed" in out
    assert not any(roots.wh.has_table(t, gone_id) for t in ("sections", "chunks"))
    assert roots.wh.get_document(gone_id) is None
    assert_good_documents_complete(roots.wh, {"good.md": GOOD["good.md"]})


# -- 14. nothing dropped silently: refused names and unreadable folders ------------------------


def test_refused_names_are_reported_and_fail_the_run(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    (roots.raw / "a...b.md").write_text("# dots\n", encoding="utf-8")
    (roots.raw / "new\nline.md").write_text("# newline\n", encoding="utf-8")
    status, out = roots.core(capsys=capsys)
    assert status == 1
    assert "REFUSED a...b.md: the path contains '...', which a Dagster partition key" in out
    assert "REFUSED new\\nline.md: the path contains a control character" in out
    assert "2 refused" in out
    assert_good_documents_complete(roots.wh)


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv")
def test_an_unreadable_folder_and_file_are_reported_and_their_outputs_kept(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = roots.raw / "locked"
    locked.mkdir()
    (locked / "inside.md").write_text("# Inside\n\nKept while unreadable.\n", encoding="utf-8")
    (roots.raw / "private.md").write_text("# Private\n\nno access\n", encoding="utf-8")
    status, _ = roots.core(capsys=capsys)
    assert status == 0
    locked.chmod(0)
    (roots.raw / "private.md").chmod(0)
    try:
        # Root reads chmod-000 files; without CAP_DAC_OVERRIDE/READ_SEARCH it gets EACCES.
        drop = "-dac_override,-dac_read_search"
        out = _run_cli(
            [
                "core",
                "--no-embed",
                "--workers",
                "1",
                "--raw-root",
                str(roots.raw),
                "--warehouse",
                str(roots.warehouse),
            ],
            dict(os.environ),
            prefix=["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"],
        )
    finally:
        locked.chmod(stat.S_IRWXU)
        (roots.raw / "private.md").chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "REFUSED locked/: the folder cannot be listed: Permission denied" in out.stdout
    assert "REFUSED private.md: cannot be read: Permission denied" in out.stdout
    assert "REMOVED" not in out.stdout  # unreadable is not deleted
    assert roots.wh.has_table("chunks", Document.node_id_for("locked/inside.md"))
    assert roots.wh.has_table("chunks", Document.node_id_for("private.md"))
    assert_good_documents_complete(roots.wh)


# -- the smaller ones --------------------------------------------------------------------------


def test_a_file_over_the_size_limit_is_refused_before_its_snapshot_is_stored(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    from agrag_pipeline.parsing import DEFAULT_MAX_BYTES

    big = roots.raw / "big.md"
    with open(big, "wb") as handle:
        handle.write(b"# Big\n\n")
        handle.truncate(DEFAULT_MAX_BYTES + 1)  # sparse: no disk, a real 64 MiB + 1 file
    with pytest.raises(DocumentTooLargeError, match=r"big\.md: 67,108,865 bytes is over"):
        snapshot_document(roots.wh, roots.raw, "big.md")
    big_id = Document.node_id_for("big.md")
    assert roots.wh.get_document(big_id) is None
    assert not (roots.warehouse / "raw" / str(big_id)).exists()
    status, out = roots.core(capsys=capsys)
    assert status == 1
    assert "FAILED big.md: 67,108,865 bytes is over the limit of 67,108,864 bytes" in out
    assert not (roots.warehouse / "raw" / str(big_id)).exists()
    assert_good_documents_complete(roots.wh)


def test_utf16_without_a_byte_order_mark_is_read_as_utf16(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "# Überschrift\n\nUTF-16 ohne Byte-Order-Mark, gelesen.\n"
    (roots.raw / "utf16.md").write_bytes(text.encode("utf-16-le"))
    (roots.raw / "utf16be.txt").write_bytes("Big endian, no mark.\n".encode("utf-16-be"))
    status, out = roots.core(capsys=capsys)
    assert status == 0, out
    assert_good_documents_complete(
        roots.wh,
        {
            **GOOD,
            "utf16.md": (text, "Überschrift"),
            "utf16be.txt": ("Big endian, no mark.\n", None),
        },
    )


def test_an_unknown_extension_is_skipped_naming_the_extension(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    (roots.raw / "table.xyz").write_text("a,b\n1,2\n", encoding="utf-8")
    status, out = roots.core(capsys=capsys)
    assert status == 0  # deliberately skipped
    assert "SKIPPED table.xyz: no parser for extension '.xyz'" in out
    with pytest.raises(DocumentError, match=r"table\.xyz: no parser for extension '\.xyz'"):
        snapshot_document(roots.wh, roots.raw, "table.xyz")
    assert roots.wh.get_document(Document.node_id_for("table.xyz")) is None
    assert_good_documents_complete(roots.wh)


def test_created_at_of_an_unchanged_version_is_not_rewritten(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    assert roots.core(capsys=capsys)[0] == 0
    record = roots.warehouse / "documents" / f"{Document.node_id_for('good.md')}.json"
    first = record.read_bytes()
    assert roots.core("--force", capsys=capsys)[0] == 0
    assert record.read_bytes() == first
    (roots.raw / "good.md").write_text("# Good heading\n\nEdited body.\n", encoding="utf-8")
    assert roots.core(capsys=capsys)[0] == 0
    assert record.read_bytes() != first


def test_progress_is_one_plain_line_per_document_off_a_terminal(
    roots: Roots, capsys: pytest.CaptureFixture[str]
) -> None:
    (roots.raw / "empty.md").write_bytes(b"")
    status, out = roots.core(capsys=capsys)
    assert status == 1  # a document failed
    assert "[1/3] empty.md FAILED: empty.md: the file is empty (0 bytes)" in out
    assert "] good.md ok (1 chunks)" in out and "] sub/notes.txt ok (1 chunks)" in out
    assert "FAILED empty.md: the file is empty (0 bytes)" in out
    assert "3 documents, 2 succeeded, 1 failed, 0 refused, 0 skipped" in out


def test_progress_on_a_terminal_is_one_updating_line_with_counts_and_time_left() -> None:
    stream = io.StringIO()
    ticks = iter([0.0, 10.0, 20.0, 20.0])
    progress = Progress(4, stream, tty=True, label="agrag core", clock=lambda: next(ticks))
    progress.update("a.md", True, 5)
    progress.update("b.md", False, error="b.md: broken")
    progress.finish()
    lines = stream.getvalue().split("\r")
    assert lines[1].startswith("agrag core: 1/4 documents, 1 done, 0 failed, 5 chunks, 0:10")
    assert lines[1].rstrip().endswith("~0:30 left")
    assert lines[2].startswith("agrag core: 2/4 documents, 1 done, 1 failed, 5 chunks, 0:20")
    assert lines[2].rstrip().endswith("~0:20 left")
    assert "\n" not in "".join(lines[:-1]) and stream.getvalue().endswith("\n")


# -- issue 13: agrag core uses every core, with the same output ---------------------------------


def test_core_in_worker_processes_writes_what_one_process_writes(
    roots: Roots, tmp_path: Path
) -> None:
    for i in range(4):
        (roots.raw / f"doc{i}.md").write_text(
            f"# Document {i}\n\n" + "\n\n".join(f"Paragraph {j} of {i}." for j in range(30)),
            encoding="utf-8",
        )
    results = {}
    for workers in ("1", "2"):
        warehouse = tmp_path / f"wh-{workers}"
        out = _run_cli(
            [
                "core",
                "--no-embed",
                "--workers",
                workers,
                "--raw-root",
                str(roots.raw),
                "--warehouse",
                str(warehouse),
            ],
            dict(os.environ),
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"workers: {workers}" in out.stdout
        results[workers] = {
            p.name: pq.read_table(p).drop_columns(["created_at"])
            for p in sorted((warehouse / "chunks").iterdir())
        }
    assert results["1"].keys() == results["2"].keys() and len(results["1"]) == 6
    for name, table in results["1"].items():
        assert table.equals(results["2"][name]), name
        assert table.schema.metadata == results["2"][name].schema.metadata


# -- the same faults through agrag materialize (Dagster), and a deleted document ----------------


@pytest.mark.slow
def test_materialize_names_bad_entries_fails_a_failed_document_and_removes_deleted_ones(
    roots: Roots, tmp_path: Path
) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(
        REPO_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml", home / "dagster.yaml"
    )
    os.mkfifo(roots.raw / "pipe.md")
    with open(os.fsencode(roots.raw) + b"/bad\xffname.md", "wb") as handle:
        handle.write(b"# Bad name\n")
    os.symlink("loop-b.md", roots.raw / "loop-a.md")
    os.symlink("loop-a.md", roots.raw / "loop-b.md")
    os.symlink(roots.outside / "secret.md", roots.raw / "passwd.md")
    (roots.raw / "empty.md").write_bytes(b"")
    argv = ["materialize", "--raw-root", str(roots.raw), "--warehouse", str(roots.warehouse)]
    argv += ["--cache-dir", str(tmp_path / "cache")]
    env = {**os.environ, "DAGSTER_HOME": str(home), "AGRAG_AUTOMATION": "off"}
    out = _run_cli(argv, env, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text  # a document failed and entries were refused
    assert "REFUSED bad\\xffname.md: the file name is not valid UTF-8" in text
    assert "REFUSED loop-a.md: a symlink loop (-> loop-b.md)" in text
    assert "REFUSED passwd.md: a symlink to" in text and "outside the raw root" in text
    assert "SKIPPED pipe.md: not a regular file (a FIFO); it is never read" in text
    assert "FAILED empty.md: sections failed: empty.md: the file is empty (0 bytes)" in text
    assert_good_documents_complete(roots.wh)
    for key in GOOD:
        assert roots.wh.has_table("embeddings", Document.node_id_for(key))

    for name in ("pipe.md", "loop-a.md", "loop-b.md", "passwd.md", "empty.md"):
        (roots.raw / name).unlink()
    os.unlink(os.fsencode(roots.raw) + b"/bad\xffname.md")
    (roots.raw / "sub" / "notes.txt").unlink()
    out = _run_cli(argv, env, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "REMOVED sub/notes.txt: no longer a document" in text
    assert "REMOVED empty.md: no longer a document" in text
    gone = Document.node_id_for("sub/notes.txt")
    assert not any(roots.wh.has_table(t, gone) for t in ("sections", "chunks", "embeddings"))
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home)
    try:
        instance = dg.DagsterInstance.from_config(str(home))
        assert instance.get_dynamic_partitions("documents") == ["good.md"]
    finally:
        os.environ.pop("DAGSTER_HOME", None)
    assert_good_documents_complete(roots.wh, {"good.md": GOOD["good.md"]})
