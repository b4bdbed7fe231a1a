"""Source keys and change detection over the raw root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.freshness import contiguous_runs, plan_changes
from agrag_pipeline.sources import SourceKeyError, scan_raw_root, validate_source_key


def test_source_keys_are_posix_paths_relative_to_the_raw_root(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "doc.md").write_text("# x")
    (tmp_path / "top.txt").write_text("x")
    (tmp_path / ".hidden.md").write_text("x")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x")
    scan = scan_raw_root(tmp_path)
    assert scan.keys == ["a/b/doc.md", "top.txt"]
    assert scan.refused == [] and scan.skipped == []
    assert [f.media_type for f in scan.files] == ["text/markdown", "text/plain"]


@pytest.mark.parametrize("key", ["bad\nname.md", "tab\there.md", "so...md", "bell\a.md"])
def test_keys_dagster_cannot_hold_are_refused_naming_the_file(key: str) -> None:
    with pytest.raises(SourceKeyError, match="cannot hold"):
        validate_source_key(key)


def test_a_file_with_a_control_character_is_reported_not_renamed(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("x")
    (tmp_path / "bad\nname.md").write_text("x")
    scan = scan_raw_root(tmp_path)
    assert scan.keys == ["ok.md"]
    assert [(p.name, p.reason) for p in scan.refused] == [
        (
            "bad\\nname.md",
            "the path contains a control character, which a Dagster partition key cannot hold",
        )
    ]
    assert sorted(os.listdir(tmp_path)) == ["bad\nname.md", "ok.md"]  # never renamed


def test_plan_finds_new_changed_deleted_and_unchanged(tmp_path: Path) -> None:
    for name in ("keep.md", "edit.md", "gone.md"):
        (tmp_path / name).write_text(f"# {name}")
    first = plan_changes(tmp_path, None, [])
    assert first.new == ["edit.md", "gone.md", "keep.md"]
    registered = first.new
    (tmp_path / "edit.md").write_text("# edited")
    (tmp_path / "gone.md").unlink()
    (tmp_path / "fresh.md").write_text("# new")
    second = plan_changes(tmp_path, first.cursor(), registered)
    assert second.new == ["fresh.md"]
    assert second.changed == ["edit.md"]
    assert second.deleted == ["gone.md"]
    assert second.unchanged == 1
    assert second.to_run == ["edit.md", "fresh.md"]


def test_a_touch_without_a_content_change_is_not_a_change(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text("# same")
    first = plan_changes(tmp_path, None, [])
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    second = plan_changes(tmp_path, first.cursor(), ["doc.md"])
    assert second.to_run == [] and second.unchanged == 1


def test_unchanged_stat_means_the_file_is_not_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agrag_pipeline.freshness as freshness

    path = tmp_path / "doc.md"
    path.write_text("# same")
    first = plan_changes(tmp_path, None, [])
    hashed: list[Path] = []
    real_hash_file = freshness.hash_file

    def recording_hash_file(p: Path, raw_root: Path) -> str:
        hashed.append(p)
        return real_hash_file(p, raw_root)

    monkeypatch.setattr(freshness, "hash_file", recording_hash_file)
    second = plan_changes(tmp_path, first.cursor(), ["doc.md"])
    assert second.unchanged == 1 and hashed == []
    path.write_text("# different")
    third = plan_changes(tmp_path, first.cursor(), ["doc.md"])
    assert third.changed == ["doc.md"] and hashed == [path]


def test_a_quiet_scan_opens_no_file_whose_stat_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sensor's scan against its last state reads no unchanged file to detect its type
    (at 100,000 documents that was most of a quiet tick); a changed or new one is read."""
    import agrag_pipeline.sources as sources

    for name in ("a.md", "b.md", "c.md"):
        (tmp_path / name).write_text(f"# {name}")
    first = plan_changes(tmp_path, None, [])
    opened: list[str] = []
    real_read_head = sources.read_head

    def recording_read_head(path: Path | str, limit: int, **kw: int | None) -> object:
        opened.append(Path(path).name)
        return real_read_head(path, limit, **kw)

    monkeypatch.setattr(sources, "read_head", recording_read_head)
    quiet = plan_changes(tmp_path, first.cursor(), ["a.md", "b.md", "c.md"])
    assert quiet.unchanged == 3 and opened == []
    (tmp_path / "b.md").write_text("# b, edited")
    (tmp_path / "d.md").write_text("# d")
    busy = plan_changes(tmp_path, first.cursor(), ["a.md", "b.md", "c.md"])
    assert busy.changed == ["b.md"] and busy.new == ["d.md"]
    assert sorted(set(opened)) == ["b.md", "d.md"]


def test_a_registered_document_the_cursor_never_saw_is_compared_with_the_warehouse(
    tmp_path: Path,
) -> None:
    (tmp_path / "doc.md").write_text("# v1")
    stored = {"doc.md": content_hash(b"# v1")}
    plan = plan_changes(tmp_path, None, ["doc.md"], stored.get)
    assert plan.to_run == [] and plan.unchanged == 1
    (tmp_path / "doc.md").write_text("# v2")
    assert plan_changes(tmp_path, None, ["doc.md"], stored.get).changed == ["doc.md"]


def test_contiguous_runs_group_neighbours_and_respect_the_size_limit() -> None:
    ordered = ["a", "b", "c", "d", "e", "f"]
    assert contiguous_runs(ordered, ["a", "b", "d", "e", "f"], 2) == [["a", "b"], ["d", "e"], ["f"]]
    assert contiguous_runs(ordered, [], 3) == []
