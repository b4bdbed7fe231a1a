"""``ChunkerSettings``: what a user tunes about chunking; its fingerprint is ``chunker_hash``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ChunkerSettings(BaseModel):
    """Sizes are counted in tokens of the embedding model's own tokenizer.

    ``max_tokens`` bounds the embedded text (``Chunk.contextual_text``: heading path included,
    special tokens included), so it must not exceed the model's maximum sequence length.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_tokens: int = Field(default=200, ge=8, description="size a chunk is packed up to")
    max_tokens: int = Field(default=256, ge=8, description="hard limit on contextual_text tokens")
    min_tokens: int = Field(
        default=48, ge=0, description="sections under this size merge with small neighbours"
    )
    overlap_tokens: int = Field(
        default=0, ge=0, description="tokens repeated from the end of the previous split chunk"
    )
    table_rows_per_chunk: int | None = Field(
        default=None, ge=1, description="rows per table chunk; None packs as many as fit"
    )
    repeat_table_header: bool = Field(
        default=True, description="repeat a table's header row above each of its chunks"
    )
    keep_code_blocks_whole: bool = Field(
        default=True,
        description="never cut inside a fenced code block that fits in one chunk",
    )
    min_text_tokens: int = Field(
        default=16,
        ge=1,
        description=(
            "tokens a chunk must keep for text after its heading path label; where a label "
            "leaves fewer, the document's over-long headings are cut to their first words in "
            "its chunks' paths (its sections keep them whole)"
        ),
    )

    @model_validator(mode="after")
    def _sizes_consistent(self) -> ChunkerSettings:
        if self.target_tokens > self.max_tokens:
            raise ValueError(
                f"target_tokens ({self.target_tokens}) exceeds max_tokens ({self.max_tokens})"
            )
        if self.min_tokens > self.target_tokens:
            raise ValueError(
                f"min_tokens ({self.min_tokens}) exceeds target_tokens ({self.target_tokens})"
            )
        if self.overlap_tokens >= self.target_tokens:
            raise ValueError(
                f"overlap_tokens ({self.overlap_tokens}) must be below target_tokens "
                f"({self.target_tokens})"
            )
        if self.overlap_tokens + self.min_text_tokens > self.max_tokens:
            raise ValueError(
                f"overlap_tokens ({self.overlap_tokens}) + min_text_tokens "
                f"({self.min_text_tokens}) exceed max_tokens ({self.max_tokens})"
            )
        return self
