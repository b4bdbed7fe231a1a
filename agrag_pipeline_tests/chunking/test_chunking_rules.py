"""The packing rules of issue 4, each on a small document built for it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from agrag_pipeline.chunking.chunker import CHUNKER_NAME, CHUNKER_VERSION, StructureChunker
from agrag_pipeline.chunking.errors import ChunkingError
from agrag_pipeline.chunking.settings import ChunkerSettings
from agrag_pipeline.chunking.tokens import TokenCounter
from agrag_pipeline.fingerprints import chunker_hash
from agrag_pipeline.models import Chunk, Document, PageBox, Section
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.parsed import LayoutSpan, ParsedDocument

WORDS = ["ownership", "borrowing", "lifetimes", "traits", "generics", "closures", "iterators"]


def prose(n_words: int, seed: int = 0) -> str:
    """Sentences of real words, so token counts are predictable in kind if not in number."""
    words = [WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n_words)]
    return " ".join(w + ("." if i % 12 == 11 else "") for i, w in enumerate(words)) + "."


def chunks_of(
    markdown: str, counter: TokenCounter, **settings: object
) -> tuple[ParsedDocument, list[Chunk]]:
    parsed = parse_document(markdown.encode("utf-8"), "rules.md")
    chunker = StructureChunker(ChunkerSettings(**settings), counter)  # type: ignore[arg-type]
    return parsed, chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)


def embedded_of(chunks: list[Chunk]) -> str:
    """Everything the chunks embed, one chunk after another."""
    return "\n".join(c.contextual_text for c in chunks)


def test_long_table_is_split_by_rows_with_the_header_repeated(counter: TokenCounter) -> None:
    header = "| crate | version | purpose |\n|---|---|---|"
    rows = [f"| crate{i} | 1.{i}.0 | {prose(6, i)} |" for i in range(60)]
    parsed, chunks = chunks_of(
        f"# Deps\n\n{prose(20)}\n\n{header}\n" + "\n".join(rows) + "\n", counter
    )
    tables = [c for c in chunks if c.content_kind == "table"]
    assert len(tables) > 1
    assert tables[0].provenance.repeated_header is None and tables[0].text.startswith(header)
    seen_rows = []
    for c in tables:
        assert c.text.startswith(header + "\n")
        assert c.provenance.extract(parsed.text_layer) == c.text
        body = c.text[len(header) + 1 :].split("\n")
        assert all(line.startswith("| crate") for line in body)
        seen_rows.extend(body)
    for c in tables[1:]:
        span = c.provenance.repeated_header
        assert span is not None and parsed.text_layer[span.start : span.end] == header
    assert seen_rows == rows
    assert all(c.content_kind == "text" for c in chunks if c not in tables)


def test_table_rows_per_chunk_is_honoured(counter: TokenCounter) -> None:
    rows = [f"| {i} | x |" for i in range(10)]
    _, chunks = chunks_of(
        "| n | v |\n|---|---|\n" + "\n".join(rows) + "\n", counter, table_rows_per_chunk=3
    )
    assert [c.text.count("\n") - 1 for c in chunks] == [3, 3, 3, 1]


def test_code_fence_that_fits_is_never_split(counter: TokenCounter) -> None:
    fence = '```rust\nfn main() {\n\n    let x = 5;\n\n    println!("{x}");\n}\n```'
    doc = f"# Ch\n\n{prose(120)}\n\n{fence}\n\n{prose(120, 3)}\n"
    _, chunks = chunks_of(doc, counter, target_tokens=100, max_tokens=128, min_tokens=10)
    assert len(chunks) > 2
    assert [c for c in chunks if fence in c.text]
    assert all(c.text.count("```") in (0, 2) for c in chunks)


def test_code_fence_longer_than_a_chunk_is_split_at_lines(counter: TokenCounter) -> None:
    lines = [f"    let value_{i} = compute({i});" for i in range(80)]
    fence = "```rust\n" + "\n".join(lines) + "\n```"
    parsed, chunks = chunks_of(f"# Code\n\n{fence}\n", counter, target_tokens=100, max_tokens=128)
    assert len(chunks) > 1
    for c in chunks:
        assert parsed.text_layer[c.provenance.end] == "\n"  # every cut is at a line end


def test_a_word_is_never_split(counter: TokenCounter) -> None:
    text = " ".join(["incomprehensibilities"] * 400)
    _parsed, chunks = chunks_of(text, counter, target_tokens=50, max_tokens=64, min_tokens=0)
    assert len(chunks) > 5
    for c in chunks:
        assert set(c.text.split()) == {"incomprehensibilities"}


def test_overlap_repeats_whole_words_within_the_configured_tokens(counter: TokenCounter) -> None:
    parsed, chunks = chunks_of(
        prose(600), counter, target_tokens=60, max_tokens=80, min_tokens=0, overlap_tokens=7
    )
    assert len(chunks) > 3
    for prev, c in itertools.pairwise(chunks):
        shared = parsed.text_layer[c.provenance.start : prev.provenance.end]
        assert prev.text.endswith(shared) and c.text.startswith(shared)
        assert 0 < counter.count(shared) <= 7
        # One more word from the previous chunk would exceed the overlap.
        before = prev.text[: len(prev.text) - len(shared)].split()[-1]
        assert counter.count(before + " " + shared) > 7


def test_small_sibling_sections_merge_under_their_parent(counter: TokenCounter) -> None:
    doc = (
        "# Guide\n\n## Install\n\nRun cargo.\n\n"
        "## Build\n\nRun cargo build.\n\n## Test\n\nRun it.\n"
    )
    parsed, chunks = chunks_of(doc, counter)
    assert len(chunks) == 1
    assert chunks[0].heading_path == ["Guide"]
    assert chunks[0].section_ids == [s.id for s in parsed.sections]
    # The label says "Guide"; the text starts below that heading, with the children's own.
    assert chunks[0].text == doc.strip().removeprefix("# Guide\n\n")
    assert chunks[0].contextual_text == "Guide\n\n" + chunks[0].text


def test_no_merge_when_min_tokens_is_zero(counter: TokenCounter) -> None:
    doc = "# Guide\n\n## Install\n\nRun cargo.\n\n## Build\n\nRun cargo build.\n"
    parsed, chunks = chunks_of(doc, counter, min_tokens=0)
    assert len(parsed.sections) == 3
    # "# Guide" alone is no chunk: its heading lives on in the labels below it.
    assert [c.heading_path for c in chunks] == [["Guide", "Install"], ["Guide", "Build"]]
    assert [c.text for c in chunks] == ["Run cargo.", "Run cargo build."]
    assert chunks[0].contextual_text == "Guide > Install\n\nRun cargo."


MARKUP_DOC = """---
title: Cargo Guide
---

