"""LaTeX: the title and sectioning commands as headings, readable text without macros,
mathematics kept as LaTeX; ``\\input`` never read (a loop cannot loop), hostile nesting is a
clear error."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pylatexenc.latexwalker import LatexWalkerEndOfStream

from agrag_pipeline.parsing import latex, parse_document
from agrag_pipeline.parsing.budget import Deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURES = Path(__file__).parent.parent / "fixtures" / "latex"
_SECTIONING = re.compile(
    r"^\\(title|section|subsection|subsubsection|paragraph)\*?\{(.+)\}\s*$", re.MULTILINE
)


def test_latex_sections_are_headings_and_math_is_kept() -> None:
    source = (FIXTURES / "arxiv_template.tex").read_text()
    parsed = parse_checked(source.encode(), "paper/template.tex")
    headings = [(s.level, s.heading) for s in parsed.sections if s.heading is not None]
    rank = {"title": 1, "section": 2, "subsection": 3, "subsubsection": 4, "paragraph": 5}
    expected = [
        (rank[c], re.sub(r"\\emph\{(.*?)\}", r"\1", t)) for c, t in _SECTIONING.findall(source)
    ]
    # The abstract environment is a heading of its own, right after the title.
    assert headings == [expected[0], (2, "Abstract"), *expected[1:]]
    text = parsed.text_layer
    assert "\\begin{equation} \\xi _{ij}(t)=P(x_{t}=i,x_{t+1}=j|y,v,w;\\theta)=" in text
    assert "Size ($\\mu$m)" in text and "up to $10^6$" in text
    assert "Citations use natbib. The documentation may be found at" in text  # \verb+natbib+
    assert "* Lorem ipsum dolor sit amet\n\n* consectetur adipiscing elit." in text
    assert "David S. Hippocampus" in text  # the author line under the title
    for macro in ("\\section", "\\emph", "\\label", "\\caption", "\\usepackage", "%%"):
        assert macro not in text


def test_input_is_never_read_so_a_loop_cannot_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loop.tex").write_text("\\input{loop}\nREAD-FROM-DISK\n")
    (tmp_path / "chapter.tex").write_text("CHAPTER-FROM-DISK\n")
    monkeypatch.chdir(tmp_path)
    source = (
        b"\\documentclass{article}\\begin{document}\\section{Loop}\n"
        b"Before \\input{loop} and \\include{chapter} after.\n\\end{document}\n"
    )
    parsed = parse_checked(source, str(tmp_path / "main.tex"))
    assert "READ-FROM-DISK" not in parsed.text_layer
    assert "CHAPTER-FROM-DISK" not in parsed.text_layer
    assert parsed.text_layer == "Loop\n\nBefore and after."


def test_deeply_nested_latex_is_a_clear_error() -> None:
    source = b"\\begin{document}" + b"{" * 5000 + b"x" + b"}" * 5000 + b"\\end{document}"
    with pytest.raises(CorruptDocumentError, match=r"^deep\.tex: .*nested too deeply"):
        parse_document(source, "deep.tex")


def test_a_real_paper_reads_with_its_title_sections_and_equations() -> None:
    # Schlömer, "Algorithmic improvements for the CIECAM02 and CAM16 color appearance models"
    # (arXiv:1802.06067, CC-BY 4.0): the title is a \newcommand of the preamble with a footnote.
    source = (FIXTURES / "note_on_cam16.tex").read_text()
    parsed = parse_checked(source.encode(), "cam16/main.tex")
    headings = [s.heading for s in parsed.sections if s.heading is not None]
    sectioning = re.findall(
        r"^\\(?:sub)?section\{([^\\}]+)", source, re.MULTILINE
    )  # "Full model\label{…}" ends at the backslash
    assert headings[0] == (
        "Algorithmic improvements for the CIECAM02 and CAM16 color appearance models"
    )
    assert [h for h in headings if h in sectioning] == sectioning  # every section, in order
    assert len(headings) == len(sectioning) + 3  # + the title, "Abstract" and one \paragraph
    text = parsed.text_layer
    assert "Nico Schlömer" in text.split("\n\n")[1]
    assert "If $R_c$ is negative, then" in text
    assert "\\[ R_a = 400 \\frac{\\left(\\frac{F_L R_c}{100}\\right)^{0.42}}" in text
    assert "\\input" not in text and "\\section" not in text


#: The definitions found in a real 1998 paper's preamble (arXiv quant-ph/9802040, as docling's
#: test data holds it), one per theorem-like environment: each opens an environment in one
#: group and closes it in the next, which made pylatexenc backtrack exponentially (20 of them
#: ran for many minutes, with no time budget).
THEOREM_LIKE = "".join(
    f"\\newtheorem{{T{i}}}{{Theorem}}\n"
    f"\\newenvironment{{t{i}}}{{\\begin{{T{i}}} \\hspace{{-.85em}} {{\\bf :}} \n\\rm}}%\n"
    f"    {{\\end{{T{i}}}}}\n\\newcommand{{\\t{i}start}}{{\\begin{{t{i}}}}}\n"
    for i in range(30)
)


@pytest.mark.timeout(120)
def test_environment_definitions_of_a_real_preamble_parse_in_a_moment() -> None:
    source = (
        "\\documentclass{article}\n" + THEOREM_LIKE + "\\title{Quantum Communication}\n"
        "\\begin{document}\n\\maketitle\n\\section{Introduction}\nWe study protocols.\n"
        "\\end{document}\n"
    )
    parsed = parse_document(source.encode(), "papers/qc.tex", time_budget_s=60)
    assert [s.heading for s in parsed.sections if s.heading] == [
        "Quantum Communication",
        "Introduction",
    ]
    assert "We study protocols." in parsed.text_layer
    assert "T29" not in parsed.text_layer and "hspace" not in parsed.text_layer


@pytest.mark.timeout(120)
def test_latex_the_parser_cannot_finish_stops_at_the_time_budget_naming_the_file() -> None:
    from agrag_pipeline.parsing.budget import Deadline
    from agrag_pipeline.parsing.errors import ParseTimeoutError
    from agrag_pipeline.parsing.latex import _nodes, _walker_context

    # The same definitions given to pylatexenc as they are (what the parser strips first):
    # without the deadline checked inside its recursion this runs for hours.
    with pytest.raises(ParseTimeoutError, match=r"^papers/qc\.tex: gave up after 1 s"):
        _nodes(THEOREM_LIKE, _walker_context(), Deadline("papers/qc.tex", seconds=1.0))


def test_an_author_block_keeps_its_lines_and_its_thanks_note_is_a_line_of_its_own() -> None:
    raw = (FIXTURES / "arxiv_template.tex").read_bytes()
    lines = parse_checked(raw, "arxiv_template.tex").text_layer.splitlines()
    # \author{\href{…}{… David S.~Hippocampus}\thanks{Use footnote …} \\ Department … \\ …}
    assert lines[2].startswith("David S. Hippocampus")
    assert lines[3] == "Department of Computer Science"
    assert lines[4] == "Cranberry-Lemon University"
    note = next(line for line in lines if "Use footnote" in line)
    assert note.startswith("Use footnote for providing further information about author")
    assert "Hippocampus" not in note and "Department" not in note


def test_sections_inside_an_environment_wrapping_the_body_are_headings() -> None:
    # DeepSeek-V3's report wraps its whole body in \begin{CJK*}{UTF8}{gbsn} (to set Chinese):
    # its 80 sections were read as text ("§ INTRODUCTION") under the title alone, and the
    # environment's arguments as a line "UTF8gbsn".
    source = r"""\documentclass{article}
