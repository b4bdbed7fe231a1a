"""``DataPoint``: what every stored graph node carries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC (never a naive local time)."""
    return datetime.now(UTC)


class DataPoint(BaseModel):
    """Base of every stored node: an id, a UTC creation time and free-form metadata.

    Unknown fields are refused rather than dropped, so a misspelt property is an error, not a
    silent loss of data.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: UUID | None = None
    created_at: datetime = Field(default_factory=utc_now)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("created_at")
    @classmethod
    def _created_at_in_utc(cls, value: datetime) -> datetime:
        # A naive datetime is taken to be UTC (that is what we write); aware ones are converted.
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError as exc:
            # e.g. 9999-12-31T23:00-05:00 is past datetime.max in UTC; pydantic only turns
            # ValueError into a ValidationError, so an OverflowError would escape from_node.
            raise ValueError(f"{value.isoformat()} cannot be expressed in UTC") from exc
