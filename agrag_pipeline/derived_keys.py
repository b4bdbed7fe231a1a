"""Source keys of derived documents: an e-mail's attachments and an archive's members.

A document found inside another is a document of its own (``derived``); its source key is its
container's key, a *marker* component, then its place in the container:

- an attachment: ``<message key>/.attachments/<n>-<file name>``, ``n`` its 1-based position
  among the message's attachments (names repeat, or are missing), the name made safe
  (``mail/a.eml/.attachments/2-report.pdf``); a nameless part is named by its type
  (``3-attachment.pdf``, ``1-message.eml`` for an attached message);
- an archive member: ``<archive key>/.members/<member path>``
  (``docs/bundle.zip/.members/q3/report.pdf``).

Nesting repeats the rule (``a.eml/.attachments/1-fwd.eml/.attachments/1-b.pdf``).

An attachment's number is its position: a message edited to drop its first attachment gives
the later ones new keys (they are deleted and new, as renamed files are). A member's key is its
path in the archive, so it is stable while the archive changes around it.

Why a hidden marker component: both scans (local and object store) skip every key with a
component starting with ``.``, so no real file ever has such a key, and a derived key cannot
collide with a real path, not even in a bucket, where ``a.eml`` and ``a.eml/x`` can both be
objects. The keys stay readable in the UI, are deterministic (the same container bytes give
the same keys), and keep the child's own extension last, so detection and the ``documents:``
globs (``**/*.pdf``) read them as they read any file. A derived key passes
``validate_source_key`` like any other (it is a Dagster partition key): names are made safe
here, member paths that cannot be made keys are refused by the caller.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from agrag_pipeline.source_keys import source_key_problem

#: The marker component before an attachment's ``<n>-<name>``.
ATTACHMENTS = ".attachments"
#: The marker component before an archive member's path.
MEMBERS = ".members"
MARKERS = frozenset({ATTACHMENTS, MEMBERS})

#: Longest name kept of an attachment (the rest is cut before the extension).
MAX_NAME_CHARS = 120
_UNSAFE = re.compile(r"[\\/]|\.{3,}")
_ATTACHMENT_STEP = re.compile(r"(?P<index>[1-9][0-9]*)-(?P<name>.+)")


@dataclass(frozen=True)
class Step:
    """One step from a container into a child: ``kind`` is ``ATTACHMENTS`` (``index``, 1-based,
    and the safe ``name``) or ``MEMBERS`` (``name`` is the member's path)."""

    kind: str
    name: str
    index: int = 0


def is_derived(source_key: str) -> bool:
    return any(part in MARKERS for part in source_key.split("/"))


def split_derived_key(source_key: str) -> tuple[str, list[Step]] | None:
    """The outermost container's key and the steps into the child, or None for a plain key.

    Raises ``ValueError`` for a key with a marker that no derived key has (an attachment step
    without ``<n>-``, a marker with nothing after it)."""
    parts = source_key.split("/")
    first = next((i for i, part in enumerate(parts) if part in MARKERS), None)
    if first is None:
        return None
    if first == 0:
        raise ValueError(f"{source_key!r}: a derived key starts with its container's key")
    steps: list[Step] = []
    i = first
    while i < len(parts):
        marker = parts[i]
        following = next((j for j in range(i + 1, len(parts)) if parts[j] in MARKERS), len(parts))
        rest = parts[i + 1 : following]
        if not rest:
            raise ValueError(f"{source_key!r}: nothing follows {marker!r}")
        if marker == ATTACHMENTS:
            match = _ATTACHMENT_STEP.fullmatch(rest[0]) if len(rest) == 1 else None
            if match is None:
                raise ValueError(f"{source_key!r}: an attachment step is '<n>-<name>'")
            steps.append(Step(ATTACHMENTS, match["name"], int(match["index"])))
        else:
            steps.append(Step(MEMBERS, "/".join(rest)))
        i = following
    return "/".join(parts[:first]), steps


def container_of(source_key: str) -> str | None:
    """The key of the document ``source_key`` was found in (None for a plain key)."""
    parts = source_key.split("/")
    markers = [i for i, part in enumerate(parts) if part in MARKERS]
    return "/".join(parts[: markers[-1]]) if markers else None


def outermost_container(source_key: str) -> str | None:
    """The key of the real file holding ``source_key`` (None for a plain key)."""
    split = split_derived_key(source_key)
    return split[0] if split is not None else None


def depth(source_key: str) -> int:
    """How many containers deep ``source_key`` lies (0: a real file)."""
    return sum(part in MARKERS for part in source_key.split("/"))


def safe_name(name: str, fallback: str) -> str:
    """``name`` (an attachment's file name, as a sender wrote it) as one key component: its
    last path component, control characters, backslashes and ``...`` replaced by ``_``, no
    leading dot, at most ``MAX_NAME_CHARS``; ``fallback`` when nothing is left."""
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join("_" if unicodedata.category(ch) == "Cc" else ch for ch in name)
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    if not name or name in ("..", "."):
        name = fallback
    if len(name) > MAX_NAME_CHARS:
        stem, dot, ext = name.rpartition(".")
        if dot and 0 < len(ext) <= 16:
            name = stem[: MAX_NAME_CHARS - len(ext) - 1] + "." + ext
        else:
            name = name[:MAX_NAME_CHARS]
    return name


def attachment_key(container_key: str, index: int, name: str) -> str:
    """The key of the ``index``-th (1-based) attachment, named ``name`` (already safe)."""
    return f"{container_key}/{ATTACHMENTS}/{index}-{name}"


def member_key(container_key: str, member_path: str) -> str | None:
    """The key of the archive member ``member_path``, or None when the path cannot be part of a
    key (absolute, ``..``, empty or hidden components, a backslash, control characters); its
    reason is ``member_problem``."""
    if member_problem(member_path) is not None:
        return None
    return f"{container_key}/{MEMBERS}/{member_path}"


def member_problem(member_path: str) -> str | None:
    """Why an archive member's path is not read as a child document (None: it is)."""
    if member_path.startswith("/") or re.match(r"[A-Za-z]:", member_path):
        return "an absolute path in an archive: refused (never extracted)"
    parts = member_path.split("/")
    if any(part == ".." for part in parts) or "\\" in member_path:
        return "a path that climbs out of the archive ('..' or a backslash): refused (zip-slip)"
    if any(part in ("", ".") for part in parts):
        return "an empty or '.' path component"
    problem = source_key_problem(member_path)
    if problem is not None:
        return problem
    return None


def is_hidden_member(member_path: str) -> bool:
    """A member with a hidden component (``__MACOSX/``'s ``._x`` files, ``.git/``): skipped
    without a word, as the scan skips hidden files."""
    return any(part.startswith(".") for part in member_path.split("/"))


__all__ = [
    "ATTACHMENTS",
    "MEMBERS",
    "Step",
    "attachment_key",
    "container_of",
    "depth",
    "is_derived",
    "is_hidden_member",
    "member_key",
    "member_problem",
    "outermost_container",
    "safe_name",
    "split_derived_key",
]
