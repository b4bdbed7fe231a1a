"""Legacy Office (.doc/.xls/.ppt), OpenDocument (.odt/.ods/.odp) and RTF: detected by content,
read through LibreOffice and our OOXML parsers, and refused clearly when hostile.

Fixtures (``fixtures/legacy_office``, sources in ``fixtures/README.md``): Apache POI's test files
(written by Word, Excel, PowerPoint and OpenOffice), and corpus documents saved by LibreOffice.
LibreOffice starts in seconds, so the fast tests convert one file (module-scoped); every other
format is converted in the one slow test, two conversions at a time.
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import time
import zipfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agrag_pipeline.parsing import ParsedDocument, detect, libreoffice, parse_document
from agrag_pipeline.parsing.detect import detect_media_type, undetected_reason
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
    ParseTimeoutError,
    UnsupportedFormatError,
)
from agrag_pipeline_tests.parsing.parsed_support import headings, parse_checked, table_cells, tables
from benchmarks.fidelity import reference_text, words

FIXTURES = Path(__file__).parents[1] / "fixtures" / "legacy_office"
HEAD = 8 * 1024  # what the raw-root scan reads


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _coverage_precision(text: str, reference_md: str) -> tuple[float, float]:
    ref = Counter(words(reference_text(reference_md)[0]))
    ours = Counter(words(text))
    matched = sum(min(n, ref[w]) for w, n in ours.items())
    return matched / sum(ref.values()), matched / max(sum(ours.values()), 1)


# --- detection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("simple-table.doc", detect.DOC),
        ("unit_test_headers.doc", detect.DOC),
        ("SimpleWithComments.xls", detect.XLS),
        ("basic_test_ppt_file.ppt", detect.PPT),
        ("unit_test_headers.odt", detect.ODT),
        ("SampleSS.ods", detect.ODS),
        ("powerpoint_comments.odp", detect.ODP),
        ("message.rtf", detect.RTF),
        ("62815.xlsb", detect.XLSB),
        ("Test_Visio-Some_Random_Text.vsd", detect.VSD),
        ("test_text_extraction.vsdx", detect.VSDX),
        ("visio_text_extraction.odg", detect.ODG),
    ],
)
def test_legacy_office_and_opendocument_are_known_by_content_whatever_their_name(
    name: str, expected: str
) -> None:
    raw = _fixture(name)
    assert detect_media_type(name, raw[:HEAD]) == expected
    # Renamed (or without an extension): the OLE streams, the ODF mimetype, {\rtf decide.
    assert detect_media_type("renamed.bin", raw) == expected
    assert detect_media_type("renamed", raw) == expected


def test_ole_file_whose_directory_lies_past_the_head_goes_by_its_extension() -> None:
    raw = _fixture("simple-table.doc")  # Word writes its OLE directory at the end (17 KiB in)
    assert detect_media_type("minutes.doc", raw[:HEAD]) == detect.DOC
    assert detect_media_type("minutes.bin", raw[:HEAD]) is None
    assert "whose directory lies past the bytes read" in (
        undetected_reason("minutes.bin", raw[:HEAD]) or ""
    )
    # A file that opens with a directory and no Office stream is no Office file.
    ppt_head = _fixture("basic_test_ppt_file.ppt")[:HEAD]
    assert detect_media_type("slides.ppt", ppt_head) == detect.PPT
    not_office = ppt_head.replace("PowerPoint Document".encode("utf-16-le"), b"X" * 38)
    assert detect_media_type("thing.bin", not_office) is None
    assert "not a Word, Excel or PowerPoint file" in (
        undetected_reason("thing.bin", not_office) or ""
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("testWordPerfect_50.doc", detect.WPD),  # "\xffWPC": WordPerfect, as .doc in its day
        ("NEWSSLID.DOC", detect.DOC),  # Word for Windows 2.0: no OLE file, LibreOffice reads it
        ("testWindowsWrite.wri", detect.WRITE),
        ("PEYTREND.WK3", detect.LOTUS),
        ("testQuattro.wb2", detect.QUATTRO),
        ("testQUATTRO.qpw", detect.QUATTRO),  # an OLE file that is no Word, Excel or PowerPoint
    ],
)
def test_word_processors_and_spreadsheets_before_office_97_are_known(
    name: str, expected: str
) -> None:
    assert detect_media_type(name, _fixture(name)[:HEAD]) == expected


def test_a_wordperfect_file_is_known_by_its_signature_under_any_name() -> None:
    raw = _fixture("testWordPerfect_50.doc")
    assert detect_media_type("contract", raw) == detect.WPD
    assert detect_media_type("contract.wp5", raw) == detect.WPD


def test_a_write_file_or_doc_without_a_known_signature_is_refused_before_libreoffice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_converter(*_args: object, **_kwargs: object) -> bytes:
        raise AssertionError("LibreOffice was started for a file refused by its signature")

    monkeypatch.setattr(libreoffice, "convert", no_converter)
    junk = bytes(range(256)) * 8  # no Write signature: LibreOffice would read it as text
    with pytest.raises(CorruptDocumentError, match="not a Windows Write document"):
        parse_document(junk, "notes.wri")
    with pytest.raises(CorruptDocumentError, match="no OLE compound file signature"):
        parse_document(junk, "notes.doc")


def test_legacy_doc_named_docx_is_read_as_the_doc_it_is() -> None:
    # parse_document detects on the whole file: the directory at its end names WordDocument.
    assert detect_media_type("report.docx", _fixture("simple-table.doc")) == detect.DOC


# --- reading real files ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def headers_doc() -> ParsedDocument:
    """The corpus's heading test document saved as .doc by LibreOffice, read once."""
    return parse_checked(_fixture("unit_test_headers.doc"), "docs/unit_test_headers.doc")


