"""E-mail (.eml, Outlook .msg) and .zip archives as documents, on messages written by others
(unstructured's example documents, CPython's e-mail test data) and on hostile ones."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.detect import detect_media_type, undetected_reason
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
)
from agrag_pipeline.parsing.mail import EML_MEDIA_TYPE, MSG_MEDIA_TYPE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"


def _raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _assert_exact_sections(parsed) -> None:  # type: ignore[no-untyped-def]
    text = parsed.text_layer
    for section in parsed.sections:
        assert 0 <= section.start <= section.end <= len(text)
        assert text[section.start : section.end].strip() == text[section.start : section.end]
    covered = "".join(text[s.start : s.end] for s in parsed.sections)
    assert "".join(covered.split()) == "".join(text.split())


def test_an_eml_message_has_its_headers_in_metadata_and_a_header_section_then_its_body() -> None:
    parsed = parse_document(_raw("fake-email-attachment.eml"), "mail/fake-email-attachment.eml")
    meta = parsed.document.metadata
    assert parsed.document.media_type == EML_MEDIA_TYPE
    assert meta["mail.subject"] == "Fake email with attachment"
    assert meta["mail.from"] == "Mallori Harrell <mallori@unstructured.io>"
    assert meta["mail.to"] == "Mallori Harrell <mallori@unstructured.io>"
    assert meta["mail.date"] == "Fri, 23 Dec 2022 12:08:48 -0600"
    assert meta["mail.attachments"] == "1"
    first, header, *body = parsed.sections
    assert first.heading == "Fake email with attachment" and first.level == 1
    header_text = parsed.text_layer[header.start : header.end]
    assert header.kind == "table" and header.heading_path == ["Fake email with attachment"]
    assert "From: Mallori Harrell <mallori@unstructured.io>" in header_text
    assert "Attachment 1: fake-attachment.txt (text/plain, 30 bytes)" in header_text
    body_text = " ".join(parsed.text_layer[s.start : s.end] for s in body)
    # The plain alternative only: the HTML alternative is not read twice.
    assert body_text.count("Lots of whitespace") == 1
    assert "<div" not in parsed.text_layer and "=3D" not in parsed.text_layer
    _assert_exact_sections(parsed)


def test_an_outlook_msg_is_read_with_its_recipients_by_type_and_is_no_legacy_office_file() -> None:
    raw = _raw("fake-email-with-cc-and-bcc.msg")
    assert detect_media_type("a.msg", raw) == MSG_MEDIA_TYPE
    assert detect_media_type("no-extension", raw) == MSG_MEDIA_TYPE  # by its MAPI streams
    assert "legacy" not in (undetected_reason("a.msg", raw[:8192]) or "")
    parsed = parse_document(raw, "a.msg")
    meta = parsed.document.metadata
    assert meta["mail.subject"] == "Fake email with cc and bcc recipients"
    assert meta["mail.cc"] == "steve@unstructured.io"
    assert "john-ctr@unstructured.io" in meta["mail.to"]
    assert "This is a test email. Please ignore." in parsed.text_layer
    _assert_exact_sections(parsed)
    with_attachment = parse_document(_raw("fake-email-attachment.msg"), "b.msg")
    assert "Attachment 1: fake-attachment.txt (text/plain, 30 bytes)" in with_attachment.text_layer


def test_an_html_only_message_is_read_through_the_html_parser() -> None:
    parsed = parse_document(_raw("mime-html-only.eml"), "html-only.eml")
    assert "This is a text/html part." in parsed.text_layer
    assert "<p>" not in parsed.text_layer and "<html" not in parsed.text_layer
    _assert_exact_sections(parsed)


def test_a_message_saved_as_utf16_without_a_byte_order_mark_is_read() -> None:
    parsed = parse_document(_raw("fake-email-utf-16-le.eml"), "u16.eml")
    assert parsed.document.metadata["mail.subject"] == "Test Email"
    assert "Roses are red" in parsed.text_layer


def test_a_message_without_an_extension_is_told_by_its_headers_plain_notes_are_not() -> None:
    digest = _raw("cpython-msg_02.eml")
    assert detect_media_type("inbox/digest", digest) == EML_MEDIA_TYPE
    notes = b"Note: buy milk\nTodo: call Ann\n\nThe rest of the notes.\n"
    assert detect_media_type("NOTES", notes) == "text/plain"
    parsed = parse_document(digest, "inbox/digest")
    assert parsed.document.metadata["mail.attachments"] == "5"  # the digest's 5 messages
    assert "Today's Topics:" in parsed.text_layer and "Digest Footer" not in parsed.text_layer


def test_a_mime_bomb_of_thousands_of_parts_is_refused_naming_the_file() -> None:
    parts = "".join(f"--b\nContent-Type: text/plain\n\npart {i}\n" for i in range(5000))
    head = "From: a@b.c\nSubject: bomb\nContent-Type: multipart/mixed; boundary=b\n\n"
    bomb = f"{head}{parts}--b--\n"
    with pytest.raises(DocumentTooLargeError, match=r"bomb\.eml: .*5,001 MIME parts.*before"):
        parse_document(bomb.encode(), "bomb.eml")


def test_deeply_nested_multiparts_are_refused_naming_the_file() -> None:
    depth = 400
    head = "".join(
        f"--b{i}\nContent-Type: multipart/mixed; boundary=b{i + 1}\n\n" for i in range(depth)
    )
    tail = "".join(f"--b{i}--\n" for i in reversed(range(depth)))
    bomb = (
        "From: a@b.c\nSubject: nested\nContent-Type: multipart/mixed; boundary=b0\n\n"
        f"{head}--b{depth}\nContent-Type: text/plain\n\ndeep\n--b{depth}--\n{tail}"
    )
    with pytest.raises(DocumentTooLargeError, match=r"nested\.eml: .*nested"):
        parse_document(bomb.encode(), "nested.eml")


def test_a_truncated_message_is_read_as_far_as_it_goes_and_says_so() -> None:
    raw = _raw("fake-email-attachment.eml")
    cut = raw[: raw.index(b"Content-Type: text/html")]
    parsed = parse_document(cut, "cut.eml")
    assert "Lots of whitespace" in parsed.text_layer
    assert any("cut.eml" in w and "truncated" in w for w in parsed.warnings)


def test_a_truncated_outlook_message_is_a_clear_error_naming_the_file() -> None:
    raw = _raw("fake-email-attachment.msg")
    with pytest.raises(CorruptDocumentError, match=r"cut\.msg: not a readable Outlook message"):
        parse_document(raw[: len(raw) // 3], "cut.msg")


def test_a_zip_archive_is_a_document_listing_its_members() -> None:
    parsed = parse_document(_raw("simple.zip"), "bundle/simple.zip")
    assert parsed.document.media_type == "application/zip"
    assert "ideas-page.html (6,161 bytes)" in parsed.text_layer
    assert "stanley-cups.csv (89 bytes)" in parsed.text_layer
    _assert_exact_sections(parsed)


def test_a_zip_bomb_is_refused_naming_the_file() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("zeros.txt", b"\0" * (64 * 1024 * 1024))
    with pytest.raises(DocumentTooLargeError, match=r"bomb\.zip: .*zip bomb"):
        parse_document(buffer.getvalue(), "bomb.zip")


def test_a_heic_photo_is_skipped_with_its_true_reason() -> None:
    # The first bytes of unstructured's example-docs/img/DA-1p.heic (an iPhone photo).
    head = bytes.fromhex("00000018 66747970 68656963 00000000 68656963 6d696631 000003cb 6d657461")
    assert detect_media_type("img/DA-1p.heic", head) is None
    assert detect_media_type("no-extension", head) is None
    reason = undetected_reason("img/DA-1p.heic", head) or ""
    assert reason.startswith("a HEIC/HEIF image, which no parser reads") and "libheif" in reason


def test_an_outlook_body_behind_a_wrong_or_unknown_code_page_is_still_read() -> None:
    # Apache POI's test messages: an 8-bit body declared UTF-8 but written in cp1252, and a
    # body declared "windows-950", a name Python's codecs do not know.
    parsed = parse_document(_raw("ASCII_UTF-8_CP1252_LCID1031.msg"), "de.msg")
    assert "Body öäü Body" in parsed.text_layer
    parsed = parse_document(_raw("chinese-traditional.msg"), "zh.msg")
    assert "中文測試" in parsed.text_layer


def test_a_message_embedded_in_an_outlook_message_is_attached_as_a_message() -> None:
    parsed = parse_document(_raw("58214_with_attachment.msg"), "master.msg")
    assert parsed.document.metadata["mail.subject"] == "Master mail"
    assert "Attachment 1: Test mail attachment.eml (message/rfc822" in parsed.text_layer
    pdf_too = parse_document(_raw("attachment_msg_pdf.msg"), "pdf.msg").text_layer
    assert "Attachment 1: Test Attachment.eml (message/rfc822" in pdf_too
    assert "Attachment 2: smbprn.00009008.KdcPjl.pdf (application/octet-stream" in pdf_too


def test_a_part_labelled_latin_1_holding_windows_1252_quotes_reads_them_as_clients_do() -> None:
    parsed = parse_document(
        _raw("email-replace-mime-encodings-error-2.eml"), "mail/replace-encodings.eml"
    )
    assert "\u2019" in parsed.text_layer  # the sender's curly apostrophe, byte 0x92
    assert not any("\x80" <= ch <= "\x9f" for ch in parsed.text_layer)


def test_a_header_the_email_library_cannot_parse_is_read_as_written() -> None:
    # An MTA's bounce (jwz's mailbox, 1996): an address group followed by a comment makes
    # Python's header registry raise; the whole message was refused for one header.
    raw = (
        b"From: The Post Office <postmaster@mm1.example.com>\n"
        b"To: unlisted-recipients:; (no To-header on input)\n"
        b"Subject: =?utf-8?q?email_delivery_error?=\n\n"
        b"Processing your mail message caused the following errors.\n"
    )
    parsed = parse_document(raw, "bounce.eml")
    assert parsed.document.metadata["mail.to"] == "unlisted-recipients:; (no To-header on input)"
    assert parsed.document.metadata["mail.subject"] == "email delivery error"
    assert "caused the following errors" in parsed.text_layer


def test_maildir_messages_and_apple_mail_emlx_files_are_read_as_e_mails(tmp_path: Path) -> None:
    from agrag_pipeline.sources import scan_raw_root

    message = (FIXTURES / "fake-email-attachment.eml").read_bytes()
    raw = tmp_path / "raw"
    # Maildir (mutt, Dovecot, offlineimap): a message per file, named by delivery time, host and
    # flags, so its "extension" is ".laptop:2,S".
    maildir = raw / "Mail" / "INBOX" / "cur"
    maildir.mkdir(parents=True)
    (maildir / "1529571718.R11494268853744548136.laptop:2,S").write_bytes(message)
    (raw / "Mail" / "INBOX" / "new").mkdir()
    (raw / "Mail" / "INBOX" / "new" / "1529571999.M20P7.laptop").write_bytes(message)
    # Apple Mail: the message's byte count, the message, then a property list of its flags.
    plist = b'<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>flags</key>'
    plist += b"<integer>8590195713</integer></dict></plist>\n"
    apple = raw / "Mail" / "V10" / "Messages"
    apple.mkdir(parents=True)
    (apple / "4711.emlx").write_bytes(f"{len(message)}\n".encode() + message + plist)
    keys = scan_raw_root(raw).keys
    expected = [
        "Mail/INBOX/cur/1529571718.R11494268853744548136.laptop:2,S",
        "Mail/INBOX/new/1529571999.M20P7.laptop",
        "Mail/V10/Messages/4711.emlx",
    ]
    for key in expected:
        assert key in keys
        assert f"{key}/.attachments/1-fake-attachment.txt" in keys  # attachments read too
    texts = {
        key: parse_document((raw / key).read_bytes(), key).text_layer.split("Attachment 1:")[0]
        for key in expected
    }
    assert len(set(texts.values())) == 1  # the same message, however it is stored
    assert "plist" not in parse_document((apple / "4711.emlx").read_bytes(), "a.emlx").text_layer


# --- replies: the messages they quote -------------------------------------------------------


def test_an_outlook_reply_reads_the_message_it_quotes_as_a_section_of_its_own() -> None:
    # A real reply (unstructured's example): its text, then Outlook's "From: / Sent: / To: /
    # Subject:" block and the message it answers.
    parsed = parse_document(_raw("email-replace-mime-encodings-error-2.eml"), "re.eml")
    quoted = next(s for s in parsed.sections if s.level == 2)
    assert quoted.heading == "From: Someone Real [mailto:email@domain.com]"
    assert quoted.heading_path == ["RE: Random Expo Expo 2023", quoted.heading]
    text = parsed.text_layer
    assert "Dear Exhibitor," in text[quoted.start : quoted.end]
    reply = text[: quoted.start]
    assert "Did you get a chance to review my previous" in reply
    assert "Dear Exhibitor," not in reply
    _assert_exact_sections(parsed)


def _reply(body: str) -> bytes:
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"] = "Ana Costa <ana@example.org>"
    message["To"] = "Marta Ruiz <marta@example.org>"
    message["Subject"] = "Re: pumps for the lower valley"
    message["Date"] = "Tue, 04 Aug 2026 09:12:00 +0200"
    message.set_content(body)
    return message.as_bytes()


def test_a_reply_quoting_with_angle_brackets_under_an_attribution_line_is_two_sections() -> None:
    body = (
        "Marta, thanks: we can lend two pumps from Monday.\n\nAna\n\n"
        "On Mon, 3 Aug 2026 at 18:40, Marta Ruiz <marta@example.org>\nwrote:\n"
        "> Could the co-operative lend us pumps for the night watering?\n"
        ">\n> The board asks every farm along the lower reaches to share.\n"
    )
    parsed = parse_document(_reply(body), "thread/re.eml")
    quoted = next(s for s in parsed.sections if s.level == 2)
    assert quoted.heading == "On Mon, 3 Aug 2026 at 18:40, Marta Ruiz <marta@example.org> wrote:"
    assert "> Could the co-operative lend us pumps" in parsed.text_layer[quoted.start : quoted.end]
    assert "we can lend two pumps" in parsed.text_layer[: quoted.start]
    _assert_exact_sections(parsed)


def test_answers_written_between_the_quoted_lines_keep_the_message_whole() -> None:
    # Replying inline: the quote is not the message's history but what each answer answers.
    body = (
        "On Mon, 3 Aug 2026 at 18:40, Marta Ruiz <marta@example.org> wrote:\n"
        "> Could the co-operative lend us pumps?\n"
        "Yes, two, from Monday.\n"
        "> And the ferry timetable?\n"
        "Twice a day until the rain comes.\n"
    )
    parsed = parse_document(_reply(body), "thread/inline.eml")
    assert [s.level for s in parsed.sections if s.heading] == [1]


def test_a_gmail_reply_in_html_reads_the_message_it_quotes_as_a_section_of_its_own() -> None:
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"] = "Ana Costa <ana@example.org>"
    message["Subject"] = "Re: pumps for the lower valley"
    message.set_content(  # as Gmail writes a reply: the quote in a gmail_quote blockquote
        '<div dir="ltr">Thanks, we can lend two pumps from Monday.</div><br>'
        '<div class="gmail_quote"><div dir="ltr" class="gmail_attr">On Mon, 3 Aug 2026 at'
        " 18:40, Marta Ruiz &lt;marta@example.org&gt; wrote:<br></div>"
        '<blockquote class="gmail_quote" style="margin:0 0 0 .8ex;border-left:1px #ccc solid">'
        "<div>Could the co-operative lend us pumps for the night watering?</div>"
        "</blockquote></div>",
        subtype="html",
    )
    parsed = parse_document(message.as_bytes(), "thread/gmail.eml")
    quoted = next(s for s in parsed.sections if s.level == 2)
    assert quoted.heading == "On Mon, 3 Aug 2026 at 18:40, Marta Ruiz <marta@example.org> wrote:"
    assert "night watering" in parsed.text_layer[quoted.start : quoted.end]
    assert "we can lend two pumps" in parsed.text_layer[: quoted.start]
    _assert_exact_sections(parsed)
