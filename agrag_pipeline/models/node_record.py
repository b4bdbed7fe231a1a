"""``NodeRecord``: what a graph-store write takes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class NodeRecord(BaseModel):
    """One node to write: its label, its id, and flat, JSON-safe properties (without the id)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1)
    id: str = Field(min_length=1)
    properties: dict[str, Any] = Field(default_factory=dict)
