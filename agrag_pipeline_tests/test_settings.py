"""Pipeline settings: the shipped file loads; every wrong setting names the file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agrag_pipeline.settings import (
    DEFAULT_SETTINGS_PATH,
    PipelineSettings,
    SettingsError,
    load_settings,
)


def shipped() -> dict[str, Any]:
    loaded = yaml.safe_load(DEFAULT_SETTINGS_PATH.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def write(tmp_path: Path, data: Any, name: str = "pipeline.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(SettingsError) as caught:
        load_settings(path)
    return str(caught.value)


def test_shipped_settings_file_loads(repo_root: Path) -> None:
    assert repo_root / "data" / "pipeline.yaml" == DEFAULT_SETTINGS_PATH
    settings = load_settings()
    assert isinstance(settings, PipelineSettings)
    assert settings.chunker.target_tokens <= settings.chunker.max_tokens
    assert {e.name for e in settings.graph_schema.entity_types} >= {"Concept", "Tool"}
    assert settings.extraction.model


def test_settings_are_immutable() -> None:
    settings = load_settings()
    with pytest.raises(ValueError):
        settings.chunker.max_tokens = 10  # type: ignore[misc]


def test_settings_error_is_a_value_error() -> None:
    assert issubclass(SettingsError, ValueError)


def test_wrong_setting_names_the_file_and_the_field_path(tmp_path: Path) -> None:
    data = shipped()
    data["chunker"]["max_tokens"] = 2
    path = write(tmp_path, data, "mine.yaml")
    message = load_error(path)
    assert str(path) in message
    assert "chunker.max_tokens" in message


def test_wrong_type_deep_in_the_schema_names_its_full_path(tmp_path: Path) -> None:
    data = shipped()
    data["graph_schema"]["entity_types"][1]["properties"][0]["type"] = "blob"
    path = write(tmp_path, data)
    message = load_error(path)
    assert str(path) in message
    assert "graph_schema.entity_types.1.properties.0.type" in message


def test_every_wrong_field_is_named(tmp_path: Path) -> None:
    data = shipped()
    data["embedding"]["batch_size"] = 0
    data["extraction"]["temperature"] = 9
    message = load_error(write(tmp_path, data))
    assert "embedding.batch_size" in message
    assert "extraction.temperature" in message


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("chunker:\n  max_tokens: [256\n", encoding="utf-8")
    message = load_error(path)
    assert str(path) in message
    assert "YAML" in message


def test_key_written_twice_is_refused_not_silently_overridden(tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    text = DEFAULT_SETTINGS_PATH.read_text(encoding="utf-8").replace(
        "  max_tokens: 256", "  max_tokens: 256\n  max_tokens: 512", 1
    )
    assert text.count("max_tokens:") == 2
    path.write_text(text, encoding="utf-8")
    message = load_error(path)
    assert str(path) in message
    assert "max_tokens" in message


def test_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("extraction:\n  model: caf\u00e9\n".encode("latin-1"))
    message = load_error(path)
    assert str(path) in message
    assert "UTF-8" in message


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    assert str(path) in load_error(path)


@pytest.mark.parametrize("content", ["", "- a\n- b\n", "just text\n"])
def test_file_that_is_not_a_mapping_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "flat.yaml"
    path.write_text(content, encoding="utf-8")
    assert str(path) in load_error(path)


@pytest.mark.parametrize(
    ("section", "key"), [("chunker", "max_tokenz"), ("embedding", "modle"), ("extraction", "x")]
)
def test_unknown_key_is_refused_and_named(tmp_path: Path, section: str, key: str) -> None:
    data = shipped()
    data[section][key] = 1
    message = load_error(write(tmp_path, data))
    assert f"{section}.{key}" in message


def test_unknown_top_level_section_is_refused(tmp_path: Path) -> None:
    data = {**shipped(), "chunking": {"max_tokens": 100}}
    assert "chunking" in load_error(write(tmp_path, data))


def test_missing_extraction_section_is_refused(tmp_path: Path) -> None:
    data = shipped()
    del data["extraction"]
    assert "extraction" in load_error(write(tmp_path, data))


def test_relation_naming_an_unknown_entity_type_is_refused(tmp_path: Path) -> None:
    data = shipped()
    data["graph_schema"]["relation_types"].append(
        {"name": "EMPLOYS", "source": "Organization", "target": "Person"}
    )
    message = load_error(write(tmp_path, data))
    assert "graph_schema" in message
    assert "'Person'" in message
    assert "EMPLOYS" in message


def test_entity_type_defined_twice_is_refused(tmp_path: Path) -> None:
    data = shipped()
    data["graph_schema"]["entity_types"].append({"name": "Tool"})
    message = load_error(write(tmp_path, data))
    assert "graph_schema" in message
    assert "Tool" in message


def test_relation_type_defined_twice_is_refused(tmp_path: Path) -> None:
    data = shipped()
    relations = data["graph_schema"]["relation_types"]
    relations.append({**relations[0], "description": "again"})
    message = load_error(write(tmp_path, data))
    assert "defined twice" in message
    assert relations[0]["name"] in message


def test_property_defined_twice_on_one_type_is_refused(tmp_path: Path) -> None:
    data = shipped()
    data["graph_schema"]["entity_types"][0]["properties"].append(
        {"name": "name", "type": "integer"}
    )
    message = load_error(write(tmp_path, data))
    assert "graph_schema.entity_types.0.properties" in message
    assert "defined twice" in message


def test_target_above_max_is_refused(tmp_path: Path) -> None:
    data = shipped()
    data["chunker"]["target_tokens"] = data["chunker"]["max_tokens"] + 1
    message = load_error(write(tmp_path, data))
    assert "chunker" in message
    assert "target_tokens" in message
    assert "max_tokens" in message


@pytest.mark.parametrize(
    "change",
    [
        {"min_tokens": 250},
        {"overlap_tokens": 200},
        {"table_rows_per_chunk": 0},
        {"target_tokens": 4},
    ],
)
def test_inconsistent_chunker_sizes_are_refused(tmp_path: Path, change: dict[str, int]) -> None:
    data = shipped()
    data["chunker"].update(change)
    message = load_error(write(tmp_path, data))
    assert "chunker" in message
    assert next(iter(change)) in message


def test_settings_built_in_code_equal_the_loaded_file() -> None:
    assert PipelineSettings.model_validate(json.loads(json.dumps(shipped()))) == load_settings()
