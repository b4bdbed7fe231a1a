"""Attachments and archive members are documents of their own: listed by the scan beside their
file, read by extracting them from it again, changed and deleted with it, within a depth and
size budget; a member name never becomes a path."""

from __future__ import annotations

import email.message
import email.policy
import gzip
import io
import os
import shutil
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agrag_pipeline.derived import MAX_DEPTH, read_derived
from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.freshness import (
    failed_as_before,
    plan_changes,
    remove_deleted,
    stale_documents,
)
from agrag_pipeline.models import Document
from agrag_pipeline.parsing.errors import DocumentError
from agrag_pipeline.parsing.tararchive import Member
from agrag_pipeline.pipeline import build_sections, snapshot_document
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline.storage import Warehouse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"


Attached = bytes | email.message.EmailMessage


def _message(
    subject: str, body: str, attachments: list[tuple[str, Attached]]
) -> email.message.EmailMessage:
    message = email.message.EmailMessage(policy=email.policy.default)
    message["From"] = "ann@example.org"
    message["To"] = "bob@example.org"
    message["Subject"] = subject
    message.set_content(body)
    for name, data in attachments:
        if isinstance(data, email.message.EmailMessage):
            message.add_attachment(data, filename=name)  # an attached message/rfc822
        else:
            message.add_attachment(data.decode(), filename=name)
    return message


