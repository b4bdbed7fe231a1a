"""Web archives (MHTML) read as the one page they hold: its HTML through the HTML parser, its
style sheets and images not documents of their own."""

from __future__ import annotations

import email.message
import email.policy
from pathlib import Path

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.detect import detect_media_type
from agrag_pipeline.sources import scan_raw_root

PAGE_HTML = (
    "<!DOCTYPE html><html><head><title>Team handbook</title>"
    '<link rel="stylesheet" href="https://intranet.example.org/site.css"></head><body>'
    "<nav><a href='/'>Home</a> | <a href='/people'>People</a></nav>"
    "<h1>Team handbook</h1><p>New starters get a laptop on their first day.</p>"
    "<h2>Expenses</h2><table><tr><th>Item</th><th>Limit</th></tr>"
    "<tr><td>Train</td><td>€120</td></tr></table>"
    '<img src="https://intranet.example.org/logo.png" alt="logo"></body></html>'
)


def _archive_as_blink_saves_it() -> bytes:
    """An MHTML file laid out as Chrome's "Webpage, single file" writes one: the page first
    (quoted-printable, with a Content-ID and its address), then its style sheet and image."""
    archive = email.message.EmailMessage(policy=email.policy.SMTP)
    archive["From"] = "<Saved by Blink>"
    archive["Snapshot-Content-Location"] = "https://intranet.example.org/handbook"
    archive["Subject"] = "Team handbook"
    archive["Date"] = "Mon, 02 Nov 2026 09:30:00 -0000"
    archive["MIME-Version"] = "1.0"
    archive.make_related()
    archive.set_param("type", "text/html")
    page = email.message.EmailMessage(policy=email.policy.SMTP)
    page.set_content(PAGE_HTML, subtype="html", cte="quoted-printable")
    page["Content-ID"] = "<frame-3F05064BA13F57A7@mhtml.blink>"
    page["Content-Location"] = "https://intranet.example.org/handbook"
    style = email.message.EmailMessage(policy=email.policy.SMTP)
    style.set_content("body { font-family: serif; }\n", subtype="css")
    style["Content-Location"] = "https://intranet.example.org/site.css"
    logo = email.message.EmailMessage(policy=email.policy.SMTP)
    logo.set_content(b"\x89PNG\r\n\x1a\n" + bytes(64), maintype="image", subtype="png")
    logo["Content-Location"] = "https://intranet.example.org/logo.png"
    for part in (page, style, logo):
        del part["MIME-Version"]
        archive.attach(part)
    return archive.as_bytes()


def test_a_saved_web_page_reads_as_its_page_not_as_a_message_with_attachments(
    tmp_path: Path,
) -> None:
    raw_bytes = _archive_as_blink_saves_it()
    parsed = parse_document(raw_bytes, "saved/handbook.mhtml")
    assert parsed.document.media_type == "application/x-mimearchive"
    assert parsed.document.metadata["mhtml.url"] == "https://intranet.example.org/handbook"
    assert parsed.document.metadata["title"] == "Team handbook"
    text = parsed.text_layer
    assert "New starters get a laptop on their first day." in text
    assert "€120" in text  # quoted-printable UTF-8 decoded
    assert "font-family" not in text and "Saved by Blink" not in text
    assert [s.heading for s in parsed.sections if s.heading][:2] == ["Team handbook", "Expenses"]
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "handbook.mht").write_bytes(raw_bytes)
    scan = scan_raw_root(raw)
    assert scan.keys == ["handbook.mht"]  # its style sheet and logo are no documents


def test_word_single_file_web_page_behind_doc_is_read_as_a_web_archive() -> None:
    # Word's "Single File Web Page" (.mht) is often renamed, or saved, as .doc.
    body = (
        b'MIME-Version: 1.0\nContent-Type: multipart/related; boundary="----=_NextPart_01D7"\n\n'
        b"This document is a Single File Web Page, also known as a Web Archive file.\n\n"
        b"------=_NextPart_01D7\nContent-Location: file:///C:/Doc/minutes.htm\n"
        b'Content-Transfer-Encoding: quoted-printable\nContent-Type: text/html; charset="utf-8"\n\n'
        b'<html xmlns:o=3D"urn:schemas-microsoft-com:office:office"><body>'
        b"<h1>Minutes</h1><p class=3DMsoNormal>The board approved the budget.<o:p></o:p></p>"
        b"</body></html>\n------=_NextPart_01D7--\n"
    )
    assert detect_media_type("board/minutes.doc", body[:8192]) == "application/x-mimearchive"
    parsed = parse_document(body, "board/minutes.doc")
    assert "The board approved the budget." in parsed.text_layer
    assert parsed.sections[0].heading == "Minutes"
