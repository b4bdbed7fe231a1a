"""A MediaWiki page (``.wiki``) is read as the rendered page reads: headings, paragraphs,
lists, tables with spans, link labels; templates, references and category links left out."""

from __future__ import annotations

import time

import pytest

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import DocumentTooLargeError

#: A page written for these tests in Wikipedia's style.
PAGE = """{{Infobox software | name = Widget | license = MIT}}
'''Widget''' is a [[Server (computing)|server]] for [[widget]]s, written in
[[Python (programming language)|Python]].<ref>{{cite web|url=https://example.org|title=Home}}</ref>
__TOC__
== History ==
Started in 2019 at [https://example.org Example Corp]; see https://example.org/history.
<!-- editors: keep this short -->

=== Releases ===
* 1.0 &ndash; first release
* 2.0 with ''plugins''
# numbered step

== Ports ==
{| class="wikitable"
|+ Default ports
! Service !! Port
|-
| rowspan="2" | widgetd || 8080
|-
| 8443
|}

 widgetd --port 8080
 widgetd --check

<syntaxhighlight lang="python">
if a &lt; b:
    run()
</syntaxhighlight>

[[Category:Servers]]
[[fr:Widget]]
"""


def test_a_wiki_page_reads_as_its_rendered_text_under_its_headings() -> None:
    parsed = parse_document(PAGE.encode(), "wiki/Widget.wiki")
    assert parsed.document.media_type == "text/x-mediawiki"
    paths = list(dict.fromkeys(" > ".join(s.heading_path) for s in parsed.sections))
    assert paths == ["", "History", "History > Releases", "Ports"]
    text = parsed.text_layer
    assert text.startswith("Widget is a server for widgets, written in Python.\n\nHistory\n\n")
    assert "Started in 2019 at Example Corp; see https://example.org/history." in text
    assert "- 1.0 – first release\n- 2.0 with plugins\n- numbered step" in text
    assert "Default ports\n\n| Service | Port |\n| - | - |\n" in text
    assert "| widgetd | 8080 |\n| widgetd | 8443 |" in text  # the rowspan spread
    assert "widgetd --port 8080\nwidgetd --check" in text
    assert "if a < b:" in text
    for left_out in ("Infobox", "MIT", "cite web", "Home", "__TOC__", "editors", "Category"):
        assert left_out not in text, left_out
    assert "fr:" not in text and "Servers" not in text


@pytest.mark.parametrize(
    ("shape", "text"),
    [
        ("table openings", "{|\n" * 20_000),
        ("list markers", "\n".join("*" * 200 + " x" for _ in range(2_000))),
    ],
)
def test_a_page_shaped_to_stall_the_wiki_tokenizer_is_refused_at_once(
    shape: str, text: str
) -> None:
    # The tokenizer is C code the parse deadline cannot stop: these took 15 s and 70 s.
    started = time.monotonic()
    with pytest.raises(DocumentTooLargeError, match=shape) as error:
        parse_document(text.encode(), "wiki/hostile.wiki")
    assert str(error.value).startswith("wiki/hostile.wiki: ")
    assert time.monotonic() - started < 5


def test_wiki_code_keeps_its_indentation_apart_from_the_prose_around_it() -> None:
    page = (
        "== Usage ==\n"
        "Call it like this:\n"
        " def run(x):\n"
        "     if x:\n"
        "         return 1\n"
        " \n"
        "     return 2\n"
        "{{Note}} A line after a template is prose.\n"
        '<syntaxhighlight lang="c">\n'
        "int main() {\n"
        "\treturn a &lt; b;\n"
        "}\n"
        "</syntaxhighlight>\n"
        "Use <code>run  ()</code> inline.\n"
        ": An indented remark, not code.\n"
        "Ports below 1024 need root.<ref>On Linux; see capabilities(7).</ref>\n"
    )
    text = parse_document(page.encode(), "wiki/Usage.wiki").text_layer
    assert text == (
        "Usage\n\nCall it like this:\n\n"
        "def run(x):\n    if x:\n        return 1\n\n    return 2\n\n"
        "A line after a template is prose.\n\n"
        "int main() {\n        return a < b;\n}\n\n"
        "Use run () inline.\n\nAn indented remark, not code.\n"
        "Ports below 1024 need root. (On Linux; see capabilities(7).)"
    )
