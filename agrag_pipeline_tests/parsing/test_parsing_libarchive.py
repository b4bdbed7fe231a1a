"""7-Zip and RAR archives and zstd-compressed files, read through libarchive: each member a
document whose key names its container, links never followed, encrypted members named, bombs
refused before a member is read."""

from __future__ import annotations

import shutil
from pathlib import Path

import libarchive
import pytest

from agrag_pipeline.derived import read_derived
from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import DocumentError
from agrag_pipeline.pipeline import build_sections, snapshot_document
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline.storage import Warehouse

#: libarchive's own test archives (BSD-2): RAR 4 (a file, a link, a folder), RAR 5, 7-Zip LZMA2,
#: and encrypted 7-Zip and RAR members.
ARCHIVES = Path(__file__).resolve().parents[1] / "fixtures" / "archives"


def _written(format_name: str, filter_name: str | None, files: dict[str, bytes]) -> bytes:
    """An archive written by libarchive itself (as bsdtar writes one)."""
    chunks: list[bytes] = []

    def write(data: bytes) -> int:
        chunks.append(bytes(data))
        return len(data)

    with libarchive.custom_writer(write, format_name, filter_name) as archive:
        for name, data in files.items():
            archive.add_file_from_memory(name, len(data), data)
    return b"".join(chunks)


def test_7zip_and_rar_members_are_documents_whose_keys_name_their_container(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(ARCHIVES / "test_read_format_rar.rar", raw / "old.rar")
    shutil.copy(ARCHIVES / "test_read_format_rar5_stored.rar", raw / "new.rar")
    shutil.copy(ARCHIVES / "test_read_format_7zip_lzma2.7z", raw / "licence.7z")
    scan = scan_raw_root(raw)
    assert scan.keys == [
        "licence.7z",
        "licence.7z/.members/file1",
        "new.rar",
        "new.rar/.members/helloworld.txt",
        "old.rar",
        "old.rar/.members/test.txt",
        "old.rar/.members/testdir/test.txt",
    ]
    reasons = {p.name: p.reason for p in scan.skipped}
    assert reasons["old.rar/.members/testlink"] == "a link to 'test.txt': not followed"
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    hello = snapshot_document(warehouse, raw, "new.rar/.members/helloworld.txt").document
    assert hello.content_hash == content_hash(b"hello libarchive test suite!\n")
    assert build_sections(warehouse, hello).parsed.text_layer == "hello libarchive test suite!\n"
    listing = snapshot_document(warehouse, raw, "old.rar").document
    assert listing.media_type == "application/vnd.rar"
    text = build_sections(warehouse, listing).parsed.text_layer
    assert text.startswith("Archive old.rar\n\ntest.txt (20 bytes)\n")
    licence = read_derived(raw, "licence.7z/.members/file1")
    assert licence.startswith(b"The libarchive distribution as a whole is Copyright")


def test_an_encrypted_member_is_named_as_password_protected(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(ARCHIVES / "test_read_format_7zip_encryption.7z", raw / "secret.7z")
    shutil.copy(ARCHIVES / "test_read_format_rar_encryption_data.rar", raw / "secret.rar")
    scan = scan_raw_root(raw)
    assert scan.keys == ["secret.7z", "secret.rar"]
    reasons = {p.name: p.reason for p in scan.skipped}
    assert reasons["secret.7z/.members/bar.txt"] == "password-protected (encrypted): not read"
    assert reasons["secret.rar/.members/foo.txt"] == "password-protected (encrypted): not read"


def test_zstd_tar_members_and_a_single_zstd_file_are_documents(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    guide, csv = b"# Guide\n\nRead me first.\n", b"team,wins\nred,3\n"
    (raw / "bundle.tar.zst").write_bytes(
        _written("ustar", "zstd", {"docs/guide.md": guide, "data/scores.csv": csv})
    )
    (raw / "scores.csv.zst").write_bytes(_written("raw", "zstd", {"data": csv}))
    scan = scan_raw_root(raw)
    assert scan.keys == [
        "bundle.tar.zst",
        "bundle.tar.zst/.members/data/scores.csv",
        "bundle.tar.zst/.members/docs/guide.md",
        "scores.csv.zst",
        "scores.csv.zst/.members/scores.csv",
    ]
    assert read_derived(raw, "bundle.tar.zst/.members/docs/guide.md") == guide
    assert read_derived(raw, "scores.csv.zst/.members/scores.csv") == csv
    # A zstd-compressed tar is an archive; a zstd-compressed file is one compressed file.
    bundle = parse_document((raw / "bundle.tar.zst").read_bytes(), "bundle.tar.zst")
    assert bundle.text_layer.startswith("Archive bundle.tar.zst\n\n")
    single = parse_document((raw / "scores.csv.zst").read_bytes(), "scores.csv.zst")
    assert single.text_layer.startswith("Compressed file scores.csv.zst\n\nscores.csv (")


def test_a_7zip_bomb_is_refused_before_any_member_is_read_and_a_renamed_file_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agrag_pipeline.parsing import tararchive

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "zeros.7z").write_bytes(_written("7zip", None, {"zeros.csv": bytes(16 * 1024 * 1024)}))
    assert (raw / "zeros.7z").stat().st_size < 64 * 1024
    monkeypatch.setattr(tararchive, "MAX_UNPACKED_BYTES", 4 * 1024 * 1024)
    (raw / "notes.rar").write_text("not an archive at all\n", encoding="utf-8")
    scan = scan_raw_root(raw)
    refused = {p.name: p.reason for p in scan.refused}
    assert "decompression bomb" in refused["zeros.7z"]
    assert "not a RAR file" in refused["notes.rar"]
    with pytest.raises(DocumentError, match=r"zeros\.7z: it unpacks to over 4,194,304 bytes"):
        read_derived(raw, "zeros.7z/.members/zeros.csv")
