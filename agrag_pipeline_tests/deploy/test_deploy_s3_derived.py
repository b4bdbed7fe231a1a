"""Attachments and archive members of a raw root on object storage are documents too: listed
beside their object and read by extracting them from it again (a real S3 server, SeaweedFS on
loopback)."""

from __future__ import annotations

from pathlib import Path

import s3fs

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.freshness import plan_changes
from agrag_pipeline.pipeline import snapshot_document
from agrag_pipeline.storage import Warehouse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"


def test_attachments_and_members_in_a_bucket_are_listed_read_and_deleted_with_their_object(
    bucket_uri: str, tmp_path: Path
) -> None:
    raw_uri = f"{bucket_uri}/raw"
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    base = raw_uri.removeprefix("s3://")
    fs.pipe_file(f"{base}/mail/a.msg", (FIXTURES / "fake-email-attachment.msg").read_bytes())
    fs.pipe_file(f"{base}/simple.zip", (FIXTURES / "simple.zip").read_bytes())
    plan = plan_changes(Path(raw_uri), None, [])
    attachment = "mail/a.msg/.attachments/1-fake-attachment.txt"
    member = "simple.zip/.members/stanley-cups.csv"
    assert plan.new == [
        "mail/a.msg",
        attachment,
        "simple.zip",
        "simple.zip/.members/ideas-page.html",
        member,
    ]
    assert plan.seen[attachment].content_hash == content_hash(b"Hey this is a fake attachment!")

    warehouse = Warehouse(str(tmp_path / "warehouse"))
    document = snapshot_document(warehouse, Path(raw_uri), attachment).document
    assert document.id is not None
    assert warehouse.get_raw(document.id, document.content_hash) == (
        b"Hey this is a fake attachment!"
    )
    assert snapshot_document(warehouse, Path(raw_uri), member).document.media_type == "text/csv"

    fs.rm_file(f"{base}/mail/a.msg")
    after = plan_changes(Path(raw_uri), plan.cursor(), plan.new)
    assert after.deleted == ["mail/a.msg", attachment]
