"""A web page saved "complete" by a browser or Office is a page and a folder beside it
(``report.htm`` and ``report_files/``) holding its pictures, style sheets, scripts and Office's
``filelist.xml``. The page is the document; the folder's files are not, and read one by one
they put a site's JavaScript and OCR of its icons into the index. Each scan (a folder on disk,
a zip's members, a bucket: ``test_deploy_s3_raw_keys.py``) skips the folder once, naming the
page it belongs to, and still reads a ``_files`` folder that no page stands beside.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from agrag_pipeline.settings import DocumentsSettings
from agrag_pipeline.sources import scan_raw_root

PAGE = "<html><body><h1>Quarterly report</h1><p>Revenue grew in every region.</p></body></html>"
#: What Chrome and Word write into the folder (names as they write them).
COMPANION = {
    "app.js": "var tracker = {id: 42};\n",
    "style.css": "body { margin: 0 }\n",
    "filelist.xml": '<xml xmlns:o="urn:schemas-microsoft-com:office:office"></xml>\n',
    "nested/more.js": "function f() {}\n",
}


def _saved_pages(folder: Path) -> None:
    (folder / "Report.HTM").write_text(PAGE)  # Windows: the page's case need not match
    (folder / "Bericht.html").write_text(PAGE)  # German Word: "-Dateien"
    for name, companion in (("Report_files", COMPANION), ("Bericht-Dateien", COMPANION)):
        for member, text in companion.items():
            path = folder / name / member
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    # A folder named like one, with no page beside it: a user's own folder, read.
    (folder / "project_files").mkdir()
    (folder / "project_files" / "notes.md").write_text("# Notes\n\nKept.\n")


def test_a_saved_web_pages_folder_is_skipped_once_naming_its_page(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    (raw / "site").mkdir(parents=True)
    _saved_pages(raw / "site")

    scan = scan_raw_root(raw)

    assert scan.keys == ["site/Bericht.html", "site/Report.HTM", "site/project_files/notes.md"]
    skipped = {problem.name: problem.reason for problem in scan.skipped}
    assert set(skipped) == {"site/Report_files/", "site/Bericht-Dateien/"}
    assert "saved web page 'Report.htm'" in skipped["site/Report_files/"]
    assert "saved web page 'Bericht.html'" in skipped["site/Bericht-Dateien/"]
    assert not scan.refused


def test_a_saved_web_page_in_a_zip_is_read_without_its_folder(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    page_folder = tmp_path / "unzipped"
    page_folder.mkdir()
    _saved_pages(page_folder)
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        for path in sorted(page_folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"pages/{path.relative_to(page_folder).as_posix()}")
    (raw / "pages.zip").write_bytes(packed.getvalue())

    scan = scan_raw_root(raw)

    assert scan.keys == [
        "pages.zip",
        "pages.zip/.members/pages/Bericht.html",
        "pages.zip/.members/pages/Report.HTM",
        "pages.zip/.members/pages/project_files/notes.md",
    ]
    skipped = {problem.name: problem.reason for problem in scan.skipped}
    assert set(skipped) == {
        "pages.zip/.members/pages/Report_files/",
        "pages.zip/.members/pages/Bericht-Dateien/",
    }
    assert "saved web page 'pages/Report.htm'" in skipped["pages.zip/.members/pages/Report_files/"]


def test_the_folders_are_read_as_any_folder_when_the_settings_say_so(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    _saved_pages(raw)
    scan = scan_raw_root(raw, DocumentsSettings(skip_saved_page_folders=False))
    assert "Report_files/app.js" in scan.keys
    assert "Bericht-Dateien/nested/more.js" in scan.keys
    assert not any("saved web page" in problem.reason for problem in scan.skipped)