<!-- Old headings. Do not remove or links may break. -->

<a id="getting-started"></a>

Some intro about cargo and crates before any heading.

## Installing

Run the <span class="cmd">installer</span> script. <a id="later"></a>Then restart.

<!-- a note for editors -->

<a id="next-anchor"></a>

## Building

Run cargo build to compile.

[book]: https://doc.rust-lang.org/book/
"""


def test_markup_only_text_is_never_a_chunk_and_never_embedded(counter: TokenCounter) -> None:
    _, chunks = chunks_of(MARKUP_DOC, counter, min_tokens=0)
    assert [c.heading_path for c in chunks] == [["Cargo Guide"], ["Installing"], ["Building"]]
    intro, install, build = chunks
    # Front matter, the comment and the anchor before the intro are no part of any chunk.
    assert intro.text == "Some intro about cargo and crates before any heading."
    # Markup at a chunk's end is trimmed off; markup inside stays in the text, not embedded.
    assert install.text == (
        'Run the <span class="cmd">installer</span> script. <a id="later"></a>Then restart.'
    )
    assert install.contextual_text == "Installing\n\nRun the installer script. Then restart."
    assert build.text == "Run cargo build to compile."  # the link reference definition is gone
    for c in chunks:
        assert "<" not in c.contextual_text and "---" not in c.contextual_text


RAW_HTML_DOC = """## Famous ducks

Here is a table:

