"""One chunk's extraction: the first answer, the gleaning passes, validation against the schema.

Every request goes through the response cache first, so an unchanged chunk costs no call. A
pass that fails for good (the client's retries spent) fails the chunk, with its reason; the
answers already cached stay cached, and nothing of the chunk is kept (no half of an answer).
What the schema does not allow is dropped and counted by reason, never passed on.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agrag_pipeline.extraction.cache import CachedAnswer, ResponseCache, request_key
from agrag_pipeline.extraction.client import AnswerError, ChatCallError, ChatClient
from agrag_pipeline.extraction.prompt import (
    GLEANING_PROMPT,
    entity_properties,
    first_messages,
    request_body,
    text_block,
)
from agrag_pipeline.models import Chunk
from agrag_pipeline.settings import ExtractionSettings, GraphSchema

#: Why an item was dropped (the keys of ``ChunkExtraction.dropped``).
UNKNOWN_ENTITY_TYPE = "unknown_entity_type"
EMPTY_NAME = "empty_name"
MALFORMED_ITEM = "malformed_item"
UNKNOWN_RELATION_TYPE = "unknown_relation_type"
ENDPOINT_NOT_EXTRACTED = "relation_endpoint_not_extracted"
ENDPOINT_TYPES_NOT_ALLOWED = "relation_endpoint_types_not_allowed"
UNKNOWN_PROPERTY = "unknown_property"
NAME_NOT_IN_PASSAGE = "name_not_in_passage"

#: Name words shorter than this do not ground a name on their own ("of", "a").
_MIN_GROUNDING_WORD = 3


def normalise_name(name: str) -> str:
    """The name entity identity uses: NFKC, case-folded, inner whitespace collapsed, outer
    punctuation and quotes stripped (``"Dagster "`` and ``dagster`` are one entity)."""
    text = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    return text.strip(" \"'`.,;:()[]{}")


@dataclass(frozen=True)
class EntityMention:
    name: str
    normalised_name: str
    type: str
    description: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class RelationMention:
    type: str
    source: str  # normalised names
    source_type: str
    target: str
    target_type: str
    description: str
    strength: float | None


@dataclass
class ChunkExtraction:
    """What one chunk gave, and what it cost."""

    chunk: Chunk
    entities: list[EntityMention] = field(default_factory=list)
    relations: list[RelationMention] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_key: str = ""
    failure: str | None = None


def parse_answer(content: str) -> dict[str, list[Any]]:
    """The answer's two lists; an answer that is not that shape is an ``AnswerError`` (retried)."""
    try:
        value = json.loads(content)
    except ValueError as exc:
        raise AnswerError(f"the answer is not JSON (truncated?): {exc}") from None
    if not isinstance(value, dict):
        raise AnswerError(f"the answer breaks the schema: a {type(value).__name__}, not an object")
    out: dict[str, list[Any]] = {}
    for key in ("entities", "relations"):
        items = value.get(key)
        if not isinstance(items, list):
            raise AnswerError(f"the answer breaks the schema: {key!r} is not a list")
        out[key] = items
    return out


def extract_chunk(
    chunk: Chunk,
    schema: GraphSchema,
    extraction: ExtractionSettings,
    client: ChatClient,
    cache: ResponseCache,
    style: str,
) -> ChunkExtraction:
    """Extract one chunk: first pass, then up to ``max_gleanings`` passes that add what was
    missed (stopping at a pass that adds nothing), then validation."""
    result = ChunkExtraction(chunk)
    messages = first_messages(schema, chunk)
    raw_entities: list[Any] = []
    raw_relations: list[Any] = []
    try:
        for attempt in range(extraction.max_gleanings + 1):
            body = request_body(schema, extraction, messages, style)
            key = request_key(body)
            if attempt == 0:
                result.cache_key = key
            content, answer = _answer(body, key, client, cache, result)
            before = _distinct(raw_entities, raw_relations)
            raw_entities += answer["entities"]
            raw_relations += answer["relations"]
            if attempt > 0 and _distinct(raw_entities, raw_relations) == before:
                break  # the gleaning found nothing new: another one would not either
            messages = [
                *messages,
                {"role": "assistant", "content": content},
                {"role": "user", "content": GLEANING_PROMPT},
            ]
    except ChatCallError as exc:
        result.failure = exc.reason if exc.attempts <= 1 else str(exc)
        return result
    passage = normalise_name(text_block(chunk))
    result.entities = validate_entities(raw_entities, schema, result.dropped, passage)
    result.relations = validate_relations(raw_relations, result.entities, schema, result.dropped)
    return result


def _distinct(entities: list[Any], relations: list[Any]) -> int:
    """How many different items the answers so far name (a repeated item is not new)."""

    def key(item: Any, fields: tuple[str, ...]) -> tuple[str, ...]:
        if not isinstance(item, dict):
            return (json.dumps(item, sort_keys=True, default=str),)
        return tuple(normalise_name(str(item.get(f, ""))) for f in fields)

    return len({key(e, ("type", "name")) for e in entities}) + len(
        {key(r, ("type", "source", "target")) for r in relations}
    )


