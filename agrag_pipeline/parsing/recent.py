"""What this process last unpacked or split, by a digest of the container's bytes.

A container's members are read one document at a time, and each read would otherwise unpack
the whole container again (a tar stream, a solid 7z, a mailbox split into messages): 22 ms a
member for a 2.4 MB ``.tar.gz``, a second for a 100 MB one. The digest is SHA-256 (hardware on
this kind of machine, twice blake2b's speed) of the exact bytes, so a changed container never
reuses what an older version gave.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class RecentByContent(Generic[T]):
    """The results for the last ``keep`` containers, computed at most once per content."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep
        self._results: OrderedDict[bytes, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, raw: bytes, kind: str, compute: Callable[[], T]) -> T:
        """``compute()``'s result for ``raw`` read as ``kind``, from memory when it is recent."""
        hasher = hashlib.sha256(kind.encode() + b"\0")
        hasher.update(raw)
        digest = hasher.digest()
        with self._lock:
            found = self._results.get(digest)
            if found is not None:
                self._results.move_to_end(digest)
                return found
        result = compute()
        with self._lock:
            self._results[digest] = result
            while len(self._results) > self.keep:
                self._results.popitem(last=False)
        return result

    def clear(self) -> None:
        with self._lock:
            self._results.clear()


__all__ = ["RecentByContent"]
