"""MDX (``.mdx``: the docs of Docusaurus, Nextra, Storybook and mdx-js sites): Markdown with
JSX components, JavaScript expressions and ES modules.

What a reader of the site sees is the Markdown and the text inside its components. The
top-level ``import``/``export`` statements (an ``export const info = {...}`` of page metadata
included) and ``{/* comments */}`` are code the site runs: they are taken out before the text is
read as Markdown, each block as MDX ends it, at the next blank line. A component's tags
(``<Tabs>``, ``<Note type="info">``) are HTML to the Markdown reader, so their text is read and
their tags are markup, as any raw HTML in Markdown. Inside fenced code, nothing is touched: an
``import`` line of an example is the example's.
"""

from __future__ import annotations

import re

#: A top-level ES module statement starts a line with one of these words.
_ESM = re.compile(r"(?:import|export)(?=[\s{*'\"])")
#: A fence's opening (or closing) line: up to three spaces, then ``` or ~~~ (three or more).
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
#: An MDX comment: a JavaScript block comment as the only content of an expression.
_COMMENT = re.compile(r"\{\s*/\*.*?\*/\s*\}", re.DOTALL)


def as_markdown(text: str) -> str:
    """``text`` without its ES module blocks and expression comments, fenced code untouched;
    the lines of a removed block become one blank line, so the blocks around it stay apart."""
    out: list[str] = []
    prose: list[str] = []  # lines outside fences, since the last fence: comments removed there
    fence: str | None = None
    in_module = False
    for line in text.splitlines(keepends=True):
        if fence is not None:
            out.append(line)
            if (closing := _FENCE.match(line)) and closing.group(1).startswith(fence):
                fence = None
            continue
        if in_module:
            if line.strip():
                continue
            in_module = False
            if not prose:
                continue  # the blank line after a module block that opens the file
        elif _ESM.match(line):
            in_module = True
            if prose and prose[-1].strip():
                prose.append("\n")
            continue
        if opening := _FENCE.match(line):
            out.append(_COMMENT.sub("", "".join(prose)))
            prose = []
            out.append(line)
            fence = opening.group(1)
            continue
        prose.append(line)
    out.append(_COMMENT.sub("", "".join(prose)))
    return "".join(out)


__all__ = ["as_markdown"]
