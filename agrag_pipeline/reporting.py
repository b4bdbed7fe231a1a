"""What a run reports about a document: previews and statistics, as plain Python values.

The Dagster layer wraps these into metadata values; the CLI prints them. Kept here so the shell
holds no formatting logic and the same summary reads the same everywhere.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

import pyarrow as pa

from agrag_pipeline.models import Chunk

PREVIEW_CHUNKS = 3
PREVIEW_CHARS = 240


def chunk_preview_markdown(chunks: Sequence[Chunk], limit: int = PREVIEW_CHUNKS) -> str:
    """A Markdown table of the first chunks: index, kind, heading path, tokens, text start."""
    lines = ["| # | kind | heading path | tokens | text |", "|---|---|---|---|---|"]
    for chunk in chunks[:limit]:
        text = " ".join(chunk.text.split())
        if len(text) > PREVIEW_CHARS:
            text = text[: PREVIEW_CHARS - 1] + "…"
        lines.append(
            "| {} | {} | {} | {} | {} |".format(
                chunk.index,
                chunk.content_kind,
                _cell(chunk.section_label() or ""),
                chunk.metadata.get("token_count", ""),
                _cell(text),
            )
        )
    if len(chunks) > limit:
        lines.append(f"\n…and {len(chunks) - limit} more chunks.")
    return "\n".join(lines)


def column_schema(schema: pa.Schema) -> list[tuple[str, str]]:
    """(name, Arrow type) for each column, for a column-schema display."""
    return [(f.name, str(f.type)) for f in schema]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# -- progress and the final summary of a command-line run ---------------------------------------


def format_duration(seconds: float) -> str:
    """``1:05`` or ``1:02:05``: short enough for a progress line."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Documents done, failed, chunks, elapsed and remaining time of a long run.

    On a terminal it is one line, rewritten in place; otherwise one plain line per document
    (a log file or CI output stays readable). ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        *,
        tty: bool | None = None,
        label: str = "agrag",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.label = label
        self.clock = clock
        self.started = clock()
        self.done = 0
        self.failed = 0
        self.chunks = 0
        self._width = 0

    def status_line(self) -> str:
        elapsed = self.clock() - self.started
        finished = self.done + self.failed
        if finished and finished < self.total:
            eta = f", ~{format_duration(elapsed / finished * (self.total - finished))} left"
        else:
            eta = ""
        return (
            f"{self.label}: {finished}/{self.total} documents, {self.done} done, "
            f"{self.failed} failed, {self.chunks} chunks, {format_duration(elapsed)} elapsed{eta}"
        )

    def update(self, source_key: str, ok: bool, chunks: int = 0, error: str | None = None) -> None:
        if ok:
            self.done += 1
            self.chunks += chunks
        else:
            self.failed += 1
        if self.tty:
            line = self.status_line()
            self.stream.write("\r" + line.ljust(self._width))
            self._width = len(line)
        else:
            finished = self.done + self.failed
            what = f"ok ({chunks} chunks)" if ok else f"FAILED: {_first_line(error or '')}"
            self.stream.write(f"[{finished}/{self.total}] {source_key} {what}\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()


@dataclass
class RunSummary:
    """What a command-line run did: every document, and every entry that was not one."""

    command: str
    documents: int = 0
    succeeded: int = 0
    chunks: int = 0
    elapsed_s: float = 0.0
    failed: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        """0 when every document succeeded or was deliberately skipped, else 1."""
        return 1 if self.failed or self.refused else 0

    def lines(self) -> list[str]:
        out = [
            f"{self.command}: {self.documents} documents, {self.succeeded} succeeded, "
            f"{len(self.failed)} failed, {len(self.refused)} refused, "
            f"{len(self.skipped)} skipped, {len(self.removed)} removed, "
            f"{self.chunks} chunks, {self.elapsed_s:.2f}s"
        ]
        out.extend(self.extra)
        for label, items in (
            ("FAILED", self.failed),
            ("REFUSED", self.refused),
            ("SKIPPED", self.skipped),
            ("REMOVED", self.removed),
        ):
            out.extend(f"{label} {name}: {reason}" for name, reason in items)
        return out


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
