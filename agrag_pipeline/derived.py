"""Derived documents: an e-mail's attachments and an archive's members, each a document of its
own (its own source key, partition, parser and content hash), traceable to its container; a
mailbox's messages likewise (``parsing.mbox``).

Keys (``derived_keys``): ``mail/a.eml/.attachments/2-report.pdf``,
``docs/bundle.zip/.members/q3/report.pdf``. A child's container is in its key, so it changes and
disappears with its container: the scan lists a container's children beside it
(``expand_containers``), a child no longer listed is "absent" and its outputs are removed like
a deleted file's, and a child of a container the scan could not read is kept (unknown, not
gone).

A child's bytes are never stored apart from its container: ``read_derived`` opens the
container (through ``raw_files``, never outside the raw root; or the bucket's object) and
extracts the child again, step by step for nested children. A member's name is only ever a
lookup key in the archive, never a path on disk, so a ``../`` member cannot write or read
anywhere (and is refused outright, naming it).

Budgets, so a hostile container costs a bounded amount: at most ``MAX_DEPTH`` containers deep
(a message attached to a message attached to a message...), at most ``MAX_CHILDREN`` children
per container, each child at most the parser's size limit, and at most ``MAX_EXTRACTED_BYTES``
extracted from one file in all; past a budget the rest is skipped with the reason, naming
the container. MIME and zip bombs are refused by the readers (``parsing.mail``,
``parsing.archive``) before anything is extracted.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agrag_pipeline.derived_keys import (
    ATTACHMENTS,
    MEMBERS,
    Step,
    attachment_key,
    depth,
    is_derived,
    is_hidden_member,
    member_key,
    member_problem,
    safe_name,
    split_derived_key,
)
from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.source_keys import (
    HEAD_BYTES,
    SavedPageFolders,
    ScanProblem,
    ScanResult,
    SourceFile,
    default_detect,
    display_name,
    source_key_problem,
    validate_source_key,
)

if TYPE_CHECKING:
    from agrag_pipeline.settings import DocumentsSettings

#: Containers nest at most this deep: a child at a greater depth is not read. Four, so that a
#: mailbox's message keeps what a saved ``.eml`` has: a forwarded message's attachments.
MAX_DEPTH = 4
#: At most this many children are read from one container (a mailbox: ``mbox.MAX_MESSAGES``).
MAX_CHILDREN = 1000
#: At most this many bytes are extracted from one file, its nested containers included.
MAX_EXTRACTED_BYTES = 256 * 1024 * 1024
#: Media types whose children are documents.
CONTAINER_TYPES = frozenset(
    {
        "message/rfc822",
        "application/vnd.ms-outlook",
        "message/x-emlx",
        "application/zip",
        # tar archives, compressed or not, and single gzip/bzip2/xz files (``tararchive``)
        "application/x-tar",
        "application/gzip",
        "application/x-bzip2",
        "application/x-xz",
        # 7-Zip and RAR archives, zstd-compressed files (``libarchive_reader``)
        "application/x-7z-compressed",
        "application/vnd.rar",
        "application/zstd",
        # a Unix mailbox: its messages (``parsing.mbox``)
        "application/mbox",
    }
)
_ZIP = "application/zip"
_MBOX = "application/mbox"
_MESSAGES = frozenset({"message/rfc822", "application/vnd.ms-outlook", "message/x-emlx"})

Detect = Callable[[str, bytes], tuple[str | None, str | None]]


@dataclass(frozen=True, slots=True)
class DerivedSourceFile(SourceFile):
    """A document inside another. ``path`` is the real file holding it (the outermost
    container, ``held_in``), ``mtime_ns`` that file's, ``size`` the child's own;
    ``content_hash`` is the child's, known when the scan extracted it (None when carried
    over unchanged)."""

    container: str = ""
    content_hash: str | None = None


@dataclass
class _Expansion:
    files: list[DerivedSourceFile] = field(default_factory=list)
    skipped: list[ScanProblem] = field(default_factory=list)
    refused: list[ScanProblem] = field(default_factory=list)


#: Children per (raw root, container key, size, mtime_ns): a sensor's repeated ticks over an
#: unchanged container read it once per process.
_EXPANDED: OrderedDict[tuple[str, str, int, int, str], _Expansion] = OrderedDict()
_MAX_REMEMBERED = 10_000


def expand_containers(
    result: ScanResult,
    raw_root: Path,
    documents: DocumentsSettings | None = None,
    detect: Detect | None = None,
    known: Mapping[str, tuple[int, int]] | None = None,
) -> None:
    """Add the children of every container in ``result.files`` to ``result`` (in place).

    A container the scan did not open (unchanged since the last scan, ``known``) keeps the
    children the last scan found; one that cannot be read now keeps its children as unknown
    (``ScanResult.is_unknown``), never as deleted.
    """
    if detect is None:
        detect = default_detect()
    added: list[SourceFile] = []
    for f in list(result.files):
        media_type = f.media_type or detect(f.source_key, b"")[0]  # unopened: by extension
        if media_type not in CONTAINER_TYPES:
            continue
        memo = (str(raw_root), f.source_key, f.size, f.mtime_ns, _globs(documents))
        expansion = _EXPANDED.get(memo)
        if expansion is None and f.media_type is None and known is not None:
            carried = _carried(f, known)
            if carried is not None:
                added += carried
                continue
        if expansion is None:
            try:
                raw = _read_container(raw_root, f)
            except OSError as exc:
                result.unreadable_folders.append(f.source_key + "/")
                result.refused.append(
                    ScanProblem(
                        display_name(f.source_key),
                        f"its attachments or members cannot be listed: {exc}",
                    )
                )
                continue
            if f.media_type is None:
                media_type = detect(f.source_key, raw)[0]
                if media_type not in CONTAINER_TYPES:
                    continue
            expansion = list_children(f, raw, media_type, documents, detect)
            _EXPANDED[memo] = expansion
            while len(_EXPANDED) > _MAX_REMEMBERED:
                _EXPANDED.popitem(last=False)
        added += expansion.files
        result.skipped += expansion.skipped
        result.refused += expansion.refused
    result.files += added
    result.files.sort(key=lambda f: f.source_key)


def _globs(documents: DocumentsSettings | None) -> str:
    """The include/exclude globs the children were judged by (part of the memo's key)."""
    return "" if documents is None else repr((documents.include, documents.exclude))


def _carried(
    container: SourceFile, known: Mapping[str, tuple[int, int]]
) -> list[DerivedSourceFile] | None:
    """The children the last scan found in an unchanged container (None: it found none, so
    the container is read, as a container new to the cursor is)."""
    prefixes = (f"{container.source_key}/{ATTACHMENTS}/", f"{container.source_key}/{MEMBERS}/")
    children = [
        DerivedSourceFile(
            key,
            container.root,
            size,
            mtime_ns,
            held_in=container.file_key,
            container=_parent(key),
        )
        for key, (size, mtime_ns) in known.items()
        if key.startswith(prefixes) and mtime_ns == container.mtime_ns
    ]
    return children or None


def _parent(key: str) -> str:
    from agrag_pipeline.derived_keys import container_of

    return container_of(key) or ""


def _read_container(raw_root: Path, f: SourceFile) -> bytes:
    from agrag_pipeline.parsing import DEFAULT_MAX_BYTES
    from agrag_pipeline.raw_files import read_regular_file
    from agrag_pipeline.storage.raw_remote import ObjectSourceFile

    if isinstance(f, ObjectSourceFile):
        return f.read(DEFAULT_MAX_BYTES)
    return read_regular_file(f.path, DEFAULT_MAX_BYTES, root=raw_root)


def list_children(
    container: SourceFile,
    raw: bytes,
    media_type: str,
    documents: DocumentsSettings | None = None,
    detect: Detect | None = None,
) -> _Expansion:
    """Every child document of ``container`` (whose bytes are ``raw``), nested ones included,
    within the budgets; and each child that is not one, with the reason.

    Members are extracted one at a time, so a budget that runs out stops the reading."""
    from agrag_pipeline.parsing.errors import DocumentError

    if detect is None:
        detect = default_detect()
    skip_saved_pages = documents is None or documents.skip_saved_page_folders
    out = _Expansion()
    budget = [MAX_EXTRACTED_BYTES]
    pending: list[tuple[str, bytes, str]] = [(container.source_key, raw, media_type)]
    while pending:
        key, data, kind = pending.pop()
        if depth(key) + 1 > MAX_DEPTH:
            out.skipped.append(
                ScanProblem(
                    display_name(key),
                    f"its attachments or members lie {depth(key) + 1} containers deep (limit "
                    f"{MAX_DEPTH}): not read",
                    key,
                )
            )
            continue
        found: list[tuple[str, bytes, str]] = []
        limit = _max_children(kind)
        try:
            children = _children(key, data, kind, skip_saved_pages)
            for number, (child_key, child, problem) in enumerate(children, 1):
                if number > limit:
                    out.skipped.append(
                        ScanProblem(
                            display_name(key),
                            f"holds more than {limit:,} attachments or members; the "
                            "rest are not read",
                            key,
                        )
                    )
                    break
                nested = _child(
                    out, container, key, child_key, child, problem, budget, documents, detect
                )
                if nested is not None:
                    found.append(nested)
                if budget[0] < 0:
                    break  # said once by ``_child``; nothing more is extracted
        except DocumentError as exc:
            out.refused.append(
                ScanProblem(
                    display_name(key), f"its attachments or members are not read: {exc.problem}"
                )
            )
            continue
        pending.extend(reversed(found))
    return out


def _max_children(media_type: str) -> int:
    if media_type == _MBOX:
        from agrag_pipeline.parsing.mbox import MAX_MESSAGES

        return MAX_MESSAGES
    return MAX_CHILDREN


def _child(
    out: _Expansion,
    container: SourceFile,
    parent: str,
    child_key: str,
    child: bytes | None,
    problem: str | None,
    budget: list[int],
    documents: DocumentsSettings | None,
    detect: Detect,
) -> tuple[str, bytes, str] | None:
    """Record one child in ``out``; returns it when it is a container itself (to be read)."""
    from agrag_pipeline.parsing import DEFAULT_MAX_BYTES

    if problem is not None or child is None:
        out.skipped.append(ScanProblem(display_name(child_key), problem or "no data"))
        return None
    bad_key = source_key_problem(child_key)
    if bad_key is not None:
        out.refused.append(ScanProblem(display_name(child_key), bad_key))
        return None
    if len(child) > DEFAULT_MAX_BYTES:
        out.skipped.append(
            ScanProblem(
                display_name(child_key),
                f"{len(child):,} bytes is over the limit of {DEFAULT_MAX_BYTES:,} bytes",
                child_key,
            )
        )
        return None
    budget[0] -= len(child)
    if budget[0] < 0:
        out.skipped.append(
            ScanProblem(
                display_name(parent),
                f"more than {MAX_EXTRACTED_BYTES:,} bytes were extracted from "
                f"{display_name(container.source_key)}: its other attachments or members, from "
                f"{display_name(child_key)} on, are not read",
                parent,
            )
        )
        return None
    reason = documents.skip_reason(child_key) if documents is not None else None
    if reason:
        out.skipped.append(ScanProblem(display_name(child_key), reason, child_key))
        return None
    child_type, why = detect(child_key, child)
    if child_type is None:
        out.skipped.append(
            ScanProblem(display_name(child_key), why or "no parser reads it", child_key)
        )
        return None
    out.files.append(
        DerivedSourceFile(
            child_key,
            container.root,
            len(child),
            container.mtime_ns,
            child_type,
            held_in=container.file_key,
            container=parent,
            content_hash=content_hash(child),
        )
    )
    return (child_key, child, child_type) if child_type in CONTAINER_TYPES else None


def _children(
    key: str, raw: bytes, media_type: str, skip_saved_pages: bool = True
) -> Iterator[tuple[str, bytes | None, str | None]]:
    """(child key, bytes or None, why not read) for each child of one container, in order."""
    if media_type in _MESSAGES:
        from agrag_pipeline.parsing.mail import read_message

        for a in read_message(raw, key, media_type).attachments:
            name = safe_name(a.file_name(), f"attachment-{a.index}")
            note = None if a.data is not None else f"not read: {a.note}"
            yield attachment_key(key, a.index, name), a.data, note
        return
    if media_type == _MBOX:
        yield from _messages(key, raw)
        return
    if media_type != _ZIP:
        yield from _unpacked_members(key, raw, media_type)
        return
    yield from _members(key, raw, skip_saved_pages)


def _named(
    key: str,
    name: str,
    seen: set[str],
    noun: str = "member",
    second: str = "a second member of the same name: not read",
) -> tuple[str, str | None] | None:
    """The key of the member ``name`` of the container ``key`` and why it is not read (None
    when it is read), or None for a hidden member, left out; the one naming rule of zip, tar,
    7-Zip/RAR and mailbox members. ``seen`` is updated."""
    child_key = member_key(key, name)
    if child_key is None:  # checked first: '..' would pass for a hidden name
        return f"{key}/{MEMBERS}/{name}", f"{noun} {name!r}: {member_problem(name)}"
    if is_hidden_member(name):
        return None
    if name in seen:
        return child_key, second
    seen.add(name)
    return child_key, None


def _messages(key: str, raw: bytes) -> Iterator[tuple[str, bytes | None, str | None]]:
    """Each message of the mailbox ``raw``, as the ``.eml`` member its Message-ID names."""
    from agrag_pipeline.parsing.mbox import messages

    seen: set[str] = set()
    second = "a second message with the same Message-ID: not read"
    for name, data in messages(raw, key):
        named = _named(key, name, seen, "message", second)
        if named is not None:
            child_key, why_not = named
            if why_not is None:
                yield child_key, data, None
            else:
                yield child_key, None, why_not


def _members(
    key: str, raw: bytes, skip_saved_pages: bool = True
) -> Iterator[tuple[str, bytes | None, str | None]]:
    """Each member of the zip ``raw``, read when its turn comes (bomb checks first); a saved
    web page's folder once, as skipped (``skip_saved_pages``: ``DocumentsSettings``)."""
    from agrag_pipeline.parsing import DEFAULT_MAX_BYTES
    from agrag_pipeline.parsing.archive import open_zip, read_member
    from agrag_pipeline.parsing.errors import DocumentError

    seen: set[str] = set()
    with open_zip(raw, key, members_may_fail=True) as archive:
        saved_pages = SavedPageFolders(archive.namelist(), skip=skip_saved_pages)
        for info in archive.infolist():
            named = None if info.is_dir() else _named(key, info.filename, seen)
            if named is None:
                continue
            saved_page = saved_pages.skipped(info.filename)
            if saved_page is not None:  # as the scan skips it on disk: once, as a folder
                folder, reason = saved_page
                if reason is not None:
                    yield f"{key}/{MEMBERS}/{folder}/", None, reason
                continue
            child_key, why_not = named
            if why_not is not None:
                yield child_key, None, why_not
                continue
            try:
                data = read_member(archive, info.filename, key, max_bytes=DEFAULT_MAX_BYTES)
            except DocumentError as exc:
                yield child_key, None, exc.problem
                continue
            yield child_key, data, None


def _unpacked_members(
    key: str, raw: bytes, media_type: str
) -> Iterator[tuple[str, bytes | None, str | None]]:
    """Each member of a tar, 7-Zip or RAR archive or single compressed file (decompressed
    within budget)."""
    from agrag_pipeline.parsing import libarchive_reader, tararchive

    members = (
        libarchive_reader.members
        if media_type in libarchive_reader.MEDIA_TYPES
        else tararchive.members
    )
    seen: set[str] = set()
    for member in members(raw, media_type, key):
        if not member.name:  # a note on the container: cut short, or too many entries
            yield key, None, member.problem
            continue
        named = _named(key, member.name, seen)
        if named is not None:
            child_key, why_not = named
            if why_not is None:
                yield child_key, member.data, member.problem
            else:
                yield child_key, None, why_not


def read_derived(raw_root: Path, source_key: str, max_bytes: int | None = None) -> bytes:
    """The bytes of the derived document ``source_key``, extracted from its container now.

    Raises:
        DocumentError: the container no longer holds it, or it is nested past ``MAX_DEPTH``,
            or a container is not readable as one (each naming ``source_key``).
        OSError: the container file cannot be read (as ``raw_files.read_regular_file``).
    """
    from agrag_pipeline.parsing import DEFAULT_MAX_BYTES
    from agrag_pipeline.parsing.errors import DocumentError, DocumentTooLargeError
    from agrag_pipeline.raw_files import read_regular_file, resolve_in_root
    from agrag_pipeline.storage.raw_remote import object_root_uri, object_uri, read_object

    validate_source_key(source_key)  # no '..', no control characters: SourceKeyError
    split = split_derived_key(source_key)
    if split is None:
        raise ValueError(f"{source_key!r} is not a derived document's key")
    container_key, steps = split
    if len(steps) > MAX_DEPTH:
        raise DocumentError(
            source_key, f"nested {len(steps)} containers deep (limit {MAX_DEPTH}): not read"
        )
    remote = object_root_uri(raw_root)
    if remote is not None:
        raw = read_object(object_uri(remote, container_key), DEFAULT_MAX_BYTES)
    else:
        path = resolve_in_root(raw_root, container_key)
        raw = read_regular_file(path, DEFAULT_MAX_BYTES, root=raw_root)
    detect = default_detect()
    key = container_key
    for step in steps:
        # As the scan detected it: the file by its head, a nested container by its bytes.
        media_type = detect(key, raw[:HEAD_BYTES] if key == container_key else raw)[0]
        if media_type not in CONTAINER_TYPES:
            raise DocumentError(source_key, f"{key} is not an e-mail or an archive any more")
        raw, key = _extract(key, raw, media_type, step, source_key)
    limit = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if len(raw) > limit:
        raise DocumentTooLargeError(
            source_key, f"{len(raw):,} bytes is over the limit of {limit:,}"
        )
    return raw


def _extract(key: str, raw: bytes, media_type: str, step: Step, wanted: str) -> tuple[bytes, str]:
    """One step into a container: the child's bytes and key."""
    from agrag_pipeline.parsing.archive import open_zip, read_member
    from agrag_pipeline.parsing.errors import DocumentError

    if step.kind == ATTACHMENTS:
        if media_type not in _MESSAGES:
            raise DocumentError(wanted, f"{key} is not an e-mail, so it has no attachments")
        from agrag_pipeline.parsing.mail import read_message

        attachments = read_message(raw, key, media_type).attachments
        if step.index <= len(attachments):
            a = attachments[step.index - 1]
            name = safe_name(a.file_name(), f"attachment-{a.index}")
            if name == step.name and a.data is not None:
                return a.data, attachment_key(key, a.index, name)
        raise DocumentError(
            wanted, f"{key} no longer holds attachment {step.index} named {step.name!r}"
        )
    if media_type in _MESSAGES:
        raise DocumentError(wanted, f"{key} is an e-mail, not an archive")
    problem = member_problem(step.name)
    if problem is not None or is_hidden_member(step.name):
        raise DocumentError(wanted, f"member {step.name!r}: {problem or 'hidden'}")
    if media_type == _MBOX:
        from agrag_pipeline.parsing.mbox import message

        found_message = message(raw, step.name, key)
        if found_message is None:
            raise DocumentError(wanted, f"{key} no longer holds message {step.name!r}")
        return found_message, f"{key}/{MEMBERS}/{step.name}"
    if media_type != _ZIP:
        wanted_key = f"{key}/{MEMBERS}/{step.name}"
        for found_key, found, why_not in _unpacked_members(key, raw, media_type):
            if found_key == wanted_key:
                if found is None:
                    raise DocumentError(wanted, f"member {step.name!r}: {why_not}")
                return found, found_key
        raise DocumentError(wanted, f"{key} no longer holds member {step.name!r}")
    with open_zip(raw, key, members_may_fail=True) as archive:
        try:
            data = read_member(archive, step.name, key)
        except KeyError:
            raise DocumentError(wanted, f"{key} no longer holds member {step.name!r}") from None
    return data, f"{key}/{MEMBERS}/{step.name}"


__all__ = [
    "CONTAINER_TYPES",
    "MAX_CHILDREN",
    "MAX_DEPTH",
    "MAX_EXTRACTED_BYTES",
    "DerivedSourceFile",
    "expand_containers",
    "is_derived",
    "list_children",
    "read_derived",
]
