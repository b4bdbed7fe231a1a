"""Saved web pages: the article is read, the page's unmarked furniture around it is not, and a
document that is not such a page keeps every word (``parsing/html_furniture.py``)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from agrag_pipeline.parsing import html, parse_document
from agrag_pipeline.parsing.budget import Deadline

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CORPUS_HTML = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "html"
_WORD = re.compile(r"\w+")

ARTICLE = [
    "River levels across the valley fell to their lowest in thirty years this week, after a"
    " summer with barely a third of the usual rain, the water board said on Tuesday.",
    "Farmers along the lower reaches, where the river feeds most of the irrigation channels,"
    " have been asked to water at night and to share pumps, while the board studies limits.",
    "The board's engineer, Marta Ruiz, said the reservoirs still held enough for the towns,"
    " but that the wells of several villages, drilled shallow decades ago, had run dry.",
    "Boat hire on the upper lake has stopped for the season, and the ferry runs twice a day,"
    " not six times, because its landing stages now stand in mud at the northern end.",
    "Forecasters expect rain in October, though they warn that one wet month will not refill"
    " the aquifers, which took most of the last decade to recover from the drought of 2016.",
]


def _news_page(paragraphs: list[str]) -> str:
    """A news page as content systems write them: no <main>, <nav> or landmarks, its menu,
    teasers, share links, ad slot and footer in plain <div>s around the story."""
    menu = "".join(
        f'<li><a href="/{s.lower()}">{s}</a></li>'
        for s in ("World", "Politics", "Business", "Science", "Sport", "Culture", "Weather")
    )
    teasers = "".join(
        f'<li><a href="/story/{i}">{title}</a></li>'
        for i, title in enumerate(
            (
                "Council votes to reopen the old bridge to cyclists next spring",
                "Ten years of the valley marathon, in pictures",
                "Why the price of bread keeps rising, explained",
                "Schools to stay open through the heat, minister says",
                "The last family of basket weavers in the hills",
            )
        )
    )
    story = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        "<!DOCTYPE html><html><head><title>River levels fall</title>"
        "<script>window.ads = [];</script></head><body>"
        f'<div class="top"><div class="logo"><a href="/">The Valley Gazette</a></div>'
        f'<ul class="menu">{menu}</ul></div>'
        '<div class="wrap"><div class="story">'
        "<h1>River levels fall after the driest summer in thirty years</h1>"
        '<p class="byline">By Ana Costa, 3 August 2026</p>'
        f"{story}</div>"
        '<div class="picture"><img src="landing.jpg" alt="">'
        '<div class="caption">The ferry landing at the northern end, in mud</div></div>'
        '<div class="share"><a href="/share?fb">Share</a> <a href="/share?x">Post</a> '
        '<a href="/share?mail">Email</a></div>'
        f'<div class="rail"><h3>Most read</h3><ul>{teasers}</ul>'
        '<div class="ad">Advertisement</div></div></div>'
        '<div class="bottom"><a href="/about">About us</a> | <a href="/contact">Contact</a> | '
        '<a href="/privacy">Privacy</a><p>© 2026 The Valley Gazette</p></div>'
        "</body></html>"
    )


@pytest.mark.parametrize("in_main", [False, True], ids=["no main", "teasers in main"])
def test_a_news_page_is_read_without_its_menu_teasers_share_links_and_footer(
    in_main: bool,
) -> None:
    page = _news_page(ARTICLE)
    if in_main:  # the story, its share links and the "Most read" rail inside <main>
        page = page.replace('<div class="wrap">', "<main>").replace(
            '</div><div class="bottom">', '</main><div class="bottom">'
        )
        assert page.index("<main>") < page.index("Most read") < page.index("</main>")
    parsed = parse_document(page.encode(), "river.html")
    assert parsed.text_layer == "\n\n".join(
        [
            "River levels fall after the driest summer in thirty years",
            "By Ana Costa, 3 August 2026",
            *ARTICLE,
            "The ferry landing at the northern end, in mud",  # a picture's caption beside it
        ]
    )
    assert [s.heading for s in parsed.sections if s.heading] == [
        "River levels fall after the driest summer in thirty years"
    ]
    said = parsed.document.metadata[html.FURNITURE_METADATA]  # stored with the sections
    assert said.endswith(
        "characters of menus, teasers, share links, readers' comments and footers around the"
        " article left out"
    )
    assert int(said.split()[0].replace(",", "")) > 200


def test_a_page_whose_article_is_too_short_to_be_sure_of_keeps_everything_around_it() -> None:
    parsed = parse_document(_news_page(ARTICLE[:2]).encode(), "short.html")
    assert html.FURNITURE_METADATA not in parsed.document.metadata
    for kept in ("Most read", "Ten years of the valley marathon", "About us", "Advertisement"):
        assert kept in parsed.text_layer
    for paragraph in ARTICLE[:2]:
        assert paragraph in parsed.text_layer


def test_a_main_that_shows_nothing_gives_way_to_the_body() -> None:
    """News agencies' hosted pages put only ad slots (scripts) in <main>, the story beside it:
    the page read as empty and was refused."""
    page = (
        '<html><body><main class="row"><section><div id="ad">'
        '<script>googletag.display("billboard")</script></div></section></main>'
        '<div class="article"><h1>Talks resume</h1><p>Negotiators met again on Monday.</p>'
        "</div></body></html>"
    )
    parsed = parse_document(page.encode(), "agency.html")
    assert parsed.text_layer == "Talks resume\n\nNegotiators met again on Monday."


def _blog_post(comments_inside_the_post: bool = False) -> str:
    """A post as WordPress's default theme writes it: the article, then its readers' comments
    (each a sentence or more, some longer than a paragraph of the post) and the reply form."""
    comments = "".join(
        f'<li id="comment-{i}" class="comment"><article class="comment-body">'
        f'<footer class="comment-meta"><b class="fn">{who}</b> on 4 August 2026 at 9:{i}0 am'
        f' <span class="says">says:</span></footer><div class="comment-content"><p>{said}</p>'
        '</div><div class="reply"><a href="#respond">Reply</a></div></article></li>'
        for i, (who, said) in enumerate(
            (
                (
                    "Pete",
                    "Our well went dry in July as well, and the council told us, after three"
                    " weeks of letters, that nothing could be done before the autumn, which is"
                    " exactly what they said the last time, in 2016, and the time before that.",
                ),
                (
                    "Joan",
                    "Does anyone know whether the ferry timetable will go back to six crossings"
                    " once the rain comes, or whether this is the new normal for the lake?",
                ),
                (
                    "Ray",
                    "Water at night, share pumps, study limits: we have heard it all before,"
                    " and the board should have dug the wells deeper when it had the money.",
                ),
            )
        )
    )
    section = (
        '<div id="comments" class="comments-area"><h2 class="comments-title">3 thoughts on'
        f' "River levels fall"</h2><ol class="comment-list">{comments}</ol>'
        '<div id="respond" class="comment-respond"><h3>Leave a Reply</h3>'
        '<form><label>Comment</label><textarea></textarea><input type="submit" value="Post">'
        "</form></div></div>"
    )
    story = "".join(f"<p>{p}</p>" for p in ARTICLE)
    post = (
        '<article class="post type-post"><h1 class="entry-title">River levels fall</h1>'
        f'<div class="entry-content">{story}</div>'
        f"{section if comments_inside_the_post else ''}</article>"
    )
    return (
        '<html><body class="single has-comments"><div id="page" class="site">'
        '<div class="site-content has-comments">'
        f"{post}{'' if comments_inside_the_post else section}</div></div></body></html>"
    )


@pytest.mark.parametrize("inside", [False, True], ids=["after the post", "inside the post"])
def test_readers_comments_under_a_post_are_left_out_and_the_post_is_read(inside: bool) -> None:
    parsed = parse_document(_blog_post(inside).encode(), "blog/river.html")
    assert parsed.text_layer == "\n\n".join(["River levels fall", *ARTICLE])
    assert "readers' comments" in parsed.document.metadata[html.FURNITURE_METADATA]


def test_a_code_listings_comments_and_a_wrapper_named_for_comments_are_kept() -> None:
    # highlight.js marks a listing's comments with ``hljs-comment`` spans; a theme names the
    # page's wrapper ``has-comments``: neither is a readers' comment section.
    listing = (
        '<pre><code><span class="hljs-comment"># water at night</span>\n'
        "pump.start(hour=22)</code></pre>"
    )
    page = _blog_post().replace(
        '<div class="entry-content">', f'<div class="entry-content">{listing}'
    )
    text = parse_document(page.encode(), "blog/river.html").text_layer
    assert "# water at night" in text and "pump.start(hour=22)" in text
    assert all(paragraph in text for paragraph in ARTICLE)


def _words(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _WORD.findall(text))


def test_a_real_blog_page_reads_as_its_article_against_readabilitys_expected_text() -> None:
    """ebb.org's blog page (readability's test page, CC BY-SA): before, 14% of our words were
    the site's sidebar, tag cloud and licence lines; readability's expected text is the
    article."""
    page = (FIXTURES / "web_pages" / "ebb_org_blog.html").read_bytes()
    expected = (FIXTURES / "web_pages" / "ebb_org_blog.expected.html").read_text()
    ours = _words(parse_document(page, "ebb_org_blog.html").text_layer)
    reference = _words(
        html.extract(expected, Deadline.unlimited("expected")).text  # the article alone
    )
    common = sum((ours & reference).values())
    assert common / sum(reference.values()) >= 0.99  # none of the article lost
    assert common / sum(ours.values()) >= 0.95  # and little else


def _document_pages() -> list[Path]:
    pages = [
        p
        for p in sorted(FIXTURES.rglob("*.htm*"))
        if p.suffix in (".html", ".htm") and "web_pages" not in p.parts
    ]
    return pages + sorted(CORPUS_HTML.glob("*.html"))


@pytest.mark.parametrize("page", _document_pages(), ids=lambda p: p.name)
def test_a_document_that_is_not_a_news_page_keeps_every_word_read_as_a_web_page(
    page: Path,
) -> None:
    """Generated documentation, tables, Office exports: the furniture search finds nothing to
    leave out (it only acts when it is sure), so the text is what it was without it."""
    text = page.read_bytes().decode("utf-8", errors="replace")
    deadline = Deadline.unlimited(page.name)
    as_page = html.extract(text, deadline, web_page=True).text
    as_document = html.extract(text, deadline).text
    assert as_page == as_document
