"""The extraction prompt and the JSON Schema of its answer, both built from the graph schema.

The prompt lists every entity type, property and relation pattern with its description (what
``extraction_fingerprint`` hashes), then the chunk's text block: its ``section_label()`` and
text. The answer schema follows OpenAI's strict structured outputs (every property required,
no extra properties, nullable values as ``anyOf`` with null), which llama.cpp, vLLM and Ollama
turn into a grammar, so even a small model can only answer in this shape. ``PROMPT_VERSION`` is
the template's own version; the settings' ``extraction.prompt_version`` is fingerprinted with it.
"""

from __future__ import annotations

from typing import Any

from agrag_pipeline.models import Chunk
from agrag_pipeline.settings import ExtractionSettings, GraphSchema, PropertySpec

#: This template's version: bump when the wording or the answer schema changes.
#: 2: the answer's item lists are bounded by the token budget (``max_items``), and an entity
#: whose name the passage does not give is dropped (``extract.grounded``).
PROMPT_VERSION = "2"

#: At most this many entities, and this many relations, per answer.
MAX_ITEMS = 25

#: What one listed item may cost in completion tokens, for ``max_items``: Gemma-3's answers spend
#: 42-55 tokens per entity or relation with a one-sentence description (BENCHMARKS.md).
TOKENS_PER_ITEM = 64

GLEANING_PROMPT = (
    "Some entities or relations of the types above may have been missed in the last answer. "
    "Answer again in the same format with ONLY the ones that were missed; answer with empty "
    "lists if none were."
)

_JSON_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "float": {"type": "number"},
    "boolean": {"type": "boolean"},
    "date": {"type": "string"},
    "datetime": {"type": "string"},
    "list[string]": {"type": "array", "items": {"type": "string"}},
}


def entity_properties(properties: list[PropertySpec]) -> list[PropertySpec]:
    """The properties the answer carries besides ``name`` (which every entity has)."""
    return [p for p in properties if p.name != "name"]


def system_prompt(schema: GraphSchema) -> str:
    lines = [
        "You extract a knowledge graph from one passage of a document.",
        "Name only entities and relations the passage states, of these types.",
        "",
        "Entity types:",
    ]
    for entity in schema.entity_types:
        lines.append(f"- {entity.name}: {entity.description}".rstrip(": "))
        for prop in entity_properties(entity.properties):
            lines.append(f"  - property {prop.name} ({prop.type}): {prop.description}".rstrip(": "))
    lines += ["", "Relation types (source type -> target type):"]
    for rel in schema.relation_types:
        lines.append(f"- {rel.name} ({rel.source} -> {rel.target}): {rel.description}".rstrip(": "))
    lines += [
        "",
        "Give each entity its name as written in the passage and a one-sentence description.",
        "A relation's source and target are names of entities in your answer; its strength is "
        "a number from 1 (weak) to 10 (strong). Use null for a property the passage does not "
        "give.",
    ]
    return "\n".join(lines)


def text_block(chunk: Chunk) -> str:
    label = chunk.section_label()
    head = f"Section: {label}\n\n" if label else ""
    return f"{head}Passage:\n{chunk.text}"


def max_items(extraction: ExtractionSettings) -> int:
    """How many entities, and how many relations, one answer may list: ``MAX_ITEMS``, or fewer
    where the two full lists would not fit ``max_completion_tokens``.

    A small model at temperature 0 can loop, listing the same entity until the grammar's
    ``maxItems`` closes the list. Were the lists allowed to outgrow the token budget, such an
    answer would be cut at the limit (``finish_reason: length``) and fail on every retry, since
    the same request gets the same answer; bounded here, the grammar closes both lists within the
    budget and the answer arrives whole, its repeats merged by name.
    """
    fits = extraction.max_completion_tokens // (2 * TOKENS_PER_ITEM)
    return max(1, min(MAX_ITEMS, fits))


def response_schema(schema: GraphSchema, extraction: ExtractionSettings) -> dict[str, Any]:
    """The JSON Schema of one answer (strict: every key required, nothing else allowed)."""
    entity_variants = []
    for entity in schema.entity_types:
        props = entity_properties(entity.properties)
        entity_variants.append(
            _object(
                {
                    "name": {"type": "string"},
                    "type": {"type": "string", "enum": [entity.name]},
                    "description": {"type": "string"},
                    "properties": _object(
                        {p.name: {"anyOf": [_JSON_TYPES[p.type], {"type": "null"}]} for p in props}
                    ),
                }
            )
        )
    relation_names = sorted({r.name for r in schema.relation_types})
    relation_item = _object(
        {
            "source": {"type": "string"},
            "target": {"type": "string"},
            "type": {"type": "string", "enum": relation_names or ["NONE"]},
            "description": {"type": "string"},
            "strength": {"type": "number"},
        }
    )
    entity_item: dict[str, Any] = (
        entity_variants[0] if len(entity_variants) == 1 else {"anyOf": entity_variants}
    )
    limit = max_items(extraction)
    return _object(
        {
            "entities": {"type": "array", "items": entity_item, "maxItems": limit},
            "relations": {"type": "array", "items": relation_item, "maxItems": limit},
        }
    )


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def response_format(
    schema: GraphSchema, extraction: ExtractionSettings, style: str
) -> dict[str, Any]:
    """The ``response_format`` field for the endpoint's dialect (see ``LlmSettings``)."""
    json_schema = response_schema(schema, extraction)
    if style == "json_object":
        return {"type": "json_object", "schema": json_schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": "graph_extraction", "strict": True, "schema": json_schema},
    }


def request_body(
    schema: GraphSchema,
    extraction: ExtractionSettings,
    messages: list[dict[str, str]],
    style: str,
) -> dict[str, Any]:
    """The whole request that decides an answer (and so the cache key)."""
    return {
        "model": extraction.model,
        "messages": messages,
        "response_format": response_format(schema, extraction, style),
        "temperature": extraction.temperature,
        "seed": extraction.seed,
        "max_tokens": extraction.max_completion_tokens,
    }


def first_messages(schema: GraphSchema, chunk: Chunk) -> list[dict[str, str]]:
    """One user message: the instructions, then the text block. Not a system message, which
    some chat templates drop without a word (llama.cpp's ``gemma`` format does)."""
    return [{"role": "user", "content": f"{system_prompt(schema)}\n\n{text_block(chunk)}"}]
