"""Fingerprints: canonical JSON, and hashes that change exactly when what they cover changes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.fingerprints import canonical_json, chunker_hash, content_hash, short
from agrag_pipeline.settings import (
    DEFAULT_SETTINGS_PATH,
    PipelineSettings,
    extraction_fingerprint,
    load_settings,
    schema_fingerprint,
)


def shipped_settings() -> dict[str, Any]:
    loaded = yaml.safe_load(DEFAULT_SETTINGS_PATH.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def reversed_keys(value: Any) -> Any:
    """The same data with every mapping's keys in reverse order (lists keep their order)."""
    if isinstance(value, dict):
        return {key: reversed_keys(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_keys(item) for item in value]
    return value


def write_yaml(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def settings_from(data: dict[str, Any]) -> PipelineSettings:
    return PipelineSettings.model_validate(data)


# --- canonical JSON and hashes ---------------------------------------------------------------


def test_canonical_json_sorts_keys_at_every_level_and_is_compact() -> None:
    assert canonical_json({"b": 1, "a": {"d": [1, 2], "c": None}}) == (
        b'{"a":{"c":null,"d":[1,2]},"b":1}'
    )


def test_canonical_json_does_not_depend_on_key_order() -> None:
    assert canonical_json({"x": 1, "y": 2}) == canonical_json({"y": 2, "x": 1})


def test_canonical_json_keeps_non_ascii_as_utf8_bytes() -> None:
    encoded = canonical_json({"name": "Straße ✓"})
    assert encoded == '{"name":"Straße ✓"}'.encode()
    assert b"\\u" not in encoded


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_canonical_json_refuses_nan_and_infinities(value: float) -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": value})


def test_canonical_json_of_a_model_is_that_of_its_json_dump() -> None:
    settings = ChunkerSettings()
    assert canonical_json(settings) == canonical_json(json.loads(settings.model_dump_json()))


def test_content_hash_is_the_sha256_of_the_raw_bytes() -> None:
    raw = "résumé\r\n".encode("latin-1")
    assert content_hash(raw) == hashlib.sha256(raw).hexdigest()
    assert len(content_hash(raw)) == 64
    assert content_hash(raw) == content_hash(raw).lower()


def test_short_fingerprint_fits_a_dagster_tag_value() -> None:
    full = content_hash(b"x")
    assert full.startswith(short(full))
    assert len(short(full)) <= 63


# --- key order does not matter ---------------------------------------------------------------


def test_same_settings_in_another_key_order_give_the_same_fingerprints(tmp_path: Path) -> None:
    data = shipped_settings()
    first = load_settings(write_yaml(tmp_path / "a.yaml", data))
    second = load_settings(write_yaml(tmp_path / "b.yaml", reversed_keys(data)))
    # The two files really differ in key order.
    a_text = (tmp_path / "a.yaml").read_text(encoding="utf-8")
    b_text = (tmp_path / "b.yaml").read_text(encoding="utf-8")
    assert a_text != b_text
    assert chunker_hash("md", "1", first.chunker) == chunker_hash("md", "1", second.chunker)
    assert first.schema_fingerprint == second.schema_fingerprint
    assert first.extraction_fingerprint == second.extraction_fingerprint


def test_order_of_types_and_properties_in_the_schema_does_not_matter() -> None:
    data = shipped_settings()
    shuffled = json.loads(json.dumps(data))
    schema = shuffled["graph_schema"]
    schema["entity_types"].reverse()
    schema["relation_types"].reverse()
    for entity in schema["entity_types"]:
        entity["properties"].reverse()
    first, second = settings_from(data), settings_from(shuffled)
    assert first.schema_fingerprint == second.schema_fingerprint
    assert first.extraction_fingerprint == second.extraction_fingerprint


def test_chunker_hash_of_a_mapping_equals_that_of_the_settings_model() -> None:
    settings = ChunkerSettings()
    as_mapping = dict(reversed(list(settings.model_dump().items())))
    assert chunker_hash("md", "1", as_mapping) == chunker_hash("md", "1", settings)


# --- what each fingerprint covers ------------------------------------------------------------


def test_changed_entity_description_changes_extraction_but_not_schema_fingerprint() -> None:
    data = shipped_settings()
    changed = json.loads(json.dumps(data))
    changed["graph_schema"]["entity_types"][0]["description"] += " Reworded."
    before, after = settings_from(data), settings_from(changed)
    assert after.extraction_fingerprint != before.extraction_fingerprint
    assert after.schema_fingerprint == before.schema_fingerprint


@pytest.mark.parametrize("where", ["relation", "property"])
def test_other_changed_descriptions_change_extraction_but_not_schema_fingerprint(
    where: str,
) -> None:
    data = shipped_settings()
    changed = json.loads(json.dumps(data))
    if where == "relation":
        changed["graph_schema"]["relation_types"][-1]["description"] = "Something else."
    else:
        changed["graph_schema"]["entity_types"][0]["properties"][0]["description"] = "Other."
    before, after = settings_from(data), settings_from(changed)
    assert after.extraction_fingerprint != before.extraction_fingerprint
    assert after.schema_fingerprint == before.schema_fingerprint


def _change_property_type(schema: dict[str, Any]) -> None:
    schema["entity_types"][0]["properties"][0]["type"] = "integer"


def _add_relation(schema: dict[str, Any]) -> None:
    schema["relation_types"].append({"name": "MENTIONS", "source": "Tool", "target": "Tool"})


def _add_property(schema: dict[str, Any]) -> None:
    schema["entity_types"][1]["properties"].append({"name": "homepage", "type": "string"})


def _add_entity_type(schema: dict[str, Any]) -> None:
    schema["entity_types"].append({"name": "Person"})


def _retarget_relation(schema: dict[str, Any]) -> None:
    schema["relation_types"][0]["target"] = "Tool"


@pytest.mark.parametrize(
    "change",
    [_change_property_type, _add_relation, _add_property, _add_entity_type, _retarget_relation],
)
def test_a_structural_change_changes_the_schema_fingerprint(change: Any) -> None:
    data = shipped_settings()
    changed = json.loads(json.dumps(data))
    change(changed["graph_schema"])
    assert settings_from(changed).schema_fingerprint != settings_from(data).schema_fingerprint


def test_changed_extraction_model_changes_only_the_extraction_fingerprint() -> None:
    data = shipped_settings()
    changed = json.loads(json.dumps(data))
    changed["extraction"]["model"] = "another-model-2025"
    before, after = settings_from(data), settings_from(changed)
    assert after.extraction_fingerprint != before.extraction_fingerprint
    assert after.schema_fingerprint == before.schema_fingerprint


@pytest.mark.parametrize(
    ("field", "value"), [("temperature", 0.7), ("max_gleanings", 3), ("prompt_version", "2")]
)
def test_changed_extraction_setting_changes_the_extraction_fingerprint(
    field: str, value: Any
) -> None:
    data = shipped_settings()
    changed = json.loads(json.dumps(data))
    changed["extraction"][field] = value
    assert (
        settings_from(changed).extraction_fingerprint != settings_from(data).extraction_fingerprint
    )


def test_relation_descriptions_cannot_collide_through_names_with_dashes() -> None:
    # With keys joined as "source-name->target", A-B + C and A + B-C read the same.
    base: dict[str, Any] = {
        "entity_types": [{"name": n} for n in ("A", "A-B", "C")],
        "relation_types": [
            {"name": "B-C", "source": "A", "target": "C", "description": "one"},
            {"name": "C", "source": "A-B", "target": "C", "description": "two"},
        ],
    }
    reworded = json.loads(json.dumps(base))
    reworded["relation_types"][0]["description"] = "one, reworded"
    extraction = {"model": "m"}
    first = settings_from({"graph_schema": base, "extraction": extraction})
    second = settings_from({"graph_schema": reworded, "extraction": extraction})
    assert first.extraction_fingerprint != second.extraction_fingerprint


def test_schema_fingerprint_and_extraction_fingerprint_are_functions_of_the_settings() -> None:
    settings = settings_from(shipped_settings())
    assert settings.schema_fingerprint == schema_fingerprint(settings.graph_schema)
    assert settings.extraction_fingerprint == extraction_fingerprint(
        settings.graph_schema, settings.extraction
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("target_tokens", 199),
        ("max_tokens", 300),
        ("min_tokens", 10),
        ("overlap_tokens", 16),
        ("table_rows_per_chunk", 5),
        ("repeat_table_header", False),
    ],
)
def test_chunker_hash_changes_with_every_chunker_setting(field: str, value: Any) -> None:
    default = ChunkerSettings()
    changed = default.model_copy(update={field: value})
    assert getattr(changed, field) != getattr(default, field)
    assert chunker_hash("md", "1", changed) != chunker_hash("md", "1", default)


def test_chunker_hash_changes_with_the_chunker_version_and_name() -> None:
    settings = ChunkerSettings()
    assert chunker_hash("md", "1", settings) != chunker_hash("md", "2", settings)
    assert chunker_hash("md", "1", settings) != chunker_hash("pdf", "1", settings)


def test_chunker_hash_is_64_lowercase_hex_and_stable() -> None:
    first = chunker_hash("md", "1", ChunkerSettings())
    assert first == chunker_hash("md", "1", ChunkerSettings())
    assert len(first) == 64
    assert set(first) <= set("0123456789abcdef")
