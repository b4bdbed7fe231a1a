"""USPTO patents in ICE XML are read as patents: title, parties, abstract, the description's
headings and the claims, not as generic XML's element paths."""

from __future__ import annotations

from pathlib import Path

from agrag_pipeline.parsing import detect, patent
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "patent" / "ipa20200022300.xml"


def test_a_patent_application_reads_its_headings_abstract_description_and_claims() -> None:
    parsed = parse_checked(FIXTURE.read_bytes(), "patents/ipa20200022300.xml")
    assert parsed.document.media_type == patent.MEDIA_TYPE == detect.USPTO
    title = (
        "SYSTEM FOR CONTROLLING THE OPERATION OF AN ACTUATOR MOUNTED ON A SEED PLANTING IMPLEMENT"
    )
    assert [(s.level, s.heading) for s in parsed.sections if s.heading] == [
        (1, title),
        (2, "Abstract"),
        (2, "FIELD"),
        (2, "BACKGROUND"),
        (2, "BRIEF DESCRIPTION"),
        (2, "BRIEF DESCRIPTION OF THE DRAWINGS"),
        (2, "DETAILED DESCRIPTION"),
        (2, "Claims"),
    ]
    text = parsed.text_layer
    assert text.startswith(
        f"{title}\n\nUS 20200022300 A1, published 2020-01-23\n"
        "Application 16039511, filed 2018-07-19\n"
        "Applicants: CNH Industrial Canada, Ltd. (Saskatoon, CA)\n"
        "Inventors: Joel John Octave Gervais (Saskatoon, CA); Ian William Patrick Paulson "
        "(Saskatoon, CA)\nCPC: A01B 63/32\n\nAbstract\n\nIn one aspect, a system"
    )
    # A claim is one block, its clauses one per line; the claim statement comes first.
    assert (
        "Claims\n\nWhat is claimed is:\n\n1. A system for controlling an operation of an "
        "actuator mounted on a seed planting implement, the system comprising:\na toolbar;\n"
        "a row unit adjustably mounted on the toolbar;\n"
    ) in text
    assert "FIG. 1 illustrates a perspective view" in text
    for path in ("us-bibliographic-data", "classification-cpc", "@lang", "doc-number"):
        assert path not in text


GRANT = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE us-patent-grant SYSTEM "us-patent-grant-v45-2014-04-03.dtd" [
<!ENTITY id1 SYSTEM "US01-D00000.TIF" NDATA TIF>
]>
<us-patent-grant lang="EN" dtd-version="v4.5 2014-04-03">
<us-bibliographic-data-grant>
<publication-reference><document-id><country>US</country><doc-number>09999999</doc-number>
<kind>B2</kind><date>20180102</date></document-id></publication-reference>
<invention-title id="d0e1">Rain gauge</invention-title>
<us-parties><inventors><inventor sequence="001" designation="us-only"><addressbook>
<last-name>Quell</last-name><first-name>Mara</first-name><address><city>Leeds</city>
<country>GB</country></address></addressbook></inventor></inventors></us-parties>
</us-bibliographic-data-grant>
<abstract id="abstract"><p id="p-0001" num="0000">A gauge that measures rain.</p></abstract>
<description id="description">
<p id="p-0002" num="0001">This gauge is read daily, as the table shows:</p>
<tables id="TABLE-US-00001" num="00001"><table frame="none"><tgroup align="left" cols="2">
<thead><row><entry>Day</entry><entry>Rain (mm)</entry></row></thead>
<tbody><row><entry>Monday</entry><entry>3.5</entry></row></tbody></tgroup></table></tables>
<heading id="h-0001" level="1">DETAILED DESCRIPTION</heading>
<p id="p-0003" num="0002">It holds:
<ul><li>a funnel;</li><li><ul><li>a scale marked in millimetres.</li></ul></li></ul></p>
</description>
<claims id="claims"><claim id="CLM-00001" num="00001"><claim-text>1. A rain gauge comprising:
<claim-text>a funnel; and</claim-text><claim-text>a scale.</claim-text></claim-text></claim>
</claims>
</us-patent-grant>
"""


def test_a_grants_table_list_and_text_before_its_first_heading_are_read() -> None:
    parsed = parse_checked(GRANT, "patents/rain.xml")
    assert [(s.level, s.heading, s.kind) for s in parsed.sections] == [
        (1, "Rain gauge", "text"),
        (2, "Abstract", "text"),
        (2, "Description", "text"),  # text before the description's first heading
        (2, None, "table"),
        (2, "DETAILED DESCRIPTION", "text"),
        (2, "Claims", "text"),
    ]
    text = parsed.text_layer
    assert "US 09999999 B2, published 2018-01-02\nInventors: Mara Quell (Leeds, GB)" in text
    assert "| Day | Rain (mm) |\n| - | - |\n| Monday | 3.5 |" in text
    assert "It holds:\n\n- a funnel;\n- a scale marked in millimetres." in text
    assert text.endswith("Claims\n\n1. A rain gauge comprising:\na funnel; and\na scale.")
    assert "TIF" not in text  # the image entity is no text
