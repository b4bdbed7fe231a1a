"""JATS XML: title, abstract, nested section headings, captions, tables, references; hostile XML."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agrag_pipeline.models import Section
from agrag_pipeline.parsing import ParsedDocument, jats, parse_document
from agrag_pipeline.parsing.archive import hardened_xml_parser
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.errors import CorruptDocumentError

TITLE = (
    "Risk factors associated with failing pre-transmission assessment surveys (pre-TAS) in "
    "lymphatic filariasis elimination programs: Results of a multi-country analysis"
)

ARTICLE = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Publishing DTD v1.2 20190208//EN"
  "JATS-journalpublishing1.dtd">
<article xmlns:xlink="http://www.w3.org/1999/xlink" dtd-version="1.2"
  article-type="research-article">
<front><article-meta>
  <title-group><article-title>Soil &amp; water</article-title></title-group>
  <contrib-group><contrib contrib-type="author"><name><surname>Okafor</surname>
    <given-names>Ngozi</given-names></name></contrib></contrib-group>
  <abstract><p>We measured&nbsp;soil.</p></abstract>
</article-meta></front>
<body>
  <sec><label>1</label><title>Methods</title><p>See <xref ref-type="bibr" rid="r1">[1]</xref>.</p>
    <sec><title>Sampling</title>
      <p>Cores were taken:<list list-type="bullet"><list-item><p>at dawn</p></list-item>
        <list-item><p>at dusk</p></list-item></list> every day.</p>
      <table-wrap><label>Table 1</label><caption><title>Sites.</title></caption>
        <table><thead><tr><th>Site</th><th>Depth</th></tr></thead>
          <tbody><tr><td rowspan="2">North</td><td>10 cm</td></tr><tr><td>20 cm</td></tr></tbody>
        </table><table-wrap-foot><fn><p>Depth below surface.</p></fn></table-wrap-foot>
      </table-wrap>
    </sec>
  </sec>
</body>
<back><ref-list><title>Literature</title>
  <ref id="r1"><label>1</label><element-citation publication-type="journal">
    <person-group person-group-type="author"><name><surname>Smith</surname>
    <given-names>J</given-names></name></person-group><article-title>Soil cores</article-title>
    <source>Geoderma</source><year>2001</year><pub-id pub-id-type="doi">10.1/x</pub-id>
  </element-citation></ref>
  <ref id="r2"><label>2</label><mixed-citation publication-type="journal"><person-group>
    <name><surname>Lee</surname><given-names>K</given-names></name></person-group>. Roots.
    <source>Plant Soil</source>. 2002.</mixed-citation></ref>
</ref-list></back>
</article>
"""


def _parse(raw: bytes, key: str = "article.nxml") -> ParsedDocument:
    parsed = parse_document(raw, key)
    assert contract_violations(parsed) == []
    return parsed


def _section(parsed: ParsedDocument, heading: str) -> Section:
    return next(s for s in parsed.sections if s.heading == heading)


def _corpus(corpus_dir: Path, name: str) -> ParsedDocument:
    return _parse((corpus_dir / "jats" / name).read_bytes(), f"jats/{name}")


def test_title_abstract_and_nested_section_headings(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "pntd.0008301.nxml")
    title = _section(parsed, TITLE)
    assert title.level == 1
    abstract = _section(parsed, "Abstract")
    assert abstract.level == 2 and abstract.parent_id == title.id
    assert "Achieving elimination of lymphatic filariasis" in abstract.text_in(parsed.text_layer)
    baseline = _section(parsed, "Baseline prevalence")
    assert baseline.level == 4
    assert baseline.heading_path == [
        TITLE,
        "Methods",
        "Outcome and covariate variables",
        "Baseline prevalence",
    ]
    assert "proxy for local transmission conditions" in baseline.text_in(parsed.text_layer)
    authors = parsed.text_layer[title.start : abstract.start]
    assert "Clara R. Burgert-Brucker, Kathryn L. Zoerhoff" in authors
    assert "Global Health Division, RTI International" in authors


def test_figure_and_table_captions_and_table_rows(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "pntd.0008301.nxml")
    text = parsed.text_layer
    assert "\n\nFig 1 Number of pre-TAS by country.\n\n" in text
    tables = [s for s in parsed.sections if s.kind == "table"]
    assert len(tables) == 2
    second = tables[1]
    assert second.heading_path == [TITLE, "Results"]
    caption = "Table 2 Adjusted risk ratios for pre-TAS failure from log-binomial model"
    assert caption in text[: second.start].rsplit("\n\n", 2)[-2]
    assert second.table_header is not None
    header = text[second.table_header.start : second.table_header.end]
    assert header.splitlines()[0] == "|  |  | (1) | (2) | (3) | (4) |"
    first_row = second.table_rows[0]
    assert (
        text[first_row.start : first_row.end] == "| Number of Failures | 74 | 74 | 44 | 72 | 46 |"
    )
    assert len(second.table_rows) == 9


def test_references_are_their_own_section_one_line_each(corpus_dir: Path) -> None:
    parsed = _corpus(corpus_dir, "pntd.0008301.nxml")
    references = _section(parsed, "References")
    assert references.level == 2 and references.heading_path == [TITLE, "References"]
    lines = references.text_in(parsed.text_layer).splitlines()[2:]
    assert len(lines) == 53
    assert lines[0].startswith("[1] World Health Organization. Lymphatic filariasis: progress")
    acknowledgments = _section(parsed, "Acknowledgments")
    assert acknowledgments.start < references.start