def test_doc_is_read_with_its_words_and_headings(
    headers_doc: ParsedDocument, corpus_dir: Path
) -> None:
    reference = (corpus_dir / "docx" / "groundtruth" / "unit_test_headers.md").read_text("utf-8")
    coverage, precision = _coverage_precision(headers_doc.text_layer, reference)
    assert coverage >= 0.99 and precision >= 0.99
    assert headings(headers_doc)[:5] == [
        (1, ["Test Document"]),
        (2, ["Test Document", "Section 1"]),
        (3, ["Test Document", "Section 1", "Section 1.1"]),
        (3, ["Test Document", "Section 1", "Section 1.2"]),
        (4, ["Test Document", "Section 1", "Section 1.2", "Section 1.2.3"]),
    ]
    assert headers_doc.document.media_type == detect.DOC
    assert headers_doc.document.metadata["converted_by"] == "LibreOffice (.doc to .docx)"


def test_a_docs_title_heads_its_headings_though_its_styles_are_named_in_greek() -> None:
    # Word's Title comes out of LibreOffice's conversion in LibreOffice's title style
    # ("Heading"), and the heading styles keep their Greek names ("Επικεφαλίδα 2"): the title
    # was read as body text before, so the document had no title heading.
    parsed = parse_checked(_fixture("greek_heading_styles.doc"), "docs/greek_heading_styles.doc")
    title = "Überschriften in nicht-englischer Sprache"
    assert headings(parsed) == [
        (1, [title]),
        (3, [title, "Problem mit lokalisierten Dokumenten"]),
        (3, [title, "Vorgeschlagene Änderung"]),
        (3, [title, "Verifizierung"]),
    ]