def _answer(
    body: dict[str, Any],
    key: str,
    client: ChatClient,
    cache: ResponseCache,
    result: ChunkExtraction,
) -> tuple[str, dict[str, list[Any]]]:
    cached = cache.get(key)
    if cached is not None:
        try:
            parsed = parse_answer(cached.content)
        except AnswerError:
            pass  # stored by an older parser that accepted it: ask again
        else:
            result.cache_hits += 1
            return cached.content, parsed
    answer = client.complete(body, parse_answer)
    result.calls += answer.attempts
    result.prompt_tokens += answer.prompt_tokens
    result.completion_tokens += answer.completion_tokens
    cache.put(key, CachedAnswer(answer.content, answer.prompt_tokens, answer.completion_tokens))
    return answer.content, answer.value


def grounded(normalised_name: str, passage: str) -> bool:
    """Whether the passage (normalised as names are) names this entity: the whole name, or one
    of its words of three characters or more, occurs in it. Lenient on purpose ("PostgreSQL
    Global Development Group" for "the PostgreSQL project"), so it drops only names the passage
    never gives, which a model invents ("Dagger" for a passage on Dagster) and no chunk can
    trace."""
    if normalised_name in passage:
        return True
    words = re.findall(r"\w+", normalised_name)
    return any(len(w) >= _MIN_GROUNDING_WORD and w in passage for w in words)


def validate_entities(
    items: list[Any], schema: GraphSchema, dropped: Counter[str], passage: str
) -> list[EntityMention]:
    """Entities the schema allows whose names ``passage`` (the prompt's text block, normalised)
    gives, one per (type, normalised name), first description kept."""
    types = {e.name: e for e in schema.entity_types}
    found: dict[tuple[str, str], EntityMention] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            dropped[MALFORMED_ITEM] += 1
            continue
        kind = item.get("type")
        if kind not in types:
            dropped[UNKNOWN_ENTITY_TYPE] += 1
            continue
        name = " ".join(item["name"].split())
        norm = normalise_name(name)
        if not norm:
            dropped[EMPTY_NAME] += 1
            continue
        if not grounded(norm, passage):
            dropped[NAME_NOT_IN_PASSAGE] += 1
            continue
        allowed = {p.name for p in entity_properties(types[kind].properties)}
        properties = {}
        raw_props = item.get("properties")
        for prop, value in (raw_props if isinstance(raw_props, dict) else {}).items():
            if prop not in allowed:
                dropped[UNKNOWN_PROPERTY] += 1
            elif value is not None:
                properties[prop] = value
        description = item.get("description")
        mention = EntityMention(
            name=name,
            normalised_name=norm,
            type=kind,
            description=description.strip() if isinstance(description, str) else "",
            properties=properties,
        )
        found.setdefault((kind, norm), mention)
    return list(found.values())


def validate_relations(
    items: list[Any],
    entities: list[EntityMention],
    schema: GraphSchema,
    dropped: Counter[str],
) -> list[RelationMention]:
    """Relations whose type exists, whose endpoints were extracted from the same chunk, and
    whose endpoint types the schema allows for that relation type."""
    names = {r.name for r in schema.relation_types}
    patterns = {(r.name, r.source, r.target) for r in schema.relation_types}
    types_of: dict[str, set[str]] = {}
    for entity in entities:
        types_of.setdefault(entity.normalised_name, set()).add(entity.type)
    found: dict[tuple[str, str, str, str, str], RelationMention] = {}
    for item in items:
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) for k in ("source", "target", "type")
        ):
            dropped[MALFORMED_ITEM] += 1
            continue
        kind = item["type"]
        if kind not in names:
            dropped[UNKNOWN_RELATION_TYPE] += 1
            continue
        source, target = normalise_name(item["source"]), normalise_name(item["target"])
        if source not in types_of or target not in types_of:
            dropped[ENDPOINT_NOT_EXTRACTED] += 1
            continue
        match = next(
            (
                (s, t)
                for s in sorted(types_of[source])
                for t in sorted(types_of[target])
                if (kind, s, t) in patterns
            ),
            None,
        )
        if match is None:
            dropped[ENDPOINT_TYPES_NOT_ALLOWED] += 1
            continue
        strength = item.get("strength")
        description = item.get("description")
        relation = RelationMention(
            type=kind,
            source=source,
            source_type=match[0],
            target=target,
            target_type=match[1],
            description=description.strip() if isinstance(description, str) else "",
            strength=float(strength)
            if isinstance(strength, int | float) and math.isfinite(strength)
            else None,
        )
        found.setdefault((kind, source, match[0], target, match[1]), relation)
    return list(found.values())