def test_lists_spans_footnotes_entities_and_element_citations() -> None:
    parsed = _parse(ARTICLE)
    text = parsed.text_layer
    assert _section(parsed, "Soil & water").level == 1
    assert "We measured soil." in text  # &nbsp;, left unresolved by the parser, is read
    methods = _section(parsed, "1 Methods")
    sampling = _section(parsed, "Sampling")
    assert sampling.parent_id == methods.id and sampling.level == 3
    assert "Cores were taken:\n\n- at dawn\n- at dusk\n\nevery day." in text
    table = next(s for s in parsed.sections if s.kind == "table")
    rows = [text[r.start : r.end] for r in table.table_rows]
    assert rows == ["| North | 10 cm |", "| North | 20 cm |"]  # rowspan repeats the cell
    assert "Table 1 Sites." in text and "Depth below surface." in text
    literature = _section(parsed, "Literature")
    assert "[1] Smith J. Soil cores. Geoderma. 2001" in literature.text_in(text)
    # Name parts written without a space between them in the XML are separate words.
    assert "[2] Lee K. Roots. Plant Soil. 2002." in literature.text_in(text)
    assert "10.1/x" not in text


def test_namespaced_jats_reads_the_same() -> None:
    raw = ARTICLE.replace(b"<article ", b'<article xmlns="http://jats.nlm.nih.gov/ns" ')
    assert [s.heading for s in _parse(raw).sections] == [
        s.heading for s in _parse(ARTICLE).sections
    ]


def test_billion_laughs_is_refused_quickly() -> None:
    bomb = b'<?xml version="1.0"?>\n<!DOCTYPE article [\n<!ENTITY lol "lol">\n'
    for i in range(1, 10):
        prev = b"&lol;" if i == 1 else b"&lol%d;" % (i - 1)
        bomb += b'<!ENTITY lol%d "%s">\n' % (i, prev * 10)
    bomb += b"]>\n<article><body><p>&lol9;</p></body></article>"
    started = time.perf_counter()
    with pytest.raises(CorruptDocumentError, match=r"lol\.nxml: .*declares entities"):
        parse_document(bomb, "lol.nxml")
    assert time.perf_counter() - started < 1


def test_external_entity_never_reads_local_files() -> None:
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE article [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<article><body><p>&x;</p></body></article>"
    )
    with pytest.raises(CorruptDocumentError, match="declares entities"):
        parse_document(xxe, "xxe.nxml")
    # Past our check, the parser itself resolves nothing (no DTD, no network, no entities).
    root = jats.etree.fromstring(xxe, hardened_xml_parser())
    assert "root:" not in jats.inline(root)


def test_a_plain_text_entity_is_expanded_and_many_references_to_a_long_one_are_refused() -> None:
    # What D-Bus introspection files and DocBook manuals declare: a name for a repeated string.
    doc = (
        b'<?xml version="1.0"?>\n<!DOCTYPE node [\n  <!ENTITY ERROR_GENERAL '
        b'"org.freedesktop.packagekit.Denied">\n]>\n<node><doc><para>Fails with &ERROR_GENERAL; '
        b"when refused &amp; logged.</para></doc></node>"
    )
    text = parse_document(doc, "interface.xml").text_layer
    assert "Fails with org.freedesktop.packagekit.Denied when refused & logged." in text
    long_text = b"x" * 1024
    flood = (
        b'<!DOCTYPE node [<!ENTITY big "'
        + long_text
        + b'">]><node><para>'
        + b"&big;" * 2000
        + b"</para></node>"
    )
    with pytest.raises(CorruptDocumentError, match=r"flood\.xml: the XML's entities would add"):
        parse_document(flood, "flood.xml")


def test_malformed_and_non_article_xml_are_clear_errors() -> None:
    with pytest.raises(CorruptDocumentError, match=r"cut\.nxml: not well-formed XML"):
        parse_document(ARTICLE[: len(ARTICLE) // 2], "cut.nxml")
    with pytest.raises(CorruptDocumentError, match=r"svg\.nxml: not a JATS article: .*<svg>"):
        parse_document(b"<svg><text>hi</text></svg>", "svg.nxml")


def test_xml_and_txt_holding_jats_are_parsed_as_jats() -> None:
    for key in ("paper.xml", "paper.txt"):
        parsed = _parse(ARTICLE, key)
        assert parsed.document.media_type == jats.MEDIA_TYPE
        assert "<article" not in parsed.text_layer


def test_body_without_sections_is_not_read_as_the_abstract() -> None:
    raw = (
        b'<article dtd-version="1.3"><front><article-meta><title-group><article-title>Letter'
        b"</article-title></title-group><abstract><p>Short summary.</p></abstract>"
        b"</article-meta></front><body><p>We write to report"
        b'<disp-formula><label>(1)</label><mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML">'
        b"<mml:mi>E</mml:mi><mml:mo>=</mml:mo><mml:mi>m</mml:mi></mml:math></disp-formula>"
        b"as shown.</p></body></article>"
    )
    parsed = _parse(raw, "letter.xml")
    main = _section(parsed, "Main text")
    assert main.heading_path == ["Letter", "Main text"]
    expected = "Main text\n\nWe write to report\n\nE=m (1)\n\nas shown."
    assert main.text_in(parsed.text_layer) == expected
    assert "We write" not in _section(parsed, "Abstract").text_in(parsed.text_layer)


def test_preformatted_text_and_block_code_keep_their_indentation() -> None:
    raw = b"""<article><front><article-meta><title-group><article-title>Code</article-title>
</title-group></article-meta></front><body><sec><title>Methods</title>
<p>We ran:</p>
<preformat>for f in *.fq; do
    trim "$f"
done</preformat>
<code language="python">def fit(x):
    return x  # the model</code>
</sec></body></article>"""
    text = _parse(raw).text_layer
    assert 'We ran:\n\nfor f in *.fq; do\n    trim "$f"\ndone\n\n' in text
    assert text.endswith("def fit(x):\n    return x  # the model")
