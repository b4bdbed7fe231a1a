"""Unix mailboxes: each message a document of its own, read as the ``.eml`` it was written
from, keyed by its Message-ID; the mailbox's own text its listing."""

from __future__ import annotations

import email.message
import email.policy
import mailbox
import shutil
from pathlib import Path

import pytest

from agrag_pipeline.derived import read_derived
from agrag_pipeline.parsing import mbox, parse_document
from agrag_pipeline.parsing.detect import detect_media_type
from agrag_pipeline.parsing.errors import DocumentError
from agrag_pipeline.pipeline import build_sections, snapshot_document
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline.storage import Warehouse

MAIL = Path(__file__).resolve().parents[1] / "fixtures" / "mail"
#: Real messages (Unstructured's examples, one with a "/" in its Message-ID; CPython's Mailman
#: digest, which has no Message-ID).
MESSAGES = (
    "fake-email-attachment.eml",
    "mime-multipart-digest.eml",
    "email-replace-mime-encodings-error-2.eml",
    "cpython-msg_02.eml",
)


def _write_mailbox(path: Path, messages: list[bytes]) -> None:
    """A mailbox as Python's ``mailbox.mbox`` writes one (mboxo: body "From " lines quoted)."""
    box = mailbox.mbox(path, create=True)
    box.lock()
    try:
        for data in messages:
            box.add(data)
        box.flush()
    finally:
        box.unlock()
        box.close()


def _message(subject: str, message_id: str | None, body: str) -> bytes:
    message = email.message.EmailMessage(policy=email.policy.SMTP)
    message["From"] = "ann@example.org"
    message["To"] = "team@example.org"
    message["Subject"] = subject
    message["Date"] = "Mon, 02 Nov 2026 09:30:00 +0000"
    if message_id is not None:
        message["Message-ID"] = message_id
    message.set_content(body)
    return message.as_bytes()


