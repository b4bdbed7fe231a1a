"""Jupyter notebooks (issue 23): Markdown cells as text with their headings as sections, code
cells and their text outputs as fenced code, images left out; a cut notebook refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline_tests.parsing.parsed_support import headings, parse_checked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "structured"


def _joined(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value


def test_every_cell_line_and_text_output_of_a_notebook_is_in_the_text_layer() -> None:
    raw = (FIXTURES / "test4.ipynb").read_bytes()
    parsed = parse_checked(raw, "test4.ipynb")
    assert parsed.document.media_type == "application/x-ipynb+json"
    notebook = json.loads(raw)
    wanted = []
    for cell in notebook["cells"]:
        wanted += _joined(cell["source"]).splitlines()
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            wanted += _joined(text).splitlines()
    missing = [line for line in wanted if line.strip() and line not in parsed.text_layer]
    assert missing == []
    assert "iVBORw0KGgo" not in parsed.text_layer  # the PNG output is left out


def test_notebook_markdown_headings_are_sections_and_code_is_fenced() -> None:
    parsed = parse_checked((FIXTURES / "test4.ipynb").read_bytes(), "test4.ipynb")
    assert headings(parsed) == [
        (1, ["nbconvert latex test"]),
        (2, ["nbconvert latex test", "Printed Using Python"]),
        (2, ["nbconvert latex test", "Pyout"]),
        (3, ["nbconvert latex test", "Pyout", "Image"]),
    ]
    printed = next(s for s in parsed.sections if s.heading == "Printed Using Python")
    assert printed.text_in(parsed.text_layer) == (
        "## Printed Using Python\n\n"
        '```\nfrom __future__ import annotations\n\nprint("hello")\n```\n\n'
        "```\nhello\n```"
    )


def test_notebook_language_errors_and_fences_inside_code() -> None:
    notebook = {
        "nbformat": 4,
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "cells": [
            {"cell_type": "markdown", "source": ["# Results\n", "Run it."]},
            {
                "cell_type": "code",
                "source": 'doc = """\n```\n# not a heading\n```\n"""\n1 / 0',
                "outputs": [
                    {
                        "output_type": "error",
                        "ename": "ZeroDivisionError",
                        "evalue": "division by zero",
                        "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
                    }
                ],
            },
        ],
    }
    parsed = parse_checked(json.dumps(notebook).encode(), "run.ipynb")
    assert parsed.document.metadata["notebook_language"] == "python"
    assert headings(parsed) == [(1, ["Results"])]
    assert "````python\ndoc = " in parsed.text_layer
    assert "ZeroDivisionError: division by zero" in parsed.text_layer
    assert "\x1b" not in parsed.text_layer


def test_a_truncated_notebook_is_refused_naming_the_file() -> None:
    raw = (FIXTURES / "test4.ipynb").read_bytes()
    with pytest.raises(CorruptDocumentError, match=r"^cut\.ipynb: not a notebook: not valid JSON"):
        parse_document(raw[:5000], "cut.ipynb")
    with pytest.raises(CorruptDocumentError, match=r"^x\.ipynb: not a notebook: no cells"):
        parse_document(b'{"a": 1}', "x.ipynb")