#: Each format's file and words it must give (read from the file in its application); the
#: corpus-derived ones are scored against the source document's ground truth as well.
_REAL_FILES = {
    "simple-table.doc": ["created using Word 97", "Cell 2,3", "This text is below the table."],
    "SimpleWithComments.xls": ["Sheet1", "| 2 | two |", "Yegor Kozlov: first cell"],
    # Excel 95 (BIFF5, a "Book" stream), which msoffcrypto does not know: LibreOffice reads it.
    "testEXCEL_95.xls": ["Sample Excel Worksheet - Numbers and their Squares", "| 3 | 9 |"],
    "basic_test_ppt_file.ppt": ["This is a test title", "These are the notes for page 1"],
    "message.rtf": ["Five files from Hell!"],
    "SampleSS.ods": ["Test spreadsheet", "Sheet Number 2", "| 1 | 10 | 2 | 13 |"],
    "unit_test_headers.odt": ["Section 1.2.3", "Paragraph 2.1.1.1"],
    "unit_test_headers.rtf": ["Section 1.2.3", "Paragraph 2.1.1.1"],
    "powerpoint_comments.odp": ["Test Slide With Comments", "sample reviewer comment"],
    # Formulas are Math objects in ODF: LibreOffice Math turns them into OMML, we into LaTeX.
    "table_with_equations.odt": ["| The next cell has an equation | A=\\pi r^{2} |"],
    # Not scored against the XLSX's ground truth: Excel's threaded comments reach an .ods only
    # as their legacy copies, which carry Excel's "[Threaded comment] Your version..." notice.
    "xlsx_comments.ods": ["| 2024 | 180 | 130 | 310 |", "Why Python specifically?"],
    # Excel's binary workbook, Visio drawings (binary and OOXML), a Publisher page layout and an
    # OpenDocument drawing: the drawings and layouts reach the PDF reader through LibreOffice.
    "62815.xlsb": ["RkNumber", "| 1200455 |", "| -12004.55 |"],
    "Test_Visio-Some_Random_Text.vsd": ["I am a test view", "Some random text, on a page"],
    "test_text_extraction.vsdx": ["Text there", "Text, text, everywhere!"],
    "Sample.pub": ["This is some text on the first page", "It’s Arial, 20 point font"],
    "visio_text_extraction.odg": ["Router", "Text, text, everywhere!"],
    # Apple iWork (LibreOffice's libetonyek), OpenOffice.org 1 and StarOffice, Works,
    # WordPerfect and Lotus 1-2-3: Apache Tika's test documents.
    "testPages.pages": ["Sample pages document", "| Cell four | Cell five | Cell six |"],
    "testKeynote2018.key": ["I save in Apple Key App as default .key"],
    "testNumbers.numbers": ["Account Categories", "| Credit Card | -1095 |"],
    "testStarOffice-6.0-writer.sxw": ["Marginalia (the previous paragraph is Heading 1)"],
    "testStarOffice-5.2-writer.sdw": ["This is an example StarOffice 5.2 document."],
    "testWORKS.wps": ["made with Microsoft Works Word Processor 7.0"],
    "testWordPerfect.wpd": ["APPENDIX ‘A’", "AND FURTHER"],
    "testLotus123.wk1": ["| OBSERV | DATE | X | Y | SOIL |"],
    # Formats of the 1980s and 1990s from the Open Preservation Foundation's format corpus:
    # WordPerfect 5.0 and Word for Windows 2.0 files saved as .doc, Windows Write, Lotus 1-2-3
    # release 3 and Quattro Pro (6.0 for Windows, and X3's OLE file).
    "testWordPerfect_50.doc": ["Sluwe Sjaantje sloeg de slome slager"],
    "NEWSSLID.DOC": ["Introduction to NEWS", "for users of MS-DOS and UNIX systems"],
    "testWindowsWrite.wri": ["Sluwe Sjaantje sloeg de slome slager"],
    "PEYTREND.WK3": ["| NO | DATE | VMC5_10 | VMC15_20 | VMC30_35 |"],
    "testQuattro.wb2": ["| X | Y | Z |", "| 2 | 9 | 18 |"],
    "testQUATTRO.qpw": ["This is an example spreadsheet made with Quattro Pro X3."],
    # PowerPoint 4 for Mac (1994): its OLE file holds a "PP40" stream, no "PowerPoint Document".
    "powerpoint4_ecdl_paris.ppt": ["JISC digital library initiatives: contents"],
}
_GROUND_TRUTH = {
    "unit_test_headers.odt": "docx/groundtruth/unit_test_headers.md",
    "unit_test_headers.rtf": "docx/groundtruth/unit_test_headers.md",
    "powerpoint_comments.odp": "pptx/groundtruth/powerpoint_comments.md",
    "table_with_equations.odt": "docx/groundtruth/table_with_equations.md",
}


