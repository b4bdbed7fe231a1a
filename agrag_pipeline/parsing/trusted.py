"""Building many rows fast from values this code produced: UUIDv5 series and unvalidated rows.

``uuid.uuid5`` hashes namespace and name from scratch for every id; the ids of one document
share a long prefix (kind, document id, content hash, ...), so its SHA-1 state is computed once
and copied: ``Uuid5Series`` gives exactly ``uuid.uuid5(namespace, prefix + suffix)``.

``unvalidated`` builds a pydantic row without re-validating values the parser or chunker
computed itself from validated parts (offsets, ids, counts). Public constructors keep
validating; the tests prove every row built this way valid, over the whole corpus and
generated documents (``Model.model_validate(row.model_dump()) == row``, same fields set).
"""

from __future__ import annotations

import hashlib
from collections.abc import Set
from typing import Any, TypeVar
from uuid import UUID, SafeUUID

from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound=BaseModel)


class Uuid5Series:
    """``uuid.uuid5(namespace, prefix + suffix)`` for many suffixes, hashing the prefix once."""

    __slots__ = ("_prefix",)

    def __init__(self, namespace: UUID, prefix: str) -> None:
        self._prefix = hashlib.sha1(namespace.bytes + prefix.encode("utf-8"), usedforsecurity=False)

    def __call__(self, suffix: str) -> UUID:
        sha = self._prefix.copy()
        sha.update(suffix.encode("utf-8"))
        # What ``UUID(bytes=..., version=5)`` sets, without its argument checks.
        value = int.from_bytes(sha.digest()[:16]) & _VERSION_CLEAR | _VERSION_5
        uid = _new_uuid(UUID)
        _set(uid, "int", value)
        _set(uid, "is_safe", _UNKNOWN)
        return uid


#: The RFC 4122 variant and version bits of a UUID's integer: cleared, then set for version 5.
_VERSION_CLEAR = ~(0xC000 << 48) & ~(0xF000 << 64) & ((1 << 128) - 1)
_VERSION_5 = (0x8000 << 48) | (5 << 76)
_UNKNOWN = SafeUUID.unknown
_new_uuid = object.__new__
_set = object.__setattr__


class SharedFieldsSet(frozenset[str]):
    """The fields set of every row ``unvalidated`` builds with the same fields: one object.

    A set per row was a quarter of a section's memory (~700 bytes of ~2.8 KB: a JSON-lines
    file of 100,000 records is 100,000 sections and as many chunks). Shared, it must never
    change, so it is frozen: assigning a field of such a row fails (pydantic would add the
    field's name to the set every row holds); ``model_copy(update=...)`` builds the changed
    row, with a plain set of its own, as copies get."""

    __slots__ = ()

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: Any) -> set[str]:
        return set(self)

    def __reduce__(self) -> Any:
        return (set, (list(self),))


_SHARED: dict[frozenset[str], SharedFieldsSet] = {}
_MAX_SHARED = 64


def unvalidated(cls: type[ModelT], values: dict[str, Any], fields_set: Set[str]) -> ModelT:
    """``cls(**{name: values[name] for name in fields_set})`` without validation.

    What ``BaseModel.model_construct`` does, but ``model_construct`` loops over every field in
    Python and is no faster than validating (~6 µs for a Chunk); this takes under 1 µs.
    ``values`` holds every field, in field order (defaults included); ``fields_set`` names the
    ones a validated construction would have been given (rows given the same names share one
    ``SharedFieldsSet``).
    """
    key = fields_set if isinstance(fields_set, frozenset) else frozenset(fields_set)
    shared: Set[str] | None = _SHARED.get(key)
    if shared is None:
        if len(_SHARED) < _MAX_SHARED:
            shared = _SHARED[key] = SharedFieldsSet(key)
        else:  # callers pass a few constant sets: past that, each row its own
            shared = set(key)
    row = cls.__new__(cls)
    object.__setattr__(row, "__dict__", values)
    object.__setattr__(row, "__pydantic_fields_set__", shared)
    object.__setattr__(row, "__pydantic_extra__", None)
    object.__setattr__(row, "__pydantic_private__", None)
    return row
