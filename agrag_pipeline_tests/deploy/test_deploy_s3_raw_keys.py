"""Reads from a raw root on object storage never leave it either: an object store has no
symlinks, so the promise is that a key names exactly one object under the root's prefix (a
real S3 server, SeaweedFS on loopback)."""

from __future__ import annotations

from pathlib import Path

import pytest
import s3fs

from agrag_pipeline.parsing.errors import DocumentError
from agrag_pipeline.pipeline import snapshot_document
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline.storage import Warehouse

MARKER = b"OUTSIDE-THE-PREFIX-3c9e41"
#: A valid source key that fsspec would read as a chain of two URLs (``<root>/x`` and a file).
CHAINED = "x::file:/etc/passwd.md"


def test_an_object_key_names_exactly_one_object_under_the_root(
    bucket_uri: str, tmp_path: Path
) -> None:
    raw_uri = f"{bucket_uri}/raw"
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    base = raw_uri.removeprefix("s3://")
    fs.pipe_file(f"{base}/x", b"# Another object\n\nnot the one the key names\n")
    fs.pipe_file(f"{base}/{CHAINED}", b"# Chained\n\nthe object the key names\n")
    fs.pipe_file(f"{bucket_uri.removeprefix('s3://')}/secret.md", b"# Secret\n\n" + MARKER)
    assert CHAINED in scan_raw_root(Path(raw_uri)).keys

    warehouse = Warehouse(str(tmp_path / "warehouse"))
    document = snapshot_document(warehouse, Path(raw_uri), CHAINED).document
    assert document.id is not None
    stored = warehouse.get_raw(document.id, document.content_hash)
    assert stored == b"# Chained\n\nthe object the key names\n"

    for key in ("../secret.md", "sub/../../secret.md", "/secret.md"):
        with pytest.raises(DocumentError, match="refused"):
            snapshot_document(warehouse, Path(raw_uri), key)
    assert not any(
        p.is_file() and MARKER in p.read_bytes() for p in (tmp_path / "warehouse").rglob("*")
    )


def test_a_saved_web_pages_folder_in_a_bucket_is_skipped_once_as_on_disk(bucket_uri: str) -> None:
    # A bucket lists no folders: the page and its folder are found among the keys.
    raw_uri = f"{bucket_uri}/pages"
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    base = raw_uri.removeprefix("s3://")
    fs.pipe_file(
        f"{base}/site/Report.HTM", b"<html><body><h1>Report</h1><p>Text.</p></body></html>"
    )
    fs.pipe_file(f"{base}/site/Report_files/app.js", b"var tracker = 1;\n")
    fs.pipe_file(f"{base}/site/Report_files/img/logo.svg", b"<svg><title>Logo</title></svg>")
    fs.pipe_file(f"{base}/site/project_files/notes.md", b"# Notes\n\nKept.\n")

    scan = scan_raw_root(Path(raw_uri))

    assert scan.keys == ["site/Report.HTM", "site/project_files/notes.md"]
    assert [(p.name, "saved web page 'site/Report.htm'" in p.reason) for p in scan.skipped] == [
        ("site/Report_files/", True)
    ]