def test_attachments_and_members_are_documents_whose_keys_name_their_container(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    (raw / "mail").mkdir(parents=True)
    shutil.copy(FIXTURES / "fake-email-attachment.msg", raw / "mail" / "a.msg")
    shutil.copy(FIXTURES / "simple.zip", raw / "simple.zip")
    scan = scan_raw_root(raw)
    assert scan.keys == [
        "mail/a.msg",
        "mail/a.msg/.attachments/1-fake-attachment.txt",
        "simple.zip",
        "simple.zip/.members/ideas-page.html",
        "simple.zip/.members/stanley-cups.csv",
    ]
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    key = "mail/a.msg/.attachments/1-fake-attachment.txt"
    document = snapshot_document(warehouse, raw, key).document
    assert document.media_type == "text/plain"
    assert document.content_hash == content_hash(b"Hey this is a fake attachment!")
    assert document.id == Document.node_id_for(key)
    stored = warehouse.get_document(document.id)
    assert stored is not None and stored.metadata == {
        "container_key": "mail/a.msg",
        "container_document_id": str(Document.node_id_for("mail/a.msg")),
        "container_file": "mail/a.msg",
    }
    parsed = build_sections(warehouse, document).parsed
    assert parsed.text_layer == "Hey this is a fake attachment!"
    member = snapshot_document(warehouse, raw, "simple.zip/.members/stanley-cups.csv").document
    assert member.media_type == "text/csv"
    with zipfile.ZipFile(raw / "simple.zip") as archive:
        assert member.content_hash == content_hash(archive.read("stanley-cups.csv"))


def test_children_change_and_disappear_with_their_message(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    path = raw / "note.eml"

    def write(attachments: list[tuple[str, bytes]]) -> None:
        message = _message("Minutes", "See the attached notes.", list(attachments))
        path.write_bytes(message.as_bytes())

    write([("notes.txt", b"first version of the notes\n"), ("todo.txt", b"buy milk\n")])
    first = plan_changes(raw, None, [])
    notes, todo = "note.eml/.attachments/1-notes.txt", "note.eml/.attachments/2-todo.txt"
    assert first.new == ["note.eml", notes, todo]
    registered = first.new

    write([("notes.txt", b"second version of the notes\n"), ("todo.txt", b"buy milk\n")])
    second = plan_changes(raw, first.cursor(), registered)
    assert sorted(second.changed) == ["note.eml", notes]  # the todo list did not change
    assert second.seen[notes].content_hash == content_hash(b"second version of the notes\n")

    write([("notes.txt", b"second version of the notes\n")])
    third = plan_changes(raw, second.cursor(), registered)
    assert third.deleted == [todo]

    warehouse = Warehouse(str(tmp_path / "warehouse"))
    for key in ("note.eml", notes):
        snapshot_document(warehouse, raw, key)
    path.unlink()
    fourth = plan_changes(raw, third.cursor(), ["note.eml", notes])
    assert fourth.deleted == ["note.eml", notes]
    removals = remove_deleted(warehouse, fourth.deleted)
    assert [r.error for r in removals] == [None, None]
    assert warehouse.get_document(Document.node_id_for(notes)) is None


def test_an_unchanged_message_is_not_read_again_and_keeps_its_children(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    path = raw / "a.eml"
    shutil.copy(FIXTURES / "fake-email-attachment.eml", path)
    first = plan_changes(raw, None, [])
    child = "a.eml/.attachments/1-fake-attachment.txt"
    assert child in first.new
    # Same size and modification time, other bytes (no message at all): a scan that opened
    # the file again would lose the attachment; one that trusts the stat keeps it.
    before = path.stat()
    path.write_bytes(b"x" * before.st_size)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    second = plan_changes(raw, first.cursor(), first.new)
    assert second.deleted == [] and second.unchanged == 2
    assert child in second.seen


def test_a_message_in_a_message_in_a_message_is_read_within_the_depth_budget(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    innermost = MAX_DEPTH + 2
    inner = _message(f"level {innermost}", "the innermost message", [("deep.txt", b"deep\n")])
    for level in range(innermost - 1, 0, -1):
        inner = _message(f"level {level}", f"message at level {level}", [("fwd.eml", inner)])
    (raw / "chain.eml").write_bytes(inner.as_bytes())
    scan = scan_raw_root(raw)
    step = "/.attachments/1-fwd.eml"
    assert scan.keys == ["chain.eml"] + ["chain.eml" + step * n for n in range(1, MAX_DEPTH + 1)]
    too_deep = "chain.eml" + step * MAX_DEPTH
    (skip,) = [p for p in scan.skipped if p.source_key == too_deep]
    assert f"{MAX_DEPTH + 1} containers deep (limit {MAX_DEPTH})" in skip.reason
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    document = snapshot_document(warehouse, raw, too_deep).document
    assert f"level {MAX_DEPTH + 1}" in build_sections(warehouse, document).parsed.text_layer
    with pytest.raises(DocumentError, match="containers deep"):
        read_derived(raw, too_deep + step)


def test_a_zip_member_named_to_climb_out_is_refused_by_name_and_never_extracted(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("ok/readme.md", "# Fine\n\nA member.\n")
        archive.writestr("../escape.md", "# Escaped\n\nwritten outside?\n")
        archive.writestr("/etc/absolute.md", "# Absolute\n")
        archive.writestr("ok/../../twice.md", "# Twice\n")
    (raw / "slip.zip").write_bytes(buffer.getvalue())
    scan = scan_raw_root(raw)
    assert scan.keys == ["slip.zip", "slip.zip/.members/ok/readme.md"]
    reasons = {p.name: p.reason for p in scan.skipped}
    assert "zip-slip" in reasons["slip.zip/.members/../escape.md"]
    assert "absolute" in reasons["slip.zip/.members//etc/absolute.md"]
    assert "zip-slip" in reasons["slip.zip/.members/ok/../../twice.md"]
    for key in ("slip.zip/.members/../escape.md", "slip.zip/.members/ok/../../twice.md"):
        with pytest.raises((DocumentError, ValueError)):
            snapshot_document(Warehouse(str(tmp_path / "w")), raw, key)
    assert not any(p.name.endswith(("escape.md", "twice.md")) for p in tmp_path.rglob("*"))


def test_a_zip_bomb_gets_no_children_and_is_named_in_the_scan(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("zeros.txt", b"\0" * (64 * 1024 * 1024))
    (raw / "bomb.zip").write_bytes(buffer.getvalue())
    scan = scan_raw_root(raw)
    assert scan.keys == ["bomb.zip"]
    assert any(p.name == "bomb.zip" and "zip bomb" in p.reason for p in scan.refused)


def test_a_failed_attachment_is_not_retried_by_the_nightly_refresh_until_it_changes(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    path = raw / "a.eml"
    message = _message("Report", "attached", [("broken.md", b"# Notes\n\nfirst\n")])
    path.write_bytes(message.as_bytes())
    child = "a.eml/.attachments/1-broken.md"
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    document = snapshot_document(warehouse, raw, child).document
    assert document.id is not None
    warehouse.record_failure(document.id, "sections", {"error": "boom", "code_version": "v1"})
    # Its bytes are extracted from the message again to tell it is the version that failed.
    assert failed_as_before(warehouse, raw, [child], {"sections": "v1"}) == {
        child: "sections: boom"
    }
    edited = _message("Report", "attached", [("broken.md", b"# Notes\n\nsecond\n")])
    path.write_bytes(edited.as_bytes())
    assert failed_as_before(warehouse, raw, [child], {"sections": "v1"}) == {}
    assert stale_documents(warehouse, raw, [child], chunker_hash="c", embedding_settings="e") == [
        child
    ]
    path.write_bytes(_message("Report", "nothing attached now", []).as_bytes())
    assert failed_as_before(warehouse, raw, [child], {"sections": "v1"}) == {}  # no crash


def test_a_message_embedded_in_an_outlook_message_is_a_document_with_stable_bytes(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(FIXTURES / "58214_with_attachment.msg", raw / "master.msg")
    scan = scan_raw_root(raw)
    child = "master.msg/.attachments/1-Test mail attachment.eml"
    assert scan.keys == ["master.msg", child]
    (listed,) = [f for f in scan.files if f.source_key == child]
    # Written as MIME the same way every time: the same content hash on every read.
    assert content_hash(read_derived(raw, child)) == content_hash(read_derived(raw, child))
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    document = snapshot_document(warehouse, raw, child).document
    assert document.content_hash == getattr(listed, "content_hash", None)
    text = build_sections(warehouse, document).parsed.text_layer
    assert text.startswith("Test mail attachment\n")
    assert "From: Bertrand Beyssac <bertrand.beyssac@c6.eu>" in text
    assert "Lorem ipsum dolor sit amet" in text


def test_an_archive_past_its_budgets_is_read_up_to_them_and_says_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agrag_pipeline import derived

    raw = tmp_path / "raw"
    raw.mkdir()
    with zipfile.ZipFile(raw / "many.zip", "w") as archive:
        for n in range(1, 6):
            archive.writestr(f"part{n}.md", f"# Part {n}\n\n" + "word " * 200)
    monkeypatch.setattr(derived, "MAX_EXTRACTED_BYTES", 2500)  # each member is ~1,010 bytes
    scan = scan_raw_root(raw)
    assert scan.keys == ["many.zip", "many.zip/.members/part1.md", "many.zip/.members/part2.md"]
    (stop,) = [p for p in scan.skipped if p.name == "many.zip"]
    assert "from many.zip/.members/part3.md on, are not read" in stop.reason

    derived._EXPANDED.clear()
    monkeypatch.setattr(derived, "MAX_EXTRACTED_BYTES", 1 << 30)
    monkeypatch.setattr(derived, "MAX_CHILDREN", 3)
    scan = scan_raw_root(raw)
    assert len(scan.keys) == 1 + 3
    assert any("more than 3 attachments or members" in p.reason for p in scan.skipped)


def _tar_gz(entries: list[tuple[str, bytes | None, str]]) -> bytes:
    """A .tar.gz of (name, bytes, link target): bytes None makes a symbolic link."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data, target in entries:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.linkname = tarfile.SYMTYPE, target
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_tar_and_gzip_members_are_documents_whose_keys_name_their_container(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    csv = b"team,wins\nred,3\nblue,5\n"
    (raw / "bundle.tar.gz").write_bytes(
        _tar_gz(
            [
                ("./docs/guide.md", b"# Guide\n\nRead me first.\n", ""),
                ("data/scores.csv", csv, ""),
                ("docs/latest.md", None, "/etc/passwd"),
                ("../escape.md", b"# Escaped\n", ""),
            ]
        )
    )
    (raw / "notes.txt.gz").write_bytes(gzip.compress(b"Minutes of the meeting.\n"))
    scan = scan_raw_root(raw)
    assert scan.keys == [
        "bundle.tar.gz",
        "bundle.tar.gz/.members/data/scores.csv",
        "bundle.tar.gz/.members/docs/guide.md",
        "notes.txt.gz",
        "notes.txt.gz/.members/notes.txt",
    ]
    reasons = {p.name: p.reason for p in scan.skipped}
    assert (
        "a link to '/etc/passwd': not followed" in reasons["bundle.tar.gz/.members/docs/latest.md"]
    )
    assert "zip-slip" in reasons["bundle.tar.gz/.members/../escape.md"]
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    member = snapshot_document(warehouse, raw, "bundle.tar.gz/.members/data/scores.csv").document
    assert member.media_type == "text/csv" and member.content_hash == content_hash(csv)
    inner = snapshot_document(warehouse, raw, "notes.txt.gz/.members/notes.txt").document
    assert build_sections(warehouse, inner).parsed.text_layer == "Minutes of the meeting.\n"
    listing = snapshot_document(warehouse, raw, "bundle.tar.gz").document
    assert listing.media_type == "application/x-tar"
    text = build_sections(warehouse, listing).parsed.text_layer
    assert text.startswith("Archive bundle.tar.gz\n\ndocs/guide.md (24 bytes)\n")


def test_a_gzip_bomb_is_refused_before_any_member_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agrag_pipeline.parsing import tararchive

    raw = tmp_path / "raw"
    raw.mkdir()
    with gzip.open(raw / "zeros.csv.gz", "wb", compresslevel=9) as out:
        for _ in range(16):
            out.write(b"\0" * (1024 * 1024))  # 16 MiB of zeros in ~16 KB
    monkeypatch.setattr(tararchive, "MAX_UNPACKED_BYTES", 4 * 1024 * 1024)
    scan = scan_raw_root(raw)
    assert scan.keys == ["zeros.csv.gz"]
    (refused,) = [p for p in scan.refused if p.name == "zeros.csv.gz"]
    assert "decompression bomb" in refused.reason
    with pytest.raises(DocumentError, match=r"zeros\.csv\.gz: it decompresses to over 4,194,304"):
        read_derived(raw, "zeros.csv.gz/.members/zeros.csv")


def test_reading_a_tar_gz_member_after_member_decompresses_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agrag_pipeline.parsing import tararchive

    raw = tmp_path / "raw"
    raw.mkdir()
    parts = [(f"part{n}.md", f"# Part {n}\n\nText {n}.\n".encode(), "") for n in range(5)]
    (raw / "parts.tgz").write_bytes(_tar_gz(parts))
    unpacked: list[str] = []
    real_unpack = tararchive.unpack

    def counting_unpack(data: bytes, media_type: str, source_key: str) -> bytes:
        unpacked.append(source_key)
        return real_unpack(data, media_type, source_key)

    walked: list[str] = []
    real_walk = tararchive.read_members

    def counting_walk(data: bytes, media_type: str, source_key: str) -> Iterator[Member]:
        walked.append(source_key)
        return real_walk(data, media_type, source_key)

    monkeypatch.setattr(tararchive, "unpack", counting_unpack)
    monkeypatch.setattr(tararchive, "read_members", counting_walk)
    tararchive._UNPACKED.clear()
    for name, data, _ in parts:
        assert read_derived(raw, f"parts.tgz/.members/{name}") == data
    assert unpacked == ["parts.tgz"]  # once, not once a member
    assert walked == ["parts.tgz"]  # the entries too: a later member does not walk the earlier


def test_a_renamed_compressed_file_is_refused_and_a_truncated_one_read_up_to_its_cut(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "notes.gz").write_bytes(b"plain words, not gzip\n")
    parts = [
        (f"part{n}.md", f"# Part {n}\n\n".encode() + os.urandom(3000).hex().encode(), "")
        for n in range(4)
    ]
    whole = _tar_gz(parts)
    (raw / "cut.tar.gz").write_bytes(whole[: len(whole) * 5 // 8])  # a download cut short
    text = b"".join(b"Item %d: %s\n" % (n, os.urandom(32).hex().encode()) for n in range(3000))
    packed = gzip.compress(text)
    (raw / "minutes.txt.gz").write_bytes(packed[: len(packed) // 2])
    scan = scan_raw_root(raw)
    refused = {p.name: p.reason for p in scan.refused}
    assert "not gzip-compressed data (no gzip signature)" in refused["notes.gz"]
    # What the cut archive still holds is read; the member the cut falls in is named.
    assert scan.keys[:3] == [
        "cut.tar.gz",
        "cut.tar.gz/.members/part0.md",
        "cut.tar.gz/.members/part1.md",
    ]
    skipped = {p.name: p.reason for p in scan.skipped}
    assert "cut off where the file is cut short" in skipped["cut.tar.gz/.members/part2.md"]
    assert "cut short (a truncated download?)" in skipped["cut.tar.gz"]
    assert read_derived(raw, "cut.tar.gz/.members/part1.md") == parts[1][1]
    # A cut single file gives its text up to the cut, whole lines of it unchanged.
    head = read_derived(raw, "minutes.txt.gz/.members/minutes.txt")
    assert 0 < len(head) < len(text) and text.startswith(head)
    assert "cut short" in skipped["minutes.txt.gz"]