<table>
  <tr><th>Character</th><th>Name in German</th></tr>
  <tr>
    <td>Scrooge McDuck</td>
    <td>Dagobert Duck</td>
  </tr>
</table>

<Listing number="15-7" caption="Using `Box<T>` and `Rc<T>`">

<script>var hidden = "no reader sees this";</script>

<figure><img src="a.svg"><figcaption>Figure 1: Pinning a future</figcaption></figure>

See [the book][book]<!-- ignore
--> and its appendix.

[book]: https://doc.rust-lang.org/book/
"""


def test_raw_html_in_markdown_embeds_the_text_a_reader_sees_and_no_tag(
    counter: TokenCounter,
) -> None:
    # A raw HTML table's cells, a figure's caption: shown by every renderer, so embedded; the
    # table's rows as pipe rows (``markdown_html_tables``), not "CharacterName in German". A
    # tag whose quoted attribute holds "<T>", a script and a comment are markup whole; a
    # comment over a line end inside a sentence joins nothing apart.
    _, chunks = chunks_of(RAW_HTML_DOC, counter)
    embedded = embedded_of(chunks)
    lines = "\n".join(line.strip() for line in embedded.splitlines())
    assert "| Character | Name in German |\n| - | - |\n| Scrooge McDuck | Dagobert Duck |" in lines
    assert "Figure 1: Pinning a future" in embedded
    assert "See the book and its appendix." in embedded
    for markup in ("<", "Listing", "caption=", "hidden", "ignore"):
        assert markup not in embedded, markup


LINKS_DOC = """# Guide to [Rust](https://www.rust-lang.org)

Read [the *book*][book] and see ![the logo](logo.png "Logo"), or [Cargo] [][empty].
Mail <me@example.com>, or visit <https://example.com/a/b>.

