"""PDFs made by Sphinx's LaTeX builder, another family than texinfo's: the Requests and Flask
guides of the third labelled retrieval set (``data/eval/pdf-manuals-sphinx``, its README says
how they were built). Each test names a defect their first parse had."""

from __future__ import annotations

import functools
from pathlib import Path

from agrag_pipeline.parsing import ParsedDocument, parse_document
from agrag_pipeline.parsing.contract import contract_violations

SET = Path(__file__).resolve().parents[2] / "data" / "eval" / "pdf-manuals-sphinx"


@functools.cache
def _parsed(name: str) -> ParsedDocument:
    parsed = parse_document((SET / name).read_bytes(), f"pdf/{name}")
    assert contract_violations(parsed) == []
    return parsed


def test_a_near_white_line_under_a_space_of_code_is_no_underscore() -> None:
    # Requests' Pygments style underlines each space of a code block in #f7f7f7: shaped
    # like a drawn underscore, but unseen.
    text = _parsed("requests.pdf").text_layer
    assert ">>> import requests" in text and ">>> from PIL import Image" in text
    assert "import_requests" not in text and "from_PIL" not in text


def test_running_heads_are_left_out_wherever_reading_order_puts_them() -> None:
    # The head is set flush right above short code lines, so it reads as a column after them;
    # a foot is parted in two by "(continues on next page)" above its right half.
    requests, flask = _parsed("requests.pdf").text_layer, _parsed("flask.pdf").text_layer
    assert requests.count("Requests Documentation, Release 2.34.2") == 0
    assert flask.count("Flask User’s Guide, Release 3.2.0.dev") == 0
    for text in (requests, flask):
        assert "Chapter 1. " not in text and "Chapter 3. " not in text


def test_a_code_blocks_continuation_marks_are_left_out() -> None:
    for name in ("requests.pdf", "flask.pdf"):
        text = _parsed(name).text_layer
        assert "(continues on next page)" not in text
        assert "(continued from previous page)" not in text


def test_a_code_line_wrapped_to_fit_the_page_is_read_as_one_line() -> None:
    text = _parsed("requests.pdf").text_layer
    assert "Request timed out. (timeout=0.001)" in text  # broken at a space: "␣", "˓→"
    assert "doesn't match either of '*.herokuapp.com'" in text  # broken inside a word
    assert "\u2423" not in text and "\u02d3" not in text


def test_a_chapter_title_set_flush_right_comes_before_the_chapters_text() -> None:
    parsed = _parsed("requests.pdf")
    assert "THREE\n\nADVANCED USAGE\n\nThis document covers some of Requests" in parsed.text_layer
    session = next(s for s in parsed.sections if s.heading == "3.1 Session Objects")
    assert session.heading_path[-2:] == ["CHAPTER THREE ADVANCED USAGE", "3.1 Session Objects"]
    assert "persist certain parameters" in parsed.text_layer[session.start : session.end]


def test_inline_code_in_a_smaller_face_stays_in_its_sentence() -> None:
    # A raised footnote mark began the row: the code words' boxes sit lower than the text's.
    text = _parsed("flask.pdf").text_layer
    assert (
        "Inside templates you also have access to the config, request, session and g 1 objects"
        " as well as the url_for() and" in text
    )


def test_a_footnote_waits_for_the_end_of_the_sentence_a_page_break_cuts() -> None:
    text = _parsed("flask.pdf").text_layer
    sentence = "pointing at whatever request is currently\nbeing handled by a given worker"
    note = "1 Unsure what that g object is?"
    assert sentence in text
    assert text.index(note) > text.index("See /appcontext for much more\ninformation.")


def test_spaces_inside_inline_code_at_a_ragged_line_end_are_no_column_gutter() -> None:
    # "{hook_name:  callback_function}" cannot break, so the line ends ragged with two
    # typewriter cells of space in it: read as a gutter, its end went after the next six lines.
    text = _parsed("requests.pdf").text_layer
    assert "by passing a {hook_name: callback_function} dictionary\nto the hooks" in text


def test_a_chapters_label_lines_start_its_section_not_end_the_one_before() -> None:
    # Sphinx sets "CHAPTER" and "ONE" on lines of their own over the chapter's title.
    parsed = _parsed("requests.pdf")
    headings = [s.heading or "" for s in parsed.sections]
    assert "CHAPTER THREE ADVANCED USAGE" in headings
    assert not any(h in ("CHAPTER", "THREE") for h in headings)
    for section in parsed.sections:
        own = parsed.text_layer[section.start : section.end].rstrip()
        assert not own.endswith(("CHAPTER", "THREE", "TEN")), section.heading


def test_a_listing_whose_keywords_are_set_bold_keeps_its_indentation() -> None:
    # Sphinx sets ``def`` and ``return`` in txfonts' bold typewriter (``t1xbtt``) and quotes in
    # its symbol font (``tcxtt``): neither was known as fixed-pitch, so the listing ended at
    # each keyword and its lines lost their indentation.
    flask = _parsed("flask.pdf").text_layer
    assert "@app.route('/')\ndef index():\n    return 'Index Page'" in flask
    # Nor does an italic comment part the listing into paragraphs.
    assert (
        "def show_post(post_id):\n    # show the post with the given id, the id is an integer\n"
        "    return f'Post {post_id}'"
    ) in flask
    assert '    name = request.args.get("name", "Flask")\n    return f"Hello, {escape(name)}!"' in (
        flask
    )
