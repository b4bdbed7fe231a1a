"""What a scan of a raw root yields, and the rules a source key follows.

Shared by the local scan (``sources``) and the object-store scan (``storage.raw_remote``), so
neither imports the other's module for its vocabulary: ``raw_remote`` depends on this module,
``sources`` on both, and nothing here imports either.

A source key is the document's path relative to the raw root in POSIX form. It is the Dagster
partition key, so keys Dagster cannot hold (control characters, ``...``, a name that is not
valid UTF-8) are refused with a message naming the file; nothing is silently renamed.
"""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: Substrings Dagster refuses in partition keys (besides control characters).
_FORBIDDEN_SUBSTRINGS = ("...",)
#: Dagster's partition key length limit is generous, but a path this long is a mistake.
MAX_SOURCE_KEY_LENGTH = 1024
#: How much of each regular file the scan reads to detect its media type.
HEAD_BYTES = 8192


class SourceKeyError(ValueError):
    """A file whose path cannot be a source key."""


class FileTooLargeError(OSError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size:,} bytes is over the limit of {limit:,} bytes")
        self.size = size
        self.limit = limit


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file under the raw root and the cheap facts used to notice it changed.

    A scan holds one per document (100,000s on a large root), so it is kept small: slots, and
    no path object of its own. The file's path is ``root`` joined with its key (``file_key``),
    made when asked for; ``root`` is one string shared by every file of a scan.
    """

    source_key: str
    #: The raw root as the scan was given it (a folder; a bucket's path for an object store).
    root: str
    size: int
    mtime_ns: int
    #: Detected from the file's first bytes (None when the scan did not detect).
    media_type: str | None = None
    #: The key of the file that holds this document when it is not ``source_key`` (a document
    #: inside another: the outermost container's); None for a file of its own.
    held_in: str | None = None

    @property
    def file_key(self) -> str:
        """The key of the file on disk (or object) whose bytes hold this document."""
        return self.source_key if self.held_in is None else self.held_in

    @property
    def path(self) -> Path:
        """The file's path under the raw root, as the scan was given the root."""
        return Path(self.root, self.file_key)