| Tool | Where |
|---|---|
| cargo | [crates.io](https://crates.io/search?q=serde) |

- item [one](https://one.example.org/page.html)
  [two](ch02-00-two.md)

Code keeps its brackets: `[not a link](in code)`.

[book]: https://doc.rust-lang.org/book/
[Cargo]: https://doc.rust-lang.org/cargo/
[empty]: https://example.com/empty
"""


def test_a_markdown_links_destination_is_not_embedded_and_its_text_is(
    counter: TokenCounter,
) -> None:
    # A reader sees a link's text (an image's alternative text, an autolink's address), never
    # its destination, title or reference label: those are markup, like an HTML file's href.
    # The chunk's text and offsets still hold the source as written.
    _, chunks = chunks_of(LINKS_DOC, counter)
    embedded = embedded_of(chunks)
    assert "Guide to Rust\n\nRead the *book* and see the logo, or Cargo ." in embedded
    assert "Mail me@example.com, or visit https://example.com/a/b." in embedded
    assert "| cargo | crates.io |" in embedded
    assert "- item one\ntwo" in embedded  # words a line apart stay apart
    assert "`[not a link](in code)`" in embedded
    outside_code = embedded.replace("`[not a link](in code)`", "")
    for markup in ("](", "][", "www.rust-lang", "logo.png", "Logo", "one.example", "ch02", "<"):
        assert markup not in outside_code, markup
    assert any("[the *book*][book]" in c.text for c in chunks)
    assert all(c.heading_path[0] == "Guide to Rust" for c in chunks)
    # A chunk that begins and ends with a link keeps it whole in its text.
    (contents,) = chunks_of("# Contents\n\n[Foreword](a.md)\n[Introduction](b.md)\n", counter)[1]
    assert contents.text == "[Foreword](a.md)\n[Introduction](b.md)"
    assert contents.contextual_text == "Contents\n\nForeword\nIntroduction"


ENTITIES_DOC = r"""# AT&amp;T \#1 guide

AT&amp;T&#8217;s `&amp;` x&nope;y, a snake\_case name and a literal \\ backslash.

| Operator | Meaning |
|---|---|
| <code>a &vert; b</code> | bitwise &lt;OR&gt; \| pipe |

    &amp; in an indented code block
"""


def test_entity_references_embed_as_their_character_and_escapes_without_backslash(
    counter: TokenCounter,
) -> None:
    # What a reader of the rendered file sees: "&amp;" is "&", "\_" is "_", "\\" is "\";
    # in code both stay as written, and the chunk's text keeps the source.
    _, chunks = chunks_of(ENTITIES_DOC, counter)
    text, table, code = chunks
    assert text.heading_path == ["AT&T #1 guide"]
    assert text.contextual_text == (
        "AT&T #1 guide\n\nAT&T’s `&amp;` x&nope;y, a snake_case name and a literal \\ backslash."
    )
    assert text.text.startswith("AT&amp;T&#8217;s")
    assert table.contextual_text.endswith("| a | b | bitwise <OR> | pipe |")
    assert code.contextual_text.endswith("&amp; in an indented code block")
    for c in chunks:  # counted as embedded, not as written
        embedded_tokens = counter.count(c.contextual_text) + counter.special_tokens
        assert c.metadata["token_count"] == embedded_tokens
    stored = Chunk.model_validate_json(text.model_dump_json())
    assert stored.contextual_text == text.contextual_text
    # In a raw HTML block a browser shows the characters too; a tag's attribute and a comment
    # are markup whatever they hold.
    block = '<p title="&amp;">Fish &amp; chips &#x2192; &bogus;</p>\n\n<!-- &lt;! -->\n'
    (html_chunk,) = chunks_of(f"# Menu\n\n{block}", counter)[1]
    assert html_chunk.contextual_text == "Menu\n\nFish & chips → &bogus;"


def test_a_notebooks_markdown_cells_embed_what_a_reader_sees_and_its_code_as_written(
    counter: TokenCounter,
) -> None:
    # A notebook's text layer is Markdown (its cells, code fenced): the markup of its markdown
    # cells is left out as in a Markdown file's, and code keeps every bracket and tag.
    cells = [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": [
                "# Cleaning the survey\n",
                "\n",
                "Columns follow [the codebook](https://example.org/codebook.pdf) <!-- v2 -->"
                " and <b>never</b> change.\n",
            ],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 1,
            "outputs": [],
            "source": ['html = "<b>[x](y)</b>"  # <!-- kept -->'],
        },
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    parsed = parse_document(json.dumps(notebook).encode(), "survey.ipynb")
    chunker = StructureChunker(ChunkerSettings(), counter)
    chunks = chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
    embedded = embedded_of(chunks)
    assert "Columns follow the codebook and never change." in embedded
    assert 'html = "<b>[x](y)</b>"  # <!-- kept -->' in embedded
    assert "codebook.pdf" not in embedded and "v2" not in embedded


def test_preamble_before_the_first_heading_is_its_own_section_under_the_title(
    counter: TokenCounter,
) -> None:
    doc = "Badges and a short pitch for the crate.\n\n# Serde\n\n" + prose(20) + "\n"
    _, chunks = chunks_of(doc, counter)
    # The one level-1 heading is the title; the preamble never merges into a path-less chunk.
    assert [c.heading_path for c in chunks] == [["Serde"]]
    assert chunks[0].contextual_text.startswith("Serde\n\nBadges and a short pitch")
    assert chunks[0].contextual_text.count("Serde") == 1
    # Without a level-1 heading the file name heads the preamble.
    doc = "Intro words about the topic at hand.\n\n## Part one\n\n" + prose(60) + "\n"
    _, chunks = chunks_of(doc, counter)
    assert chunks[0].heading_path == ["rules.md"]
    assert chunks[0].text == "Intro words about the topic at hand."
    assert all(c.heading_path == ["Part one"] for c in chunks[1:])


def test_a_split_section_never_repeats_its_heading_in_the_embedded_text(
    counter: TokenCounter,
) -> None:
    doc = "## Ownership rules\n\n" + "\n\n".join(prose(60, seed=i) for i in range(6)) + "\n"
    _, chunks = chunks_of(doc, counter)
    assert len(chunks) > 2
    for c in chunks:
        assert c.heading_path == ["Ownership rules"]
        assert c.contextual_text.count("Ownership rules") == 1
        assert not c.text.startswith("##")


def test_markdown_invisible_spans_know_code_from_markup() -> None:
    from agrag_pipeline.chunking.markup import markdown_invisible_spans

    doc = (
        "Text with `<!-- not a comment -->` in code.\n\n"
        "```html\n<!-- inside a fence -->\n[x]: y\n```\n\n"
        '<!-- a real comment -->\n\n[ref]: https://example.com "Title"\n'
    )
    found = [doc[a:b] for a, b in markdown_invisible_spans(doc)]
    assert found == ['<!-- a real comment -->\n\n[ref]: https://example.com "Title"']


def test_a_heading_too_long_for_any_label_is_cut_in_the_paths_and_said_whole_in_the_text(
    counter: TokenCounter,
) -> None:
    # A whole paragraph in a heading style made the document fail to chunk at all. Its chunks'
    # paths now carry its first words and "…"; the section keeps it whole, and its line stays
    # in what the chunk under it embeds, every word of it.
    heading = " ".join(f"clause{i}" for i in range(300))
    parsed, chunks = chunks_of(f"# Terms\n\n## {heading}\n\nThe body of the clause.\n", counter)
    assert [s.heading for s in parsed.sections][-1] == heading
    cut = [c for c in chunks if c.heading_path[:1] == ["Terms"] and len(c.heading_path) == 2]
    assert cut and all(c.heading_path[1].endswith(" …") for c in cut)
    short = cut[0].heading_path[1][: -len(" …")]
    assert heading.startswith(short + " ") and len(short) < len(heading)
    embedded = embedded_of(chunks)
    assert all(f"clause{i}" in embedded for i in range(300)) and "The body" in embedded
    for c in chunks:
        assert c.metadata["token_count"] <= 256
        assert counter.count(c.contextual_text) + counter.special_tokens <= 256


def test_a_heading_path_that_cannot_fit_even_cut_is_a_clear_error(counter: TokenCounter) -> None:
    doc = "# a\n\n## b\n\n### c\n\nbody\n"
    with pytest.raises(ChunkingError, match=r"rules\.md: the heading path .* takes \d+ tokens"):
        chunks_of(doc, counter, max_tokens=64, target_tokens=64, min_tokens=0, min_text_tokens=60)


def test_max_tokens_above_the_model_sequence_length_is_refused(counter: TokenCounter) -> None:
    with pytest.raises(ValueError, match="maximum sequence length"):
        StructureChunker(ChunkerSettings(max_tokens=512), counter, max_sequence_tokens=256)


def test_every_setting_tokenizer_and_limit_changes_the_fingerprint_and_ids(
    counter: TokenCounter,
) -> None:
    base = ChunkerSettings()
    variants = [
        StructureChunker(base, counter),
        StructureChunker(base, counter, max_sequence_tokens=512),
        StructureChunker(base, TokenCounter(backend="tokenizers"), 256),
    ]
    changes = {
        "target_tokens": 150,
        "max_tokens": 240,
        "min_tokens": 10,
        "overlap_tokens": 5,
        "table_rows_per_chunk": 4,
        "repeat_table_header": False,
        "keep_code_blocks_whole": False,
        "min_text_tokens": 20,
    }
    assert set(changes) == set(ChunkerSettings.model_fields)
    variants += [
        StructureChunker(base.model_copy(update={k: v}), counter) for k, v in changes.items()
    ]
    hashes = [v.chunker_hash for v in variants]
    # The backend is not part of the identity (same tokenizer.json, same counts).
    assert hashes[2] == hashes[0]
    del hashes[2]
    assert len(set(hashes)) == len(hashes)
    assert variants[0].chunker_hash == chunker_hash(
        CHUNKER_NAME,
        CHUNKER_VERSION,
        {
            "settings": base.model_dump(mode="json"),
            "tokenizer_sha256": counter.identity,
            "max_sequence_tokens": 256,
        },
    )
    parsed = parse_document(b"# A\n\nsome text\n", "ids.md")
    ids = {
        v.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)[0].id
        for v in variants
    }
    assert len(ids) == len(hashes)


def _paged_document(counter: TokenCounter) -> ParsedDocument:
    text = "Title\n\nFirst page line.\nSecond page line.\n"
    document = Document(
        source_key="p.pdf", media_type="application/pdf", size_bytes=1, content_hash="0" * 64
    )
    assert document.id is not None
    box = {"x0": 0.0, "y0": 0.0, "x1": 10.0, "y1": 10.0}
    layout = [
        LayoutSpan(start=0, end=5, box=PageBox(page=1, **box)),
        LayoutSpan(start=7, end=23, box=PageBox(page=1, **box)),
        LayoutSpan(start=24, end=41, box=PageBox(page=2, **box)),
    ]
    section = Section(
        id=Section.node_id_for(document.id, document.content_hash, "0"),
        document_id=document.id,
        content_hash=document.content_hash,
        ordinal=0,
        heading="Title",
        level=1,
        heading_path=["Title"],
        start=0,
        end=len(text),
        pages=[1, 2],
    )
    return ParsedDocument(document=document, text_layer=text, sections=[section], layout=layout)


def test_paged_sources_get_pages_and_boxes(counter: TokenCounter) -> None:
    parsed = _paged_document(counter)
    chunker = StructureChunker(ChunkerSettings(), counter)
    [chunk] = chunker.chunk(parsed, schema_fingerprint="s", extraction_fingerprint="e")
    assert chunk.provenance.kind == "page"
    # The heading line "Title" is the label's, so the chunk's text and boxes are the two lines.
    assert chunk.text == "First page line.\nSecond page line."
    assert chunk.provenance.pages == [1, 2] and len(chunk.provenance.boxes) == 2
    assert chunk.schema_fingerprint == "s" and chunk.extraction_fingerprint == "e"


def test_fingerprints_given_by_the_caller_are_validated_like_chunk_fields(
    counter: TokenCounter,
) -> None:
    parsed = parse_document(b"# A\n\ntext\n", "rules.md")
    chunker = StructureChunker(ChunkerSettings(), counter)
    with pytest.raises(ValidationError):
        chunker.chunk(parsed, schema_fingerprint=3, extraction_fingerprint=None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=["x"])  # type: ignore[arg-type]
    chunks = chunker.chunk(parsed, schema_fingerprint="s", extraction_fingerprint="e")
    assert (chunks[0].schema_fingerprint, chunks[0].extraction_fingerprint) == ("s", "e")


def test_an_ocr_models_grounding_tags_are_not_embedded(counter: TokenCounter) -> None:
    # DeepSeek-OCR writes each block's kind and box before it; every chunk embedded the box's
    # numbers ("ref text ref det 217 230 785 321 det").
    source = (
        "<|ref|>title<|/ref|><|det|>[[120, 88, 870, 120]]<|/det|>\n# Results\n\n"
        "<|ref|>text<|/ref|><|det|>[[217, 230, 785, 321]]<|/det|>\n"
        "We chose PubTabNet for its diverse tables.\n"
    )
    parsed, chunks = chunks_of(source, counter)
    embedded = embedded_of(chunks)
    assert "We chose PubTabNet for its diverse tables." in embedded
    for tag in ("<|", "ref", "det", "217", "title"):
        assert tag not in embedded, tag
    assert parsed.text_layer == source  # the text layer is the source, tags and all


def test_a_real_word_file_whose_heading_styles_hold_whole_paragraphs_is_chunked(
    counter: TokenCounter,
) -> None:
    # Apache POI's drawing.docx, a Russian press review: whole paragraphs (up to 410
    # characters) in Heading 1-3. It raised ChunkingError, so none of it was searchable.
    raw = Path(__file__).parent.parent / "fixtures/word/poi_drawing_heading_paragraphs.docx"
    parsed = parse_document(raw.read_bytes(), "drawing.docx")
    longest = max((s.heading or "" for s in parsed.sections), key=len)
    assert len(longest) > 400
    chunker = StructureChunker(ChunkerSettings(), counter)
    chunks = chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None)
    assert all(c.metadata["token_count"] <= 256 for c in chunks)
    assert any(h.endswith(" …") for c in chunks for h in c.heading_path)
    assert longest.split()[-1] in embedded_of(chunks)
