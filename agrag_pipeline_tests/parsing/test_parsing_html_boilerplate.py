"""Generated documentation pages: their navigation, headers and footers stay out of the text.

The fixtures are real pages of texinfo, Sphinx, MkDocs (two themes), Javadoc and rustdoc
(``fixtures/html_docs``, sources and licences in ``fixtures/README.md``)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "html_docs"
RUST_BOOK = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "markdown" / "rust-book"
_WORD = re.compile(r"[^\W_]+")


def _parse(name: str) -> ParsedDocument:
    parsed = parse_document((DOCS / name).read_bytes(), name)
    assert contract_violations(parsed) == []
    return parsed


def _headings(parsed: ParsedDocument) -> list[str]:
    return [s.heading for s in parsed.sections if s.heading is not None]


def _words(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _WORD.findall(text))


def _share(part: Counter[str], whole: Counter[str]) -> float:
    """Share of the words of ``part`` found in ``whole`` (counts matched)."""
    return sum((part & whole).values()) / max(1, sum(part.values()))


@pytest.mark.parametrize(
    ("page", "navigation", "body", "headings"),
    [
        (
            "texinfo_libffi_multiple_abis.html",
            ["Next:", "Previous:", "Up:", "[Index]", "The Closure API"],
            ["A given platform may provide multiple different ABIs at once.", "platform-specific"],
            ["2.4 Multiple ABIs"],
        ),
        (
            "texinfo_libffi_using.html",  # a chapter page: its menu is its content, kept
            ["Next:", "Memory Usage", "What is libffi?"],
            ["- The Basics\n- Simple Example\n- Types"],
            ["2 Using libffi"],
        ),
        (
            "sphinx_idle_help.html",
            [
                "Table of Contents\n- IDLE",
                "Previous topic",
                "Report a Bug",
                "modules |",
                "© Copyright",
            ],
            ["IDLE is Python’s Integrated Development and Learning Environment.", "Lib/idlelib"],
            ["IDLE", "Menus", "File menu (Shell and Editor)"],
        ),
        (
            "rustdoc_std_thread_spawn.html",
            ["Skip to main content", "Copy item path", "Sections", "In std::thread", "§"],
            ["Spawns a new thread, returning a JoinHandle for it.", "let computation"],
            ["Function spawn", "Panics", "Examples", "Notes"],
        ),
        (
            "javadoc_pond.html",
            ["Skip navigation links", "SEARCH", "Summary:", "Help", "All Methods"],
            ["A pond where ducks gather to paddle and feed.", "Counts the ducks paddling"],
            ["Class Pond", "Constructor Summary", "Method Summary"],
        ),
        (
            "mkdocs_comments.html",
            ["Previous", "Keyboard Shortcuts", "Documentation built with MkDocs", "Functions"],
            ["Here’s a simple comment:", "documentation comments"],
            ["Comments"],
        ),
        (
            "mkdocs_material_comments.html",
            ["Skip to content", "Initializing search", "Made with", "Functions", "¶"],
            ["Here’s a simple comment:", "documentation comments"],
            ["Comments", "Comments"],
        ),
    ],
)
def test_generated_documentation_navigation_left_out_and_body_kept(
    page: str, navigation: list[str], body: list[str], headings: list[str]
) -> None:
    parsed = _parse(page)
    text = parsed.text_layer
    for furniture in navigation:
        assert furniture not in text, f"{page}: navigation {furniture!r} kept"
    for sentence in body:
        assert sentence in text, f"{page}: body {sentence!r} lost"
    assert _headings(parsed)[: len(headings)] == headings


@pytest.mark.parametrize("page", ["mkdocs_comments.html", "mkdocs_material_comments.html"])
def test_mkdocs_page_text_is_its_markdown_source_and_nothing_else(page: str) -> None:
    """The page was built from the Rust book's chapter on comments: every word of ours comes
    from it (no menu, search box or footer words), and all of its words are ours."""
    source = (RUST_BOOK / "ch03-04-comments.md").read_text(encoding="utf-8")
    # Markdown that is not text on the page: link targets and reference links, HTML tags and
    # comments, a code fence's language.
    source = re.sub(r"\]\([^)]*\)|\]\[[^\]]*\]|^\[[^\]]*\]:.*$", "]", source, flags=re.M)
    source = re.sub(r"<[^>]*>|^```\w*", "", source, flags=re.M)
    ours, theirs = _words(_parse(page).text_layer), _words(source)
    assert _share(ours, theirs) >= 0.97, "words that are not the chapter's: navigation kept"
    assert _share(theirs, ours) >= 0.97, "words of the chapter lost"


def test_navigation_found_by_structure_not_by_site() -> None:
    """Unknown class names, one page: a rel=next/prev bar, a breadcrumb before the title, a
    top bar repeated at the bottom and a permalink are left out; links in the body stay."""
    html = (
        '<div class="crumbs"><a href="/">Home</a> / <a href="/guide/">Guide</a></div>'
        '<h1>Ducks<a class="x" href="#ducks">#</a></h1>'
        '<div class="y">Next: <a href="b.html" rel="next">Geese</a>, Up: <a href="/" rel="up">'
        "Birds</a></div>"
        '<p>Ducks paddle; see <a href="geese.html">geese</a> for the larger birds.</p>'
        '<div><a href="a.html">Alpha</a> <a href="b.html">Beta</a></div>'
        "<p>They eat weeds.</p>"
        '<div><a href="a.html">Alpha</a> <a href="b.html">Beta</a></div>'
    )
    parsed = parse_document(html.encode(), "page.html")
    assert parsed.text_layer == (
        "Ducks\n\nDucks paddle; see geese for the larger birds.\n\nAlpha Beta\n\nThey eat weeds."
    )
    assert _headings(parsed) == ["Ducks"]


def test_main_content_preferred_and_header_of_an_article_kept() -> None:
    html = (
        "<header><p>Site banner</p></header><nav><a href='/'>Home</a></nav>"
        "<main><article><header><h1>Title</h1></header><p>Body.</p><p hidden>Not shown.</p>"
        "<footer><p>Article footnote.</p></footer></article></main>"
        "<aside role='complementary'><p>Side</p></aside><footer><p>Copyright</p></footer>"
    )
    assert parse_document(html.encode(), "p.html").text_layer == (
        "Title\n\nBody.\n\nArticle footnote."
    )
    with_hidden_main = "<main hidden><p>Other page</p></main>" + html
    assert parse_document(with_hidden_main.encode(), "p.html").text_layer == (
        "Title\n\nBody.\n\nArticle footnote."
    )
    no_main = html.replace("<main>", "<div>").replace("</main>", "</div>")
    assert parse_document(no_main.encode(), "p.html").text_layer == (
        "Title\n\nBody.\n\nArticle footnote."
    )


def test_a_hidden_tab_panel_is_content_read_after_its_tabs_label() -> None:
    # sphinx-tabs (the Flask guide): button tabs, every panel but the first hidden until chosen.
    sphinx_tabs = (
        "<h1>Configuration</h1><p>Set it in the shell:</p>"
        "<div role='tablist'><button role='tab' id='t1' aria-controls='p1'>Bash</button>"
        "<button role='tab' id='t2' aria-controls='p2'>Fish</button></div>"
        "<div role='tabpanel' id='p1' aria-labelledby='t1'><pre>$ export APP=1</pre></div>"
        "<div role='tabpanel' id='p2' aria-labelledby='t2' hidden='true'>"
        "<pre>$ set -x APP 1</pre></div><p hidden>Not shown.</p>"
    )
    assert parse_document(sphinx_tabs.encode(), "tabs.html").text_layer == (
        "Configuration\n\nSet it in the shell:\n\nBash\n\n$ export APP=1\n\nFish\n\n$ set -x APP 1"
    )
    # Docusaurus: the tabs are list items, read where they stand; only the panels were lost.
    docusaurus = (
        "<ul role='tablist'><li role='tab'>npm</li><li role='tab'>Yarn</li></ul>"
        "<div><div role='tabpanel'><pre>npm install x</pre></div>"
        "<div role='tabpanel' hidden><pre>yarn add x</pre></div></div>"
    )
    assert parse_document(docusaurus.encode(), "install.html").text_layer == (
        "- npm\n- Yarn\n\nnpm install x\n\nyarn add x"
    )