\usepackage{CJKutf8}
\title{A Report}
\begin{document}
\begin{CJK*}{UTF8}{gbsn}
\maketitle
\section{Introduction}
Language models grow.
\begin{multicols}{2}
\subsection{Method}
We train it.
\end{multicols}
\section{Results}
It works.
\end{CJK*}
\end{document}
"""
    parsed = parse_checked(source.encode(), "paper/report.tex")
    assert [(s.level, s.heading) for s in parsed.sections if s.heading] == [
        (1, "A Report"),
        (2, "Introduction"),
        (3, "Method"),
        (2, "Results"),
    ]
    assert "UTF8" not in parsed.text_layer and "gbsn" not in parsed.text_layer
    assert "We train it." in parsed.text_layer


def test_code_environments_are_read_as_written_and_comments_left_out() -> None:
    source = rb"""\documentclass{article}
\begin{document}
\section{Usage}
Run it:
\begin{verbatim}
def run(x):
    return {x}  % kept: code, not a comment
\end{verbatim}
\begin{lstlisting}[language=C, caption={Main}]
int main() {
    return 0;
}
\end{lstlisting}
\begin{minted}[linenos]{python}
import os
\end{minted}
\begin{comment}
A draft nobody should read.
\end{comment}
Done.
\end{document}
"""
    text = parse_checked(source, "guide.tex").text_layer
    assert text == (
        "Usage\n\nRun it:\n\n"
        "def run(x):\n    return {x}  % kept: code, not a comment\n\n"
        "int main() {\n    return 0;\n}\n\n"
        "import os\n\nDone."
    )


def test_a_definition_in_the_body_is_no_text() -> None:
    # As Pandoc writes each numbered list: the counter's name was read as a paragraph.
    source = rb"""\documentclass{article}
\begin{document}
\section{Steps}
\begin{enumerate}
\def\labelenumi{\arabic{enumi}.}
\item Unpack.
\end{enumerate}
\gdef\note#1{[#1]}
Done.
\end{document}
"""
    text = parse_checked(source, "steps.tex").text_layer
    assert "enumi" not in text and "#1" not in text
    assert "Unpack." in text and text.endswith("Done.")


def _token(read: Callable[..., Any], pos: int, **how: Any) -> tuple[Any, ...]:
    try:
        t = read(pos, **how)
    except LatexWalkerEndOfStream as end:
        return ("end of stream", end.final_space)
    arg = getattr(t.arg, "specials_chars", t.arg)  # a special: its characters
    return (t.tok, arg, t.pos, t.len, t.pre_space, t.post_space)


def test_the_walkers_own_token_reading_reads_every_position_as_pylatexenc_does() -> None:
    # The walker reads common tokens itself (pylatexenc's per-character reading was most of a
    # parse): at every position of real sources and of random LaTeX-like strings, under every
    # way pylatexenc asks, its token must be pylatexenc's own.
    context = latex._walker_context()
    pieces = [*"ab \n\t\r\\{}[]$%~-'`&^_!?()*.é\u00a0\u2003", "begin", "end", "{x y}", "\n\n"]
    rng = random.Random(25)
    sources = [p.read_text() for p in sorted(FIXTURES.glob("*.tex"))]
    sources += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(300)]
    compared = 0
    for source in sources:
        walker = latex._BudgetedWalker(source, context, Deadline.unlimited())
        theirs = super(latex._BudgetedWalker, walker).get_token
        hows: list[dict[str, Any]] = [
            {},
            {"include_brace_chars": [("[", "]")]},
            {"environments": False},
            {"parsing_state": walker.make_parsing_state(in_math_mode=True)},
        ]
        for pos in range(len(source) + 1):
            for how in hows:
                assert _token(walker.get_token, pos, **how) == _token(theirs, pos, **how), (
                    source[pos : pos + 20],
                    how,
                )
                compared += 1
    assert compared > 100_000