@pytest.mark.slow
def test_every_legacy_and_opendocument_format_is_read_in_parallel_conversions(
    corpus_dir: Path,
) -> None:
    # Two conversions at a time: each has its own LibreOffice profile, so none waits or fails.
    with ThreadPoolExecutor(max_workers=2) as pool:
        parsed = dict(
            zip(
                _REAL_FILES,
                pool.map(lambda n: parse_checked(_fixture(n), f"shared/{n}"), _REAL_FILES),
                strict=True,
            )
        )
    for name, expected in _REAL_FILES.items():
        text = parsed[name].text_layer
        for phrase in expected:
            assert phrase in text, (name, phrase)
        if name in _GROUND_TRUTH:
            reference = (corpus_dir / _GROUND_TRUTH[name]).read_text("utf-8")
            coverage, precision = _coverage_precision(text, reference)
            assert coverage >= 0.9 and precision >= 0.8, (name, coverage, precision)
    table = tables(parsed["simple-table.doc"])[0]
    assert table_cells(parsed["simple-table.doc"], table) == [
        ["Cell 1,1", "Cell 1,2", "Cell 1,3"],
        ["Cell 2,1", "Cell 2,2", "Cell 2,3"],
    ]
    assert [h for h in headings(parsed["SampleSS.ods"]) if h[0] == 1] == [
        (1, ["First Sheet"]),
        (1, ["Sheet Number 2"]),
    ]


# --- hostile files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "PasswordProtected.doc",
        "password.xls",
        "Password_Protected-hello.ppt",
        "password_secret.odt",
        "testPagesPwdProtected.pages",
        "spreadsheet-calcs_passwordprotected.xls",  # Excel 5/95: msoffcrypto does not read it
    ],
)
def test_password_protected_legacy_file_says_password_protected(name: str) -> None:
    key = f"locked/{name}"
    with pytest.raises(CorruptDocumentError, match="password-protected") as error:
        parse_document(_fixture(name), key)
    assert str(error.value).startswith(f"{key}: ")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("simple-table.doc", "not a readable OLE compound file"),
        ("SimpleWithComments.xls", "not a readable OLE compound file"),
        ("unit_test_headers.odt", "not a readable ZIP package"),
    ],
)
def test_truncated_legacy_or_opendocument_file_is_a_clear_error(name: str, problem: str) -> None:
    raw = _fixture(name)
    key = f"cut/{name}"
    with pytest.raises(CorruptDocumentError, match=problem) as error:
        parse_document(raw[: len(raw) // 3], key)
    assert str(error.value).startswith(f"{key}: ")


def test_opendocument_zip_bomb_is_refused_before_conversion() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", b"<a>" + b" " * (16 * 1024 * 1024) + b"</a>")
    bomb = out.getvalue()
    assert len(bomb) < 200_000
    assert detect_media_type("bomb.odt", bomb[:HEAD]) == detect.ODT
    with pytest.raises(DocumentTooLargeError, match="zip bomb") as error:
        parse_document(bomb, "bomb.odt")
    assert str(error.value).startswith("bomb.odt: ")


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its parent's reaping does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_hanging_converter_is_killed_at_its_budget_with_nothing_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A converter that never finishes and has a child of its own, as soffice has soffice.bin.
    pids = tmp_path / "pids"
    fake = tmp_path / "bin" / "soffice"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 600 &\necho $! >> {pids}\nwait\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ParseTimeoutError, match="killed") as error:
        parse_document(_fixture("unit_test_headers.odt"), "slow/hangs.odt", time_budget_s=3)
    assert str(error.value).startswith("slow/hangs.odt: ")
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 2  # the converter and its child both ran
    for _ in range(50):  # SIGKILL is delivered at once; an orphan's reaping may take a moment
        left = [pid for pid in started if _alive(pid)]
        if not left:
            break
        time.sleep(0.1)
    assert left == [], f"converter processes still running: {left}"


def test_missing_libreoffice_is_named_in_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UnsupportedFormatError, match="needs LibreOffice"):
        parse_document(_fixture("unit_test_headers.odt"), "no-office/file.odt")


