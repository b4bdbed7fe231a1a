"""MathML in JATS and HTML becomes linear LaTeX in the text layer (as DOCX equations do), inline
and display, with the author's TeX preferred where the document carries it; hostile nesting is
read within bounds."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from agrag_pipeline.parsing import mathml
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_jats_mathml_equations_are_linear_latex_in_the_text_layer() -> None:
    # eLife 05502 (CC-BY 4.0): 38 MathML equations, inline and display.
    raw = (FIXTURES / "jats" / "elife05502.xml").read_bytes()
    parsed = parse_checked(raw, "jats/elife05502.xml")
    text = parsed.text_layer
    # The display equation of the Sog model, as LaTeX (it read "ηs(b,d)= η0 + η1 d/d0(1+b/b0)…").
    assert (
        "\\eta_{\\text{s}}(b,d)=\\frac{\\eta_{0}+\\eta_{1}d/d_{0}}{(1+b/b_{0})(1+d/d_{0})}," in text
    )
    # Inline formulas stay inside their sentence.
    assert "Equation (2) with \\nabla^{2}=\\partial^{2}/\\partial x^{2}+" in text
    assert "rate of sog expression at zero BMP, \\bar{\\eta_{s}}." in text
    # A matrix equation keeps its structure.
    matrix = "\\begin{matrix} D_{s} & & \\\\ & D_{s} & \\\\ & & D_{c} \\end{matrix}"
    assert f"\\mathbf{{D}}=({matrix})." in text
    # Every equation of the article is in the text layer, and no raw MathML glyph run is left.
    root = etree.fromstring(raw)
    equations = list(root.iter(f"{{{mathml.MML}}}math"))
    assert len(equations) == 38
    for equation in equations:
        assert mathml.text(equation) in " ".join(text.split())


def test_jats_tex_math_is_kept_when_it_is_the_only_form() -> None:
    # As Springer/BMC write formulas: a TeX document per formula beside an image, no MathML.
    article = b"""<?xml version="1.0"?>
<article dtd-version="1.2" article-type="research-article"><front><article-meta>
<title-group><article-title>Operators</article-title></title-group></article-meta></front>
<body><sec><title>Theory</title><p>The momentum operator is represented as
<inline-formula><alternatives><tex-math id="M1">\\documentclass[12pt]{minimal}
\\usepackage{amsmath}\\begin{document}$$\\hat{p} = -i\\hbar\\nabla$$\\end{document}</tex-math>
<inline-graphic xlink:href="x.gif" xmlns:xlink="http://www.w3.org/1999/xlink"/>
</alternatives></inline-formula>, where <inline-formula><tex-math>$L$</tex-math>
</inline-formula> is the length.</p></sec></body></article>"""
    parsed = parse_checked(article, "operators.nxml")
    assert (
        "The momentum operator is represented as \\hat{p} = -i\\hbar\\nabla , where L is the "
        "length." in parsed.text_layer
    )


def test_jats_author_tex_wins_over_mathml_in_alternatives() -> None:
    article = b"""<?xml version="1.0"?>
<article dtd-version="1.2" xmlns:mml="http://www.w3.org/1998/Math/MathML"><front><article-meta>
<title-group><article-title>Both forms</article-title></title-group></article-meta></front>
<body><p>Area <inline-formula><alternatives><tex-math>\\pi r^2</tex-math><mml:math>
<mml:mi>x</mml:mi></mml:math></alternatives></inline-formula> and <inline-formula><mml:math>
<mml:msqrt><mml:mi>y</mml:mi></mml:msqrt></mml:math></inline-formula>.</p></body></article>"""
    parsed = parse_checked(article, "both.nxml")
    assert "Area \\pi r^2 and \\sqrt{y}." in parsed.text_layer


def test_html_math_inline_and_display() -> None:
    # MDN's MathML guide samples (CC0).
    folder = FIXTURES / "html_math"
    inline = parse_checked((folder / "mdn_getting_started.html").read_bytes(), "first.html")
    assert inline.text_layer == "The fraction \\frac{1}{3} is not a decimal number."
    nested = parse_checked((folder / "mdn_nested_expressions.html").read_bytes(), "nested.html")
    assert nested.text_layer.splitlines() == [
        '1. "one half" plus "two third": \\frac{1}{2}+\\frac{2}{3}',
        '2. "one plus two plus three" over "four plus five": \\frac{1+2+3}{4+5}',
        '3. "one quarter" over "two plus three": \\frac{\\frac{1}{4}}{2+3}',
    ]
    display = parse_checked(
        b"<p>Hence<math display='block'><msup><mi>e</mi><mrow><mi>i</mi><mi>&pi;</mi></mrow>"
        b"</msup><mo>+</mo><mn>1</mn><mo>=</mo><mn>0</mn></math>holds.</p>"
        b"<table><tr><th>Law</th></tr><tr><td><math><mi>F</mi><mo>=</mo><mi>m</mi><mi>a</mi>"
        b"</math></td></tr></table>",
        "display.html",
    )
    assert display.text_layer.splitlines()[:3] == ["Hence", "e^{i\\pi}+1=0", "holds."]
    assert display.text_layer.splitlines()[-1] == "F=ma"


def test_tex_annotation_is_preferred_over_the_presentation_markup() -> None:
    # The shape of MDN's quadratic-formula sample: presentation MathML plus the author's TeX.
    parsed = parse_checked(
        b"<p>Solve: <math><semantics><mrow><mi>a</mi><mo>&#x2062;</mo><msup><mi>x</mi><mn>2</mn>"
        b"</msup></mrow><annotation encoding='application/x-tex'>ax^2 + bx + c = 0</annotation>"
        b"</semantics></math>.</p>",
        "quadratic.html",
    )
    assert parsed.text_layer == "Solve: ax^2 + bx + c = 0."


def test_deeply_nested_mathml_is_read_within_bounds() -> None:
    depth = 20_000
    hostile_html = (
        b"<p>Deep <math>" + b"<mrow>" * depth + b"<mi>z</mi>" + b"</mrow>" * depth + b"</math>"
        b" end.</p>"
    )
    parsed = parse_checked(hostile_html, "deep.html")
    assert parsed.text_layer == "Deep z end."
    # JATS: libxml2 allows 256 levels; the converter reduces what is past its own cap to text.
    levels = 250
    hostile_jats = (
        b'<article dtd-version="1.2" xmlns:mml="http://www.w3.org/1998/Math/MathML"><front>'
        b"<article-meta><title-group><article-title>Deep</article-title></title-group>"
        b"</article-meta></front><body><p>Value <inline-formula><mml:math>"
        + b"<mml:msqrt>" * levels
        + b"<mml:mn>2</mml:mn>"
        + b"</mml:msqrt>" * levels
        + b"</mml:math></inline-formula> ok.</p></body></article>"
    )
    parsed = parse_checked(hostile_jats, "deep.nxml")
    body = parsed.text_layer.split("Value ", 1)[1]
    assert body.startswith("\\sqrt{" * mathml.MAX_DEPTH) and body.endswith(" ok.")
    assert "2" in body
