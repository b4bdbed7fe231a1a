"""Page furniture of saved web pages that mark none: the article's container, and what stands
around it.

Why: a saved news or blog page holds its article among menus, teasers of other articles, share
buttons, ad slots, newsletter forms and footers. ``html.py`` leaves out what the page marks as
furniture (``<nav>``, ARIA landmarks, the page's ``<header>``/``<footer>``, a ``<main>`` to read
from), but most such pages mark little of it, so their chunks held 20-80% menu and teaser text
(readability's and Zyte's test pages: BENCHMARKS.md, "Saved web pages: the article without the
page around it"). This module finds that furniture by structure, in the page's body or in its
``<main>``, which often holds teasers, comments and an encyclopedia's categories too.

How (the article's container as Arc90's Readability, still Firefox's reader view, finds it):

1. Every paragraph (``p``, ``pre``, ``td``, ``blockquote``, and a ``div`` holding no block
   element) of at least 25 characters scores 1, plus its commas, plus one per 100 characters
   (at most 3). Its parent gets that score, its grandparent half of it, the next three levels a
   sixth, a ninth and a twelfth. A container starts from its tag's weight (``div`` +5,
   ``article`` +8, ...) and ends scaled by the share of its text outside links. The best one is
   the article's container.
2. From it up to ``<body>``, each sibling of that path is furniture when most of its text is link
   text and it holds less text of its own (outside links) than the container (a sidebar's
   teasers and their dates), or when its own text is under 100 characters and it holds a link,
   or neither a sentence nor a heading or picture ("Advertisement", "Share", a count of
   comments; a picture's caption stays). A sibling holding a ``h1``, a table or a ``pre``
   stays.
3. Only when the guess is confident is anything left out: the container holds at least 500
   characters of its own text and a quarter of the page's, and what would be left out is at
   least half link text. Else nothing is: a document that is not such a web page (a report, a
   generated manual page, a table) keeps every word.
4. Readers' comments (``comment_sections``: the blocks an ``id`` or class names so, as blog and
   news templates write them) score nothing in step 1, so a long comment is never taken for
   the article, count for nothing in step 3's quarter, and are left out wherever they stand
   once the article is found for sure: on a blog they often outweigh the post.

Counts are of characters other than whitespace, outside ``script``/``style``/``template``/
``noscript``, taken by Lexbor in C (``text``, ``css``): no Python walk over the page's nodes.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

#: What Readability scores as a paragraph (a ``div`` holding no block element is one too).
_PARAGRAPHS = "p, pre, td, blockquote"
_BLOCK_INSIDE = (
    "address, article, aside, blockquote, details, div, dl, fieldset, figure, footer, form, "
    "h1, h2, h3, h4, h5, h6, header, hr, main, nav, ol, p, pre, section, table, ul"
)
_UNSEEN = "script, style, template, noscript"
#: A container's starting score by its tag (Readability's, with ``article`` and ``section``).
_TAG_WEIGHT = {
    "div": 5,
    "article": 8,
    "section": 2,
    "pre": 3,
    "td": 3,
    "blockquote": 3,
    **dict.fromkeys(("address", "ol", "ul", "dl", "dd", "dt", "li", "form"), -3),
    **dict.fromkeys(("h1", "h2", "h3", "h4", "h5", "h6", "th"), -5),
}
#: Text that stays beside the article whatever its links: a title, a table, a listing.
_KEPT = "h1, table, pre"
_HEADS_OR_PICTURES_TAGS = ("h2", "h3", "h4", "h5", "h6", "img", "picture", "figure", "video")
_HEADS_OR_PICTURES = ", ".join(_HEADS_OR_PICTURES_TAGS)
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f](?:\s|$)")
#: Readers' comments (``comment_sections``): an ``id`` or class word for them, between word
#: boundaries, hyphens or underscores (``comments-area``, ``comment_list``, ``disqus_thread``);
#: not a BEM element's name (``gallery__item__comment``: an editor's caption there).
_COMMENT_NAME = re.compile(
    r"(?:^|(?<!_)[-_])(?:comments?|commentlist|comment-?list|disqus(?:_thread)?|replies)(?:$|[-_])",
    re.IGNORECASE,
)
_COMMENT_QUERY = "[id*=omment], [class*=omment], [id*=isqus], [class*=isqus], [class*=eplies]"
_COMMENT_TAGS = frozenset({"div", "section", "aside", "ol", "ul", "footer", "dl", "form"})

MIN_PARAGRAPH_CHARS = 25
#: The container's own text (outside links) needed before anything is left out.
MIN_ARTICLE_CHARS = 500
#: A sibling with less own text than this, and a link or nothing of the article's
#: (``_says_something``), is furniture.
SHORT_CHARS = 100


def _visible(node: LexborNode) -> int:
    """Characters other than whitespace that the page shows in ``node`` (``page_furniture``
    has removed what is never shown)."""
    return _chars(node.text(deep=True))


def _chars(text: str) -> int:
    return len("".join(text.split()))


def _link_chars(node: LexborNode) -> int:
    return sum(_chars(link.text(deep=True)) for link in node.css("a"))


def _says_something(node: LexborNode) -> bool:
    """Whether short text without links is the article's: a sentence, a heading, or a
    picture's caption (``html.py`` reads no pictures, so those are captions)."""
    return (
        _SENTENCE_END.search(" ".join(node.text(deep=True).split())) is not None
        or node.css_first(_HEADS_OR_PICTURES) is not None
        or node.tag in _HEADS_OR_PICTURES_TAGS
    )


