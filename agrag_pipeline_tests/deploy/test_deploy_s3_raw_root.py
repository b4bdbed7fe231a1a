"""A raw root on ``s3://`` against a real S3 server (SeaweedFS on loopback): scanned by listing,
never downloading an unchanged object, and snapshotted through fsspec by the real steps."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import s3fs

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.freshness import plan_changes
from agrag_pipeline.pipeline import run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, load_settings
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline.storage.raw_remote import ObjectSourceFile, object_root_uri, scan_object_root
from agrag_pipeline_tests.deploy.seaweed import BUCKET
from agrag_pipeline_tests.deploy.test_deploy_s3_warehouse import DOCS, _contents, _raw_root

EXTRA = {
    ".DS_Store": b"\x00\x00\x00\x01Bud1",  # hidden: skipped silently
    "blob.bin": b"\x00\x01\x02\x03 not a document",  # no parser reads it: skipped, named
    "bad...name.md": b"# dots",  # cannot be a partition key: refused, named
}


class CountingS3(s3fs.S3FileSystem):
    """The real S3 client, counting the object reads (GETs) it makes."""

    gets: list[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gets = []

    async def _cat_file(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self.gets.append(path)
        return await super()._cat_file(path, *args, **kwargs)


def _fill(uri: str) -> s3fs.S3FileSystem:
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    base = uri.removeprefix("s3://")
    for name, text in DOCS.items():
        fs.pipe_file(f"{base}/{name}", text.encode())
    for name, data in EXTRA.items():
        fs.pipe_file(f"{base}/{name}", data)
    return fs


def test_a_bucket_is_scanned_by_listing_and_unchanged_objects_are_never_downloaded(
    bucket_uri: str,
) -> None:
    raw_uri = f"{bucket_uri}/raw"
    _fill(raw_uri)
    fs = CountingS3(skip_instance_cache=True)

    first = scan_object_root(raw_uri, fs=fs)
    assert first.keys == sorted(DOCS)
    by_key = {f.source_key: f for f in first.files}
    assert by_key["alpha.md"].media_type == "text/markdown"
    assert by_key["guide/beta.html"].media_type == "text/html"
    assert by_key["alpha.md"].size == len(DOCS["alpha.md"].encode())
    assert all(isinstance(f, ObjectSourceFile) and len(f.etag) == 32 for f in first.files)
    assert [p.name for p in first.skipped] == ["blob.bin"]
    assert "no parser reads" in first.skipped[0].reason
    assert [p.name for p in first.refused] == ["bad...name.md"]
    assert "..." in first.refused[0].reason
    assert len(fs.gets) == 3  # one ranged read of each new candidate (the hidden one: none)

    fs.gets.clear()
    again = scan_object_root(raw_uri, fs=fs)
    assert again.files == first.files and fs.gets == []  # listed, nothing downloaded

    # Overwritten with other bytes of the same size, within the same second: still noticed.
    edited = DOCS["alpha.md"].replace("ownership", "ownershIP")
    fs.pipe_file(f"{raw_uri.removeprefix('s3://')}/alpha.md", edited.encode())
    third = {f.source_key: f for f in scan_object_root(raw_uri, fs=fs).files}
    assert fs.gets == [f"{raw_uri.removeprefix('s3://')}/alpha.md"]
    assert third["alpha.md"].size == by_key["alpha.md"].size
    assert third["alpha.md"].etag != by_key["alpha.md"].etag
    assert third["alpha.md"].mtime_ns != by_key["alpha.md"].mtime_ns


def test_the_change_plan_over_a_bucket_hashes_only_new_objects(bucket_uri: str) -> None:
    raw_uri = f"{bucket_uri}/raw"
    _fill(raw_uri)
    as_path = Path(raw_uri)  # how Runtime holds a raw root: a Path squeezes s3:// to s3:/
    assert object_root_uri(as_path) == raw_uri
    plan = plan_changes(as_path, None, registered=[])
    assert sorted(plan.new) == sorted(DOCS)
    assert {k: s.content_hash for k, s in plan.seen.items()} == {
        k: content_hash(v.encode()) for k, v in DOCS.items()
    }
    assert [p.name for p in plan.refused] == ["bad...name.md"]
    assert scan_raw_root(as_path).keys == sorted(DOCS)  # the scan entry point dispatches


def test_documents_in_a_bucket_go_through_the_real_steps_like_local_files(
    s3_env: Any, tmp_path: Path
) -> None:
    bucket = f"s3://{BUCKET}/{secrets.token_hex(6)}"
    _fill(f"{bucket}/raw")
    local_raw = _raw_root(tmp_path)
    remote = Runtime.from_files(
        DEFAULT_SETTINGS_PATH, f"{bucket}/raw", f"{bucket}/warehouse", tmp_path / "c1"
    )
    local = Runtime(
        load_settings(DEFAULT_SETTINGS_PATH), local_raw, str(tmp_path / "wh"), tmp_path / "c2"
    )
    for key in scan_raw_root(remote.raw_root).keys:
        run_document(remote, key, embed=False)
        run_document(local, key, embed=False)
    stored = _contents(remote.warehouse.fs, f"{bucket.removeprefix('s3://')}/warehouse")
    assert stored == _contents(local.warehouse.fs, str(tmp_path / "wh"))
    assert any(name.startswith("chunks/") for name in stored)
    raw_copies = [v for name, v in stored.items() if name.startswith("raw/")]
    assert sorted(raw_copies) == sorted(text.encode() for text in DOCS.values())  # type: ignore[type-var]
