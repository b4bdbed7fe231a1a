"""Kinds of structured text and source code files, by extension (standard library only).

One table for the three places that need it: ``parsing.detect`` (which parser), the parsers
(a source file's language) and ``settings.DocumentsSettings.structured_kinds`` (which kinds
count as documents), so the setting names exactly the files those parsers read.
"""

from __future__ import annotations

from typing import Literal

StructuredKind = Literal["json", "yaml", "toml", "xml", "notebook", "code"]

#: Extension (lower case, with the dot) -> language name, for source code files.
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".swift": "swift",
    ".rb": "ruby",
    ".php": "php",
    ".pl": "perl",
    ".pm": "perl",
    ".lua": "lua",
    ".r": "r",
    ".jl": "julia",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".ps1": "powershell",
    ".bat": "batch",
    ".cmd": "batch",
    ".sql": "sql",
    ".vue": "vue",
    ".svelte": "svelte",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".clj": "clojure",
    ".groovy": "groovy",
    ".gradle": "groovy",
    ".tf": "terraform",
    ".proto": "protobuf",
    ".graphql": "graphql",
    ".f90": "fortran",
    ".css": "css",
    ".scss": "scss",
    ".less": "less",
    ".vb": "visualbasic",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    ".pas": "pascal",
    ".zig": "zig",
    ".nim": "nim",
    ".tcl": "tcl",
    ".el": "elisp",
    ".lisp": "lisp",
    ".scm": "scheme",
    ".rkt": "racket",
    ".cmake": "cmake",
    ".mk": "make",
    # Configuration and patches: code's companions, excluded with it (``structured_kinds``).
    ".ini": "ini",
    ".cfg": "ini",
    ".conf": "config",
    ".properties": "properties",
    ".diff": "diff",
    ".patch": "diff",
    # TeX packages and classes, BibTeX databases and styles: text a LaTeX project keeps.
    ".sty": "tex",
    ".cls": "tex",
    ".dtx": "tex",
    ".bib": "bibtex",
    ".bst": "bibtex-style",
}

#: Kind -> the extensions of its files.
KIND_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "json": (".json", ".ndjson", ".jsonl"),
    "yaml": (".yaml", ".yml"),
    "toml": (".toml",),
    "xml": (".xml", ".xsd", ".xsl", ".xslt", ".rss", ".atom"),
    "notebook": (".ipynb",),
    "code": tuple(CODE_LANGUAGES),
}
#: Every kind, in the order the settings list them by default.
STRUCTURED_KINDS: tuple[str, ...] = tuple(KIND_EXTENSIONS)

_KIND_OF_EXTENSION = {ext: kind for kind, exts in KIND_EXTENSIONS.items() for ext in exts}
_WORDS = {
    "json": "a JSON file",
    "yaml": "a YAML file",
    "toml": "a TOML file",
    "xml": "an XML file",
    "notebook": "a Jupyter notebook",
    "code": "a source code file",
}


def kind_of(source_key: str) -> str | None:
    """The structured kind of the file ``source_key`` names, by its extension (None: none)."""
    name = source_key.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot <= 0:
        return None
    return _KIND_OF_EXTENSION.get(name[dot:].lower())


def kind_words(kind: str) -> str:
    """``kind`` in words ("a source code file")."""
    return _WORDS.get(kind, f"a {kind} file")


__all__ = [
    "CODE_LANGUAGES",
    "KIND_EXTENSIONS",
    "STRUCTURED_KINDS",
    "StructuredKind",
    "kind_of",
    "kind_words",
]
