"""JSON, NDJSON, YAML and TOML (issue 23): every value under its key path, records as sections,
hostile input refused within budget with an error naming the file."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agrag_pipeline.fingerprints import content_hash
from agrag_pipeline.models import Document
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
)
from agrag_pipeline.parsing.structured import MAX_DEPTH, MAX_VALUES, parse_json
from agrag_pipeline_tests.parsing.parsed_support import headings, parse_checked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "structured"


def _strings(value: object) -> Iterator[str]:
    """Every key and string value of a JSON-like value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


@pytest.mark.parametrize("name", ["simple.json", "arbitrary-records.json"])
def test_every_json_key_and_string_value_is_in_the_text_layer(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    parsed = parse_checked(raw, name)
    missing = [s for s in _strings(json.loads(raw)) if s not in parsed.text_layer]
    assert missing == []
    assert parsed.document.media_type == "application/json"


def test_a_top_level_json_array_is_a_section_per_record_titled_by_its_name() -> None:
    parsed = parse_checked((FIXTURES / "arbitrary-records.json").read_bytes(), "records.json")
    assert headings(parsed) == [
        (1, ["Garden Trowel"]),
        (1, ["Watering Can"]),
        (1, ["Pruning Shears"]),
    ]
    second = next(s for s in parsed.sections if s.heading == "Watering Can")
    assert second.text_in(parsed.text_layer).splitlines()[2:] == [
        "sku: GRD-1290",
        "name: Watering Can",
        "price: 18.0",
        "in_stock: false",
    ]
    # Records without a name-like field are titled by their position.
    untitled = parse_checked((FIXTURES / "simple.json").read_bytes(), "simple.json")
    assert [h for _, (h,) in headings(untitled)][:3] == ["[0]", "[1]", "[2]"]


def test_nested_values_read_under_their_key_path() -> None:
    raw = json.dumps(
        {
            "version": 2,
            "user": {"name": "Ada", "address": {"city": "Paris", "zip": None}},
            "tags": ["a", "b"],
            "odd keys": {"a.b": True, "": 1},
            "matrix": [[1, 2], [3]],
        }
    ).encode()
    parsed = parse_checked(raw, "config.json")
    lines = parsed.text_layer.splitlines()
    for line in (
        "version: 2",
        "tags: a, b",
        "user.name: Ada",
        "user.address.city: Paris",
        "user.address.zip: null",
        'odd keys["a.b"]: true',
        'odd keys[""]: 1',
        "matrix[0]: 1, 2",
        "matrix[1]: 3",
    ):
        assert line in lines
    assert headings(parsed) == [(1, ["user"]), (1, ["odd keys"]), (1, ["matrix"])]
    # One-line entries come first, in the level-0 section, never under a later heading.
    assert parsed.sections[0].heading is None
    assert "tags: a, b" in parsed.sections[0].text_in(parsed.text_layer)


def test_ndjson_is_a_section_per_line_and_keeps_every_value() -> None:
    raw = (FIXTURES / "simple.ndjson").read_bytes()
    parsed = parse_checked(raw, "simple.ndjson")
    records = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    assert len(headings(parsed)) == len(records)
    missing = [s for r in records for s in _strings(r) if s not in parsed.text_layer]
    assert missing == []
    named = parse_checked((FIXTURES / "arbitrary-records.ndjson").read_bytes(), "a.jsonl")
    assert [h for _, (h,) in headings(named)] == ["Garden Trowel", "Watering Can", "Pruning Shears"]


def test_an_ndjson_line_cut_short_is_left_out_with_a_warning_the_others_kept() -> None:
    raw = b'{"name": "one"}\n{"name": "two", "x": [1,\n{"name": "three"}\n'
    parsed = parse_checked(raw, "log.ndjson")
    assert [h for _, (h,) in headings(parsed)] == ["one", "three"]
    assert parsed.warnings == [
        "left out: not valid JSON on line 2: Expecting value at column 25 (the line ends early)"
    ]


def test_truncated_json_is_refused_naming_the_file_and_the_cut() -> None:
    raw = (FIXTURES / "simple.json").read_bytes()
    with pytest.raises(CorruptDocumentError, match=r"^cut\.json: not valid JSON: .*truncated\?"):
        parse_document(raw[: len(raw) // 2], "cut.json")


def test_json_nested_100000_levels_is_refused_with_the_depth_limit() -> None:
    raw = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(DocumentTooLargeError, match=rf"deep\.json: .*limit of {MAX_DEPTH} levels"):
        parse_document(raw, "deep.json")
    # Past our limit but within the JSON reader's: the same error, from our own walk.
    raw = b'{"a":' * 150 + b"1" + b"}" * 150
    with pytest.raises(DocumentTooLargeError, match=rf"limit of {MAX_DEPTH} levels"):
        parse_document(raw, "deep.json")


def test_a_txt_file_holding_json_stays_plain_text() -> None:
    parsed = parse_checked(b'{"a": {"b": "c"}}', "notes.txt")
    assert parsed.document.media_type == "text/plain"
    assert parsed.text_layer == '{"a": {"b": "c"}}'


def test_every_yaml_value_is_in_the_text_layer_under_its_key_path() -> None:
    raw = (FIXTURES / "simple.yaml").read_bytes()
    parsed = parse_checked(raw, "simple.yaml")
    assert parsed.document.media_type == "application/yaml"
    data = yaml.safe_load(raw)
    missing = [s for s in _strings(data) if s not in parsed.text_layer]
    assert missing == []
    lines = parsed.text_layer.splitlines()
    assert "xmas-fifth-day.partridges.location: a pear tree" in lines
    assert "calling-birds: huey, dewey, louie, fred" in lines
    assert headings(parsed) == [(1, ["xmas-fifth-day"])]


def test_yaml_documents_in_one_file_are_sections() -> None:
    parsed = parse_checked(b"a: 1\n---\nb: two\n", "multi.yml")
    assert headings(parsed) == [(1, ["document 1"]), (1, ["document 2"])]
    assert "b: two" in parsed.text_layer


_LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded() -> None:
    raw = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + _LAUGHS
    with pytest.raises(DocumentTooLargeError, match=rf"bomb\.yaml: .*{MAX_VALUES:,} values"):
        parse_document(raw.encode(), "bomb.yaml")


def test_yaml_tags_never_run_code_and_recursive_aliases_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    raw = f"a: !!python/object/apply:os.system ['touch {marker}']\n".encode()
    with pytest.raises(CorruptDocumentError, match=r"^tag\.yaml: not valid YAML: .*constructor"):
        parse_document(raw, "tag.yaml")
    assert not marker.exists()
    with pytest.raises(CorruptDocumentError, match=r"loop\.yaml: the alias \*x refers to a node"):
        parse_document(b"a: &x [1, *x]\n", "loop.yaml")
    with pytest.raises(DocumentTooLargeError, match=r"deep\.yaml: nested deeper"):
        parse_document(b"[" * 100_000 + b"]" * 100_000, "deep.yaml")
    with pytest.raises(CorruptDocumentError, match=r"^cut\.yaml: not valid YAML"):
        parse_document(b"a: [1, 2\nb: {c: ", "cut.yaml")


def test_json_with_comments_and_trailing_commas_is_read_with_a_warning() -> None:
    raw = (
        b'{\n  // Compiler options\n  "compilerOptions": {\n    "target": "es2020", /* modern */\n'
        b'    "paths": {"@/*": ["src/*"]},\n    "outDir": "dist//x",\n  },\n'
        b'  "include": ["src/**/*.ts",],\n}\n'
    )
    parsed = parse_checked(raw, "tsconfig.json")
    lines = parsed.text_layer.splitlines()
    assert "compilerOptions.outDir: dist//x" in lines  # a // inside a string is no comment
    assert "compilerOptions.paths.@/*: src/*" in lines
    assert "include: src/**/*.ts" in lines
    assert parsed.warnings == ["read as JSON with comments or trailing commas (JSONC)"]
    # Truncated JSON stays an error, comments or not.
    with pytest.raises(CorruptDocumentError, match=r"^cut\.json: not valid JSON: .*truncated\?"):
        parse_document(raw[:60], "cut.json")


def test_a_yaml_template_is_read_as_plain_text_with_a_warning() -> None:
    raw = (
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        b'  name: {{ include "app.fullname" . }}\n  labels:\n'
        b'    {{- include "app.labels" . | nindent 4 }}\nspec:\n'
        b"  {{- if not .Values.autoscaling.enabled }}\n  replicas: {{ .Values.replicaCount }}\n"
        b"  {{- end }}\n"
    )
    parsed = parse_checked(raw, "chart/templates/deployment.yaml")
    assert parsed.text_layer == raw.decode()
    assert len(parsed.warnings) == 1
    assert parsed.warnings[0].startswith("a template ({{ … }} or {% … %}), not YAML until rendered")


@pytest.mark.parametrize("name", ["pre-commit-config.yaml", "docker-compose-pgvector.yaml"])
def test_every_value_of_real_yaml_files_is_in_the_text_layer(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    parsed = parse_checked(raw, name)
    missing = [s for s in _strings(yaml.safe_load(raw)) if s not in parsed.text_layer]
    assert missing == []


def test_a_mapping_of_named_mappings_is_a_section_per_name() -> None:
    parsed = parse_checked((FIXTURES / "docker-compose-pgvector.yaml").read_bytes(), "dc.yaml")
    assert headings(parsed) == [(1, ["services"]), (2, ["services", "pgvector"])]
    service = next(s for s in parsed.sections if s.heading == "pgvector")
    assert "environment.POSTGRES_DB: elements" in service.text_in(parsed.text_layer).splitlines()
    hooks = parse_checked((FIXTURES / "pre-commit-config.yaml").read_bytes(), "p.yaml")
    assert headings(hooks) == [
        (1, ["repos"]),
        (2, ["repos", "repos[0]"]),
        (2, ["repos", "repos[1]"]),
    ]
    assert "hooks[0].args: --fix-only, --show-fixes" in hooks.text_layer.splitlines()


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_JSON_VALUES)
def test_any_json_value_keeps_the_contract_and_every_string_in_the_text(value: object) -> None:
    raw = json.dumps(value).encode()
    document = Document(
        source_key="any.json",
        media_type="application/json",
        size_bytes=len(raw),
        content_hash=content_hash(raw),
    )
    try:
        parsed = parse_json(raw, document)  # the parser alone: reading quality is not tested
    except EmptyDocumentError:
        assert not [s for s in _strings(value) if s.strip()]  # nothing to read: refused as empty
        return
    assert contract_violations(parsed) == []
    # A key of whitespace alone has nothing to read; as a heading it is written quoted with its
    # line breaks as spaces (``[" "]``), so only strings with a character to read are looked for,
    # and a key's whitespace runs (a tab, U+001F, which Python counts as whitespace too) as the
    # one space a heading line writes them with.
    text = " ".join(parsed.text_layer.split())
    missing = [s for s in _strings(value) if s.strip() and " ".join(s.split()) not in text]
    assert missing == []


def test_every_toml_value_is_in_the_text_layer_and_tables_are_sections() -> None:
    raw = (FIXTURES / "Cargo.toml").read_bytes()
    parsed = parse_checked(raw, "Cargo.toml")
    assert parsed.document.media_type == "application/toml"
    missing = [s for s in _strings(tomllib.loads(raw.decode())) if s not in parsed.text_layer]
    assert missing == []
    assert (1, ["package"]) in headings(parsed)
    assert "package.name: log" in parsed.text_layer.splitlines()
    with pytest.raises(CorruptDocumentError, match=r"^cut\.toml: not valid TOML"):
        parse_document(raw[: raw.index(b"=") + 1], "cut.toml")