@dataclass(frozen=True)
class ScanProblem:
    """A raw-root entry that is not a document, and why (``name`` is printable as-is)."""

    name: str
    reason: str
    #: The source key, when the entry's path can be one (for keeping or deleting outputs).
    source_key: str | None = None

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass
class ScanResult:
    """The documents under the raw root (sorted by key) and every entry that is not one."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[ScanProblem] = field(default_factory=list)
    refused: list[ScanProblem] = field(default_factory=list)
    #: Folders (source-key prefixes ending in ``/``) that could not be listed.
    unreadable_folders: list[str] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return [f.source_key for f in self.files]

    def is_unknown(self, source_key: str) -> bool:
        """True when the scan could not tell whether ``source_key`` still exists."""
        if any(p.source_key == source_key for p in self.refused):
            return True
        # A document inside a refused file (an attachment, an archive member: ``derived``).
        if any(p.source_key and source_key.startswith(p.source_key + "/") for p in self.refused):
            return True
        return any(source_key.startswith(prefix) for prefix in self.unreadable_folders)

    def has(self, source_key: str) -> bool:
        """True when ``source_key`` is one of ``files`` (found by bisection: they are sorted by
        key, so no set of 100,000 keys is built to ask)."""
        at = bisect.bisect_left(self.files, source_key, key=_key_of)
        return at < len(self.files) and self.files[at].source_key == source_key

    def absent(self, known_keys: Iterable[str]) -> list[str]:
        """Of ``known_keys``, those that are no longer documents (deleted, renamed, excluded),
        sorted, each once. ``known_keys`` may be a stream (the warehouse's keys as they are
        found): only the absent ones are kept."""
        return sorted({k for k in known_keys if not self.has(k) and not self.is_unknown(k)})


def _key_of(f: SourceFile) -> str:
    return f.source_key


def validate_source_key(source_key: str) -> str:
    """Return ``source_key`` if Dagster can hold it as a partition key, else raise."""
    problem = source_key_problem(source_key)
    if problem:
        raise SourceKeyError(f"{display_name(source_key)}: {problem}")
    return source_key


def source_key_problem(source_key: str) -> str | None:
    if not source_key:
        return "an empty path cannot be a source key"
    if len(source_key) > MAX_SOURCE_KEY_LENGTH:
        return f"the path is longer than {MAX_SOURCE_KEY_LENGTH} characters"
    if _has_surrogates(source_key):
        return (
            "the file name is not valid UTF-8, which a source key (a Dagster partition key) "
            "must be; rename the file"
        )
    if any(unicodedata.category(ch) == "Cc" for ch in source_key):
        return "the path contains a control character, which a Dagster partition key cannot hold"
    for bad in _FORBIDDEN_SUBSTRINGS:
        if bad in source_key:
            return f"the path contains {bad!r}, which a Dagster partition key cannot hold"
    if "\\" in source_key:
        return (
            "the path contains a backslash, which a source key cannot hold (it reads as a "
            "Windows folder separator); rename the file"
        )
    if source_key.startswith("/"):
        return "a source key is a relative POSIX path"
    if any(part in ("", ".", "..") for part in source_key.split("/")):
        return "a source key has no empty, '.' or '..' components"
    return None


def display_name(name: str) -> str:
    """``name`` as printable text that names one file only.

    Bytes that are not UTF-8 show as ``\\xff`` and control characters as ``\\n``, ``\\x1b``…;
    a backslash of the name itself shows doubled (``a\\\\b.md``, as ``ls -b`` shows it), so a
    file literally named ``bad\\xffname.md`` is never shown as the one with the byte 0xff.
    """
    doubled = name.replace("\\", "\\\\")  # before any escape is added
    text = doubled.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(
        ch if unicodedata.category(ch) != "Cc" else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


#: The folder a browser or Office writes beside a web page saved "complete" (``report.htm`` and
#: ``report_files/``), by the names Windows and Office give it in their main languages.
SAVED_PAGE_FOLDER_SUFFIXES = (
    "_files",
    ".files",
    "-dateien",
    "_fichiers",
    "_archivos",
    "_arquivos",
    "_ficheiros",
    "_bestanden",
    "_file",
    "_filer",
    "_pliki",
    "_soubory",
    "_tiedostot",
)
#: What such a page is saved as.
SAVED_PAGE_EXTENSIONS = (".htm", ".html", ".xhtml", ".shtml", ".mht", ".mhtml")


def saved_page_of(folder_name: str, sibling_names: Container[str]) -> str | None:
    """The saved web page (a name among ``sibling_names``, which are lower case) whose
    companion folder ``folder_name`` is, else None.

    Why: that folder holds the page's pictures, style sheets and scripts; read as documents
    they fill the index with a site's JavaScript, icons run through OCR and Office's
    ``filelist.xml``, none of which a reader of the page sees as text.
    """
    lowered = folder_name.lower()
    for suffix in SAVED_PAGE_FOLDER_SUFFIXES:
        if lowered.endswith(suffix) and len(lowered) > len(suffix):
            stem = lowered[: -len(suffix)]
            for page_extension in SAVED_PAGE_EXTENSIONS:
                if stem + page_extension in sibling_names:
                    return folder_name[: len(stem)] + page_extension
    return None


class SavedPageFolders:
    """The saved pages' companion folders among the paths of a flat listing (an object store's
    keys, a zip's member names), where no folder is listed with its siblings. ``skip`` False
    (``DocumentsSettings.skip_saved_page_folders``): none is."""

    def __init__(self, paths: Iterable[str], *, skip: bool = True) -> None:
        self._paths = paths  # read once, when a path may first lie in such a folder
        self._skip = skip
        self._lowered: set[str] | None = None
        self._page_of: dict[str, str | None] = {}
        self._reported: set[str] = set()

    def skipped(self, path: str) -> tuple[str, str | None] | None:
        """None where ``path`` is read; else (its companion folder, why it is skipped), the
        reason only the first time a path of that folder is asked about, so a listing names
        each folder once."""
        found = self.folder_of(path)
        if found is None:
            return None
        folder, page = found
        if folder in self._reported:
            return folder, None
        self._reported.add(folder)
        return folder, saved_page_reason(page)

    def folder_of(self, path: str) -> tuple[str, str] | None:
        """(companion folder, its page) of the outermost such folder holding ``path``."""
        if not self._skip:
            return None
        parts = path.split("/")
        if not any(part.lower().endswith(SAVED_PAGE_FOLDER_SUFFIXES) for part in parts[:-1]):
            return None
        if self._lowered is None:
            self._lowered = {known.lower().rstrip("/") for known in self._paths}
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in self._page_of:
                parent = "/".join(parts[: depth - 1])
                siblings = _PrefixedNames(self._lowered, parent.lower() + "/" if parent else "")
                found = saved_page_of(parts[depth - 1], siblings)
                self._page_of[folder] = f"{parent}/{found}" if parent and found else found
            page = self._page_of[folder]
            if page is not None:
                return folder, page
        return None


class _PrefixedNames:
    """The names in one folder of a flat listing (lower case), as ``saved_page_of`` asks."""

    def __init__(self, lowered_paths: set[str], prefix: str) -> None:
        self._paths = lowered_paths
        self._prefix = prefix

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._prefix + name in self._paths


def saved_page_reason(page: str) -> str:
    """Why a saved page's companion folder is skipped, naming the page."""
    return (
        f"the pictures, styles and scripts of the saved web page {display_name(page)!r} beside "
        "it, which is read as the page"
    )


def default_detect() -> Callable[[str, bytes], tuple[str | None, str | None]]:
    """(key, first bytes) -> (media type, reason when None), by ``parsing.detect``."""
    from agrag_pipeline.parsing import detect as detect_module

    def detect(key: str, head: bytes) -> tuple[str | None, str | None]:
        media_type = detect_module.detect_media_type(key, head)
        if media_type is not None:
            return media_type, None
        return None, detect_module.undetected_reason(key, head)

    return detect


def _has_surrogates(text: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in text)