def test_converter_runs_under_its_memory_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A converter that needs 512 MiB to write its output: refused under a 256 MiB budget.
    fake = tmp_path / "bin" / "soffice"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'while [ $# -gt 0 ]; do [ "$1" = --outdir ] && out=$2; shift; done\n'
        f'{sys.executable} -c "bytearray(512 * 1024 * 1024)" || exit 1\n'
        'mkdir -p "$out" && echo converted > "$out/document.docx"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    raw = _fixture("unit_test_headers.odt")
    roomy = libreoffice.convert(raw, "big.odt", source_suffix=".odt", target="docx")
    assert roomy == b"converted\n"
    with pytest.raises(CorruptDocumentError, match="MemoryError"):
        libreoffice.convert(
            raw, "big.odt", source_suffix=".odt", target="docx", memory_bytes=256 * 1024**2
        )


def test_converter_has_no_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not libreoffice.offline_prefix():
        pytest.skip("this machine allows no network namespace (unshare): nothing to prove")
    # A converter that tries to reach a server listening on this machine's loopback.
    with socket.create_server(("127.0.0.1", 0)) as server:
        probe = tmp_path / "probe.py"
        probe.write_text(
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), timeout=5)\n"
            "    print('reached')\n"
            "except OSError:\n"
            "    print('unreachable')\n"
        )
        fake = tmp_path / "bin" / "soffice"
        fake.parent.mkdir()
        fake.write_text(
            "#!/bin/sh\n"
            'while [ $# -gt 0 ]; do [ "$1" = --outdir ] && out=$2; shift; done\n'
            f'mkdir -p "$out" && {sys.executable} {probe} > "$out/document.docx"\n'
        )
        fake.chmod(0o755)
        subprocess.run([str(fake), "--outdir", str(tmp_path / "direct")], check=True, timeout=30)
        assert (tmp_path / "direct" / "document.docx").read_text() == "reached\n"
        monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
        out = libreoffice.convert(b"x", "net.odt", source_suffix=".odt", target="docx")
    assert out == b"unreachable\n"