def _paragraphs(top: LexborNode) -> list[LexborNode]:
    """What Readability scores as paragraphs, found by one Lexbor query."""
    return top.css(f"{_PARAGRAPHS}, div:not(:has({_BLOCK_INSIDE}))")


def comment_sections(top: LexborNode) -> list[LexborNode]:
    """The readers' comments under ``top``: the outermost blocks whose ``id`` or a class names
    them so (``comments``, ``comment-list``, ``disqus_thread``, ``replies``...), as WordPress,
    Disqus and most blog and news templates write them. A block holding a ``h1`` or most of
    the page's text is a wrapper that only mentions comments (``has-comments``), not them; an
    inline element (a code listing's ``hljs-comment``) is never one."""
    shown = _visible(top)
    found: dict[int, LexborNode] = {}
    for node in top.css(_COMMENT_QUERY):
        if node.tag not in _COMMENT_TAGS:
            continue
        names = f"{node.attributes.get('id') or ''} {node.attributes.get('class') or ''}"
        if not any(_COMMENT_NAME.search(name) for name in names.split()):
            continue
        if node.css_first("h1") is not None or _visible(node) > 0.5 * shown:
            continue
        found[node.mem_id] = node
    keys = set(found)
    return [
        node
        for node in found.values()
        if node.parent is None or not _inside(node.parent, keys, top)
    ]


def _lineage(node: LexborNode | None, top: LexborNode) -> set[int]:
    """The addresses of ``node`` and of its ancestors below ``top``."""
    found: set[int] = set()
    while node is not None and node.mem_id != top.mem_id:
        found.add(node.mem_id)
        node = node.parent
    return found


def _inside(node: LexborNode, keys: set[int], top: LexborNode) -> bool:
    """Whether ``node`` lies in one of the elements whose addresses are ``keys``."""
    while node is not None and node.mem_id != top.mem_id:
        if node.mem_id in keys:
            return True
        node = node.parent  # type: ignore[assignment]
    return False


