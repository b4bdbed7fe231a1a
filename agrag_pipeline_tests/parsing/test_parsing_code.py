"""Source code files (issue 23): the text as it is, its language in metadata, Python's classes
and functions as sections; unreadable Python and a 5 MB minified line still parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.detect import detect_media_type, undetected_reason
from agrag_pipeline.settings import DocumentsSettings
from agrag_pipeline.sources import scan_raw_root
from agrag_pipeline_tests.parsing.parsed_support import headings, parse_checked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "structured"


@pytest.mark.parametrize(
    ("name", "language"),
    [
        ("logger.py", "python"),
        ("fake.go", "go"),
        ("view.js", "javascript"),
        ("key.rs", "rust"),
        ("docker-build.sh", "shell"),
    ],
)
def test_source_files_keep_their_text_and_language(name: str, language: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    parsed = parse_checked(raw, f"src/{name}")
    assert parsed.text_layer == raw.decode()
    assert parsed.document.media_type == f"text/x-{language}"
    assert parsed.document.metadata["code_language"] == language


def test_definitions_of_real_javascript_go_and_rust_files_are_sections() -> None:
    go = parse_checked((FIXTURES / "fake.go").read_bytes(), "fake.go")
    assert headings(go) == [(1, ["func main()"])]
    view = parse_checked((FIXTURES / "view.js").read_bytes(), "lib/view.js")
    assert headings(view) == [
        (1, ["function View(name, options)"]),
        (1, ["function tryStat(path)"]),
    ]
    key = parse_checked((FIXTURES / "key.rs").read_bytes(), "src/kv/key.rs")
    found = headings(key)
    display = "impl<'k> fmt::Display for Key<'k>"
    assert (2, [display, "fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result"]) in found
    std = '#[cfg(feature = "std")] mod std_support'
    assert (3, [std, "impl ToKey for String", "fn to_key(&self) -> Key<'_>"]) in found
    # Attributes before an item open its section with it; the heading holds them.
    struct = "#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)] pub struct Key<'k>"
    assert (1, [struct]) in found
    tests = next(s for s in key.sections if s.heading == "#[cfg(test)] mod tests")
    assert tests.text_in(key.text_layer).startswith("#[cfg(test)]\nmod tests {")


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        (
            "a.ts",
            "import x from 'y';\n\nexport class A extends B {\n  @dec()\n  m(x: number): void {}\n"
            "}\nexport function f() {}\ninterface I { a: string }\n",
            [
                (1, ["export class A extends B"]),
                (2, ["export class A extends B", "@dec() m(x: number): void {}"]),
                (1, ["export function f() {}"]),
                (1, ["interface I { a: string }"]),
            ],
        ),
        (
            "App.tsx",
            "export function App() {\n  return <div>hi</div>;\n}\n",
            [(1, ["export function App()"])],
        ),
        (
            "k.cpp",
            "namespace n {\nclass K {\n public:\n  int f() { return 1; }\n};\n}\nclass Fwd;\n"
            "template<class T>\nT h(T x)\n{\n  return x;\n}\n",
            [
                (1, ["namespace n"]),
                (2, ["namespace n", "class K"]),
                (3, ["namespace n", "class K", "int f() { return 1; }"]),
                (1, ["template<class T> T h(T x)"]),
            ],
        ),
        (
            "k.h",
            "#ifndef K_H\n#define K_H\nstatic int *make(void) {\n  return 0;\n}\n#endif\n",
            [(1, ["static int *make(void)"])],
        ),
        (
            "K.java",
            "@A\npublic class K {\n  public K() {}\n  @Override\n  void m() {\n  }\n}\n",
            [
                (1, ["@A public class K"]),
                (2, ["@A public class K", "public K() {}"]),
                (2, ["@A public class K", "@Override void m()"]),
            ],
        ),
        (
            "k.rb",
            "module M\n  class K < B\n    def self.s; end\n    def m(x)\n    end\n  end\nend\n",
            [
                (1, ["module M"]),
                (2, ["module M", "class K < B"]),
                (3, ["module M", "class K < B", "def self.s; end"]),
                (3, ["module M", "class K < B", "def m(x)"]),
            ],
        ),
        ("run.sh", "#!/bin/sh\nusage() {\n  echo hi\n}\n", [(1, ["usage()"])]),
        ("q.sql", "SELECT 1;\n", []),
    ],
)
def test_definitions_of_each_language_are_sections(
    name: str, source: str, expected: list[tuple[int, list[str]]]
) -> None:
    assert headings(parse_checked(source.encode(), name)) == expected


def test_only_definitions_that_start_their_line_are_sections() -> None:
    source = "var a = 1; function f() {} function g() {}\nfunction ünï() {\n  return 'é';\n}\n"
    parsed = parse_checked(source.encode(), "mixed.js")
    assert headings(parsed) == [(1, ["function ünï()"])]
    section = parsed.sections[-1]
    assert section.text_in(parsed.text_layer) == "function ünï() {\n  return 'é';\n}"


def test_python_classes_and_functions_are_sections_headed_by_their_signature() -> None:
    source = (
        '"""Module."""\nimport os\n\n\n@dataclass\nclass Store:\n    """Keeps things."""\n\n'
        "    def get(self, key):\n        def inner():\n            return 1\n"
        "        return key\n\n"
        "    async def put(self, key):\n        pass\n\n\ndef main(\n    argv,\n):\n    return 0\n"
    )
    parsed = parse_checked(source.encode(), "store.py")
    assert headings(parsed) == [
        (1, ["@dataclass class Store"]),
        (2, ["@dataclass class Store", "def get(self, key)"]),
        (2, ["@dataclass class Store", "async def put(self, key)"]),
        (1, ["def main( argv, )"]),
    ]
    store = next(s for s in parsed.sections if s.heading == "@dataclass class Store")
    assert store.text_in(parsed.text_layer).startswith("@dataclass\nclass Store:")
    get = next(s for s in parsed.sections if s.heading == "def get(self, key)")
    assert "def inner" in get.text_in(parsed.text_layer)  # nested functions stay in their body
    assert parsed.sections[0].text_in(parsed.text_layer) == '"""Module."""\nimport os'


def test_python_that_ast_cannot_read_is_one_section_with_a_warning() -> None:
    parsed = parse_checked(b"print 'hello'\n\ndef f():\n    pass\n", "legacy.py")
    assert [s.heading for s in parsed.sections] == [None]
    assert parsed.warnings and "not read as python (line 1): SyntaxError" in parsed.warnings[0]


def test_a_5_mb_minified_javascript_line_parses_as_one_section_within_budget() -> None:
    body = ";".join(f'function f{i}(x){{return x*{i}+"s{i}"}}' for i in range(160_000))
    raw = body.encode()[: 5 * 1024 * 1024]
    assert len(raw) == 5 * 1024 * 1024 and b"\n" not in raw
    parsed = parse_document(raw, "dist/app.bundle.js", time_budget_s=60)
    assert parsed.document.metadata["code_language"] == "javascript"
    assert len(parsed.sections) == 1 and parsed.sections[0].end == len(raw)


def test_structured_kinds_decide_which_kinds_are_documents_and_built_files_are_left_out(
    tmp_path: Path,
) -> None:
    files = {
        "src/app.py": "def main():\n    return 0\n",
        "src/app.min.js": "var a=1;",
        "node_modules/lib/index.js": "module.exports = 1;\n",
        "venv/lib/python3.11/site-packages/x/y.py": "X = 1\n",
        "config/settings.yaml": "mode: fast\n",
        "data/export.json": '{"a": 1}',
        "notes/run.ipynb": '{"cells": []}',
        "docs/feed.xml": "<feed><title>t</title></feed>",
        "package-lock.json": "{}",
    }
    for key, text in files.items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_text(text, encoding="utf-8")
    found = scan_raw_root(tmp_path, DocumentsSettings())
    assert found.keys == [
        "config/settings.yaml",
        "data/export.json",
        "docs/feed.xml",
        "notes/run.ipynb",
        "src/app.py",
    ]
    only_data = scan_raw_root(tmp_path, DocumentsSettings(structured_kinds=["json", "yaml"]))
    assert only_data.keys == ["config/settings.yaml", "data/export.json"]
    reasons = {p.source_key: p.reason for p in only_data.skipped}
    assert reasons["src/app.py"] == (
        "a source code file, and 'code' is not in documents.structured_kinds"
    )
    assert reasons["notes/run.ipynb"] == (
        "a Jupyter notebook, and 'notebook' is not in documents.structured_kinds"
    )
    assert reasons["src/app.min.js"] == "excluded by the documents.exclude pattern '*.min.js'"


def test_binary_data_behind_a_code_extension_is_skipped_saying_why() -> None:
    video = (b"\x47" + bytes(187)) * 40  # an MPEG transport stream, also named .ts
    assert detect_media_type("clips/intro.ts", video) is None
    assert undetected_reason("clips/intro.ts", video) == (
        "binary data with extension '.ts', which is not source code"
    )