def test_a_converted_file_without_text_stays_a_failure_unlike_a_native_office_file() -> None:
    # A Word document without text is a note (a blank form); the same emptiness after a
    # LibreOffice conversion may be the converter's loss, so it fails and says so.
    content = (
        b'<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        b'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        b'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        b"<office:body><office:text><text:p/></office:text></office:body>"
        b"</office:document-content>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as odt:
        odt.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        odt.writestr("content.xml", content)
        odt.writestr(
            "META-INF/manifest.xml",
            '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
            'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
            '<manifest:file-entry manifest:full-path="/" '
            'manifest:media-type="application/vnd.oasis.opendocument.text"/>'
            '<manifest:file-entry manifest:full-path="content.xml" '
            'manifest:media-type="text/xml"/></manifest:manifest>',
        )
    with pytest.raises(EmptyDocumentError, match=r"^forms/blank\.odt: .*no text"):
        parse_document(out.getvalue(), "forms/blank.odt")


def test_a_flat_opendocument_text_reads_as_its_word_original(corpus_dir: Path) -> None:
    flat = parse_checked(_fixture("unit_test_headers.fodt"), "docs/unit_test_headers.fodt")
    original = parse_document(
        (corpus_dir / "docx" / "unit_test_headers.docx").read_bytes(), "unit_test_headers.docx"
    )
    assert flat.document.media_type == detect.FODT
    assert headings(flat) == headings(original)
    assert words(flat.text_layer) == words(original.text_layer)
    assert flat.document.metadata["converted_by"] == "LibreOffice (.fodt to .docx)"


def test_a_flat_opendocument_declaring_entities_is_refused_before_conversion() -> None:
    raw = (
        b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">]>'
        b'<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0">'
        b"&a;</office:document>"
    )
    with pytest.raises(CorruptDocumentError, match=r"^laughs\.fodt: "):
        parse_document(raw, "laughs.fodt")


def test_a_content_part_named_fodt_is_refused_before_conversion() -> None:
    # An .odt's content.xml on its own (as Pandoc's OpenDocument writer gives it) is no flat
    # OpenDocument: LibreOffice read it as text with its markup.
    raw = (
        b'<?xml version="1.0"?><office:document-content '
        b'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0">'
        b"<office:body/></office:document-content>"
    )
    with pytest.raises(CorruptDocumentError, match=r"its root is <document-content>"):
        parse_document(raw, "part.fodt")


def test_a_dot_key_file_that_is_no_keynote_package_is_never_read() -> None:
    # ".key" is Keynote's extension and a private key's: only a zip package is a presentation.
    pem = b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----\n"
    assert detect_media_type("deploy/server.key", pem) is None
    assert "no Apple iWork package (a cryptographic key?)" in str(
        undetected_reason("deploy/server.key", pem)
    )
    keynote = _fixture("testKeynote2018.key")
    assert detect_media_type("talks/q3.key", keynote[:HEAD]) == detect.KEYNOTE


def test_conversions_after_the_first_start_from_a_copy_of_its_profile_removed_at_exit(
    tmp_path: Path,
) -> None:
    """LibreOffice's set-up of a new profile cost every conversion 0.2-0.4 s of ~1.4: a process
    keeps the profile its first successful conversion made and copies it for the next ones (each
    still has its own); the kept profile goes when the process ends."""
    script = tmp_path / "convert_twice.py"
    script.write_text(
        "import os, sys\n"
        "from agrag_pipeline.parsing import libreoffice, parse_document\n"
        "raw = open(sys.argv[1], 'rb').read()\n"
        "first = parse_document(raw, 'a/first.doc').text_layer\n"
        "kept = libreoffice._PROFILE_TEMPLATES[os.getpid()]\n"
        "assert (kept / 'user').is_dir(), sorted(p.name for p in kept.iterdir())\n"
        "assert parse_document(raw, 'a/second.doc').text_layer == first\n"
        "print(kept)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script), str(FIXTURES / "simple-table.doc")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    kept = Path(done.stdout.strip().splitlines()[-1])
    assert kept.name == "profile" and not kept.parent.exists()


def test_a_profile_kept_by_a_process_killed_with_sigkill_is_removed_by_the_next(
    tmp_path: Path,
) -> None:
    """A worker killed with SIGKILL runs no exit handler: the profile it kept stays in the temp
    folder, until the next process that keeps one finds its owner gone and removes it."""
    script = tmp_path / "convert.py"
    script.write_text(
        "import os, sys, time\n"
        "from agrag_pipeline.parsing import libreoffice, parse_document\n"
        "parse_document(open(sys.argv[1], 'rb').read(), 'a/one.doc')\n"
        "print(libreoffice._PROFILE_TEMPLATES[os.getpid()], flush=True)\n"
        "if sys.argv[2] == 'wait':\n"
        "    time.sleep(600)\n"
    )
    command = [sys.executable, str(script), str(FIXTURES / "simple-table.doc")]
    repo = Path(__file__).parents[2]
    killed = subprocess.Popen([*command, "wait"], stdout=subprocess.PIPE, text=True, cwd=repo)
    assert killed.stdout is not None
    orphan = Path(killed.stdout.readline().strip()).parent
    killed.kill()  # SIGKILL
    killed.wait(timeout=60)
    assert orphan.is_dir() and orphan.name.startswith(f"agrag-soffice-profile-{killed.pid}-")
    done = subprocess.run([*command, "exit"], capture_output=True, text=True, cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not orphan.exists()
    assert not Path(done.stdout.strip()).parent.exists()  # its own, removed at its exit