def article_container(top: LexborNode, leave_out: set[int] | None = None) -> LexborNode | None:
    """The element under ``top`` that Readability's scoring says holds the article (step 1);
    paragraphs inside the elements ``leave_out`` names (readers' comments) score nothing."""
    # Keyed by Lexbor's node address: a LexborNode compares equal by serialising its HTML.
    scores: dict[int, float] = {}  # container -> its score (module doc, step 1)
    nodes: dict[int, LexborNode] = {}
    for paragraph in _paragraphs(top):
        text = " ".join(paragraph.text(deep=True).split())
        if len(text) < MIN_PARAGRAPH_CHARS:
            continue
        if leave_out and _inside(paragraph, leave_out, top):
            continue
        gain = 1 + text.count(",") + text.count("\uff0c") + text.count("\u3001")
        gain += min(len(text) // 100, 3)
        node, level = paragraph.parent, 0
        while node is not None and level < 5 and node.tag not in ("body", "html"):
            key = node.mem_id
            if key not in scores:
                scores[key] = _TAG_WEIGHT.get(node.tag or "", 0)
                nodes[key] = node
            scores[key] += gain / (1 if level == 0 else 2 if level == 1 else level * 3)
            node, level = node.parent, level + 1
    best: LexborNode | None = None
    best_score = 0.0
    # Highest scores first: the link share only lowers a score, so none past ``best`` can win.
    for key in sorted(scores, key=scores.__getitem__, reverse=True):
        score = scores[key]
        if best is not None and score <= best_score:
            break
        candidate = nodes[key]
        shown = _chars(candidate.text(deep=True))
        final = score * (1 - _link_chars(candidate) / shown) if shown else 0.0
        if best is None or final > best_score:
            best, best_score = candidate, final
    return best


def page_furniture(top: LexborNode) -> tuple[list[LexborNode], int]:
    """The elements around the article of a web page that ``html.py`` should not read (steps 2
    and 3 of the module doc), and the characters they show; none where the page does not look
    like one. Removes the scripts, styles, templates and ``noscript`` under ``top``, which
    ``html.py`` skips anyway."""
    for unseen in top.css(_UNSEEN):
        unseen.decompose()  # never read (``html._SKIP``), and never counted here
    page_links = _link_chars(top)
    page_own = _visible(top) - page_links
    if not page_links or page_own < MIN_ARTICLE_CHARS:
        return [], 0  # nothing to find: furniture is half links, the article's text the page's
    comments = comment_sections(top)
    container = article_container(top, {node.mem_id for node in comments})
    if container is None:
        return [], 0
    # A comment section around the container is a wrapper, not the page's comments.
    around = _lineage(container, top)
    comments = [section for section in comments if section.mem_id not in around]
    comments_own = sum(_visible(node) - _link_chars(node) for node in comments)
    own = _visible(container) - _link_chars(container)
    if own < MIN_ARTICLE_CHARS or own < 0.25 * (page_own - comments_own):
        return [], 0
    comment_keys = {node.mem_id for node in comments}
    kept: set[int] = set()  # node addresses (see ``article_container``)
    for element in top.css(_KEPT):
        node: LexborNode | None = element
        while node is not None and node.mem_id not in kept:
            kept.add(node.mem_id)
            node = node.parent
    furniture: list[LexborNode] = []
    shown = links = 0
    node = container
    while node.mem_id != top.mem_id and (parent := node.parent) is not None:
        for sibling in parent.iter(include_text=False):
            if sibling.mem_id == node.mem_id or sibling.mem_id in kept:
                continue
            if sibling.mem_id in comment_keys:
                continue  # left out with the comments, below
            visible = _visible(sibling)
            if not visible:
                continue
            link = _link_chars(sibling)
            if (link >= 0.5 * visible and visible - link < own) or (
                visible - link < SHORT_CHARS and (link or not _says_something(sibling))
            ):
                furniture.append(sibling)
                shown += visible
                links += link
        node = parent
    if links < 0.5 * shown:
        furniture, shown = [], 0
    # Readers' comments go wherever they stand, the container's own included, once the article
    # is found for sure: they are what the page's readers wrote, not the article.
    left_out = {element.mem_id for element in furniture}
    for section in comments:
        if not _inside(section, left_out, top):
            furniture.append(section)
            shown += _visible(section)
    return furniture, shown