def test_each_message_of_a_mailbox_is_a_document_read_as_the_eml_it_was_written_from(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    (raw / "mail").mkdir(parents=True)
    originals = [(MAIL / name).read_bytes() for name in MESSAGES]
    _write_mailbox(raw / "mail" / "inbox.mbox", originals)
    scan = scan_raw_root(raw)
    messages = [k for k in scan.keys if k.startswith("mail/inbox.mbox/.members/")]
    top = [k for k in messages if "/.attachments/" not in k]
    assert len(top) == len(MESSAGES)
    assert "mail/inbox.mbox/.members/1234567890@example.com.eml" in top  # by its Message-ID
    assert "mail/inbox.mbox/.members/message-4.eml" in top  # no Message-ID: by its place
    assert all(k.endswith(".eml") and k.count("/") == 3 for k in top)  # "/" in an ID: no folder
    assert any("/.attachments/" in k for k in messages)  # their attachments are read too
    read = sorted(parse_document(read_derived(raw, key), key).text_layer for key in top)
    written = sorted(parse_document(data, "original.eml").text_layer for data in originals)
    assert read == written
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    listing = snapshot_document(warehouse, raw, "mail/inbox.mbox").document
    assert listing.media_type == "application/mbox"
    text = build_sections(warehouse, listing).parsed.text_layer
    assert text.startswith("Mailbox inbox.mbox\n\n")
    assert len(text.strip().splitlines()) == 2 + len(MESSAGES)
    assert "1234567890@example.com.eml" in text and "Example Multipart Digest Email" in text


def test_a_body_line_starting_with_from_does_not_start_a_message(tmp_path: Path) -> None:
    # Thunderbird leaves "From Russia with love" unquoted, once before a "Year: 1963" line.
    raw_bytes = (MAIL / "mimekit-unmunged.mbox").read_bytes()
    assert raw_bytes.startswith(b"\xef\xbb\xbf")
    names = [name for name, _ in mbox.messages(raw_bytes, "unmunged.mbox")]
    assert names == ["message-1.eml", "message-2.eml"]  # no Message-ID: named by place
    second = dict(mbox.messages(raw_bytes, "unmunged.mbox"))["message-2.eml"]
    text = parse_document(second, "m.eml").text_layer
    assert "From Russia with love\nYear: 1963" in text
    # A Thunderbird folder file has no extension: told by its content.
    assert detect_media_type("Mail/Local Folders/Inbox", raw_bytes[:8192]) == mbox.MEDIA_TYPE
    assert detect_media_type("lists/2024-March.txt", raw_bytes[:8192]) == mbox.MEDIA_TYPE
    assert detect_media_type("notes.txt", b"From Russia with love\n\nA film.\n") == "text/plain"


def test_a_gmail_export_without_dates_on_its_from_lines_is_split_into_its_messages(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(MAIL / "mimekit-issue1189.mbox", raw / "All mail.mbox")
    scan = scan_raw_root(raw)
    messages = [k for k in scan.keys if k.count("/.members/") == 1 and k.endswith(".eml")]
    assert len(messages) == 4
    assert "All mail.mbox/.members/f092d8d2-8781-469e-a1a6-c938087dc1f4@example.com.eml" in (
        messages
    )
    subjects = []
    for key in messages:
        parsed = parse_document(read_derived(raw, key), key)
        subjects.append(parsed.document.metadata.get("mail.subject"))
    assert sorted(subjects) == [f"Message {n}" for n in range(1, 5)]
    # The "Attachment.zip" one message carries is a 7-Zip archive by its bytes, which libarchive
    # gives up on without a word: refused, saying so, not "None".
    (attached,) = [k for k in scan.keys if "/.attachments/" in k]
    assert attached.endswith("/.attachments/1-Attachment.zip")
    refused = {p.name: p.reason for p in scan.refused}
    assert "libarchive gave up on it" in refused[attached]


def test_a_message_keeps_its_key_and_hash_when_another_is_deleted_before_it(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    box = raw / "team.mbox"
    first = _message("Budget", "<budget-1@example.org>", "The budget is due on Friday.\n")
    second = _message("Offsite", "<offsite-2@example.org>", "From Monday the office is shut.\n")
    third = _message("No id", None, "A message its client sent without a Message-ID.\n")
    _write_mailbox(box, [first, second, third])
    before = {f.source_key: f for f in scan_raw_root(raw).files}
    offsite = "team.mbox/.members/offsite-2@example.org.eml"
    assert set(before) == {
        "team.mbox",
        "team.mbox/.members/budget-1@example.org.eml",
        offsite,
        "team.mbox/.members/message-3.eml",
    }
    # mboxo quoting of the body's "From Monday" line is undone: the message reads as written.
    assert read_derived(raw, offsite) == second
    box.unlink()
    _write_mailbox(box, [second, third])  # the mailbox compacted after a deletion
    after = {f.source_key: f for f in scan_raw_root(raw).files}
    assert offsite in after and "team.mbox/.members/budget-1@example.org.eml" not in after
    assert after[offsite].content_hash == before[offsite].content_hash
    gone = r"no longer holds message 'budget-1@example\.org\.eml'"
    with pytest.raises(DocumentError, match=gone):
        read_derived(raw, "team.mbox/.members/budget-1@example.org.eml")


def test_content_length_keeps_a_from_line_in_a_body_from_splitting_the_message() -> None:
    body = (
        b"Forwarded below.\n\nFrom bob@example.org Mon Nov  2 09:00:00 2026\nSubject: old\n\nhi\n"
    )
    headers = (
        b"From: ann@example.org\nSubject: Forward\nMessage-ID: <fwd@example.org>\n"
        b"Content-Length: " + str(len(body)).encode() + b"\n\n"
    )
    mailbox_bytes = (
        b"From ann@example.org Mon Nov  2 10:00:00 2026\n" + headers + body + b"\n"
        b"From cy@example.org Mon Nov  2 11:00:00 2026\nSubject: Next\n\nThe next one.\n"
    )
    found = dict(mbox.messages(mailbox_bytes, "solaris.mbox"))
    assert list(found) == ["fwd@example.org.eml", "message-2.eml"]
    assert found["fwd@example.org.eml"].endswith(b"Subject: old\n\nhi\n")
    # Without the header the same body line would open a message of its own.
    unlabelled = mailbox_bytes.replace(b"Content-Length: ", b"X-Length: ")
    assert len(list(mbox.messages(unlabelled, "plain.mbox"))) == 3


def test_a_file_named_mbox_that_is_no_mailbox_is_refused_naming_it(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "notes.mbox").write_text("Just some notes, not mail.\n", encoding="utf-8")
    scan = scan_raw_root(raw)
    (refused,) = [p for p in scan.refused if p.name == "notes.mbox"]
    assert "not a mailbox" in refused.reason
    with pytest.raises(DocumentError, match=r"notes\.mbox: not a mailbox"):
        parse_document((raw / "notes.mbox").read_bytes(), "notes.mbox")


def test_reading_message_after_message_splits_the_mailbox_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    sent = [_message(f"Note {n}", f"<note-{n}@example.org>", f"Note {n}.\n") for n in range(6)]
    _write_mailbox(raw / "notes.mbox", sent)
    split: list[str] = []
    real_starts = mbox._starts

    def counting_starts(data: bytes, first: int, source_key: str) -> list[int]:
        split.append(source_key)
        return real_starts(data, first, source_key)

    monkeypatch.setattr(mbox, "_starts", counting_starts)
    mbox._SPLIT.clear()
    for n in range(6):
        data = read_derived(raw, f"notes.mbox/.members/note-{n}@example.org.eml")
        assert f"Note {n}.".encode() in data
    assert split == ["notes.mbox"]


def test_splitting_a_mailbox_looks_at_each_header_block_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 5,000 messages of headers only (no blank line anywhere): each header search used to run
    # to the end of the mailbox, quadratic in its size (200,000 such messages: 468 s CPU).
    data = b"".join(b"From - Mon Jun  3 12:50:27 1996\nX-Id: %d\n" % n for n in range(5000))
    scanned: list[int] = []
    real = mbox._HEADER_END

    class Counting:
        def search(self, text: bytes, pos: int = 0, endpos: int | None = None) -> object:
            end = len(text) if endpos is None else min(endpos, len(text))
            scanned.append(end - pos)
            return real.search(text, pos, end)

    monkeypatch.setattr(mbox, "_HEADER_END", Counting())
    mbox._SPLIT.clear()
    assert len(mbox.spans(data, "headers-only.mbox")) == 5000
    assert sum(scanned) <= 3 * len(data)
