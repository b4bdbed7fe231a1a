"""USPTO patents of 1976 to 2004 (APS fixed fields, then the first XML formats) read as the
ICE patents do: title, parties, abstract, the description's headings, the claims one block each;
never element paths, field codes, citations or class codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import detect, parse_document, patent_aps, patent_early_xml
from agrag_pipeline.parsing.errors import CorruptDocumentError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "patent"


def _headings(name: str) -> tuple[list[tuple[int, str]], str]:
    parsed = parse_checked((FIXTURES / name).read_bytes(), f"patents/{name}")
    return [(s.level, s.heading) for s in parsed.sections if s.heading], parsed.text_layer


def test_a_2002_grant_in_patdoc_xml_reads_as_a_patent() -> None:
    raw = (FIXTURES / "pg06442728.xml").read_bytes()
    assert detect.detect_media_type("pg06442728.xml", raw[:8192]) == patent_early_xml.MEDIA_TYPE
    headings, text = _headings("pg06442728.xml")
    assert headings == [
        (1, "Methods and apparatus for turbo code"),
        (2, "Abstract"),
        (2, "CROSS-REFERENCE TO RELATED APPLICATIONS"),
        (2, "FIELD OF THE INVENTION"),
        (2, "BACKGROUND OF THE INVENTION"),
        (2, "SUMMARY OF THE INVENTION"),
        (2, "BRIEF DESCRIPTION OF THE DRAWINGS"),
        (2, "DETAILED DESCRIPTION OF THE INVENTION"),
        (2, "Claims"),
    ]
    assert text.startswith(
        "Methods and apparatus for turbo code\n\nUS 06442728 B1, published 2002-08-27\n"
        "Application 09263431, filed 1999-03-04\n"
        "Inventors: Jian Cui (Nepean, CA); Bin Li (Ottawa, CA); Weng Tong (Ottawa, CA); "
        "Rui R. Wang (Ottawa, CA)\nAssignees: Nortel Networks Limited\n\nAbstract\n\n"
        "An interleaver receives incoming data frames of size N."
    )
    # A claim is one block, its steps (CLMSTEP) one per line.
    assert (
        "1. A method of interleaving elements of frames of signal data communication channel, "
        "the method comprising;\nstoring a frame of signal data comprising a plurality of "
        "elements as an array D having\nN1 rows enumerated as 0, 1, . . . N1−1; and\n"
    ) in text
    # ISO 8879's Greek entities (&agr;, &bgr;), which the DTD declares and HTML does not.
    assert "I(j,k)=I(j,αjk+βj)modP)" in text
    for code in ("SDOBI", "B540", "PDAT", "Currie", "CITED-BY-OTHER", "H03M"):
        assert code not in text, code  # element names, a citation, a class code


def test_a_2001_application_reads_its_examples_and_claims_with_their_references() -> None:
    headings, text = _headings("pa20010031492.xml")
    assert headings[:4] == [
        (1, "Assay reagent"),
        (2, "Abstract"),
        (2, "Description"),
        (2, "EXAMPLE 1"),
    ]
    assert headings[-1] == (2, "Claims")
    assert (
        "US 20010031492 A1, published 2001-10-18\nApplication 09728320, filed 2000-12-01\n"
        "Inventors: Jay Lewington (Bisley, GB); Katherine Isles (Oxon, GB); Sandy Primrose "
        "(High Wycombe, GB)\nAssignees: Azur Environmental"
    ) in text
    # The claim a claim depends on is words of its sentence, not a clause of its own.
    assert "2. The method as claimed in claim 1 wherein following contact with antibiotic" in text
    assert "200 μl aliquots" in text  # &mgr;: the unit's letter, which was lost
    assert "[0001]" not in text and "subdoc-" not in text and "FITCH EVEN" not in text


def test_a_1997_grant_in_aps_fields_reads_as_a_patent() -> None:
    raw = (FIXTURES / "pftaps057006474.txt").read_bytes()
    assert detect.detect_media_type("pftaps057006474.txt", raw[:8192]) == patent_aps.MEDIA_TYPE
    headings, text = _headings("pftaps057006474.txt")
    assert headings[:6] == [
        (1, "Carbocation containing cyanine-type dye"),
        (2, "Abstract"),
        (2, "Related Applications"),
        (2, "BACKGROUND OF THE INVENTION"),
        (2, "SUMMARY OF THE INVENTION"),
        (2, "BRIEF DESCRIPTION OF THE DRAWINGS"),
    ]
    assert (1, "EXAMPLE 5") not in headings and (2, "EXAMPLE 5") in headings
    assert headings[-1] == (2, "Claims")
    assert text.startswith(
        "Carbocation containing cyanine-type dye\n\nUS 05700647, issued 1997-12-23\n"
        "Application 5686806, filed 1995-12-07\nInventors: Takeshi Miyazaki (Ebina, JPX); "
    )
    assert "Assignees: Canon Kabushiki Kaisha (Tokyo, JPX)\n\nAbstract\n\nTo provide a" in text
    # A value's continuation lines join it; APS's in-line codes read as characters.
    assert "detect a subject compound to be measured with higher specificity and sensitibity." in (
        text
    )
    assert ".sub." not in text and "X2⊖ represents an anion" in text
    assert "Claims\n\nWhat is claimed is:\n\n1. A labeled complex for detecting" in text
    for code in ("PATN", "WKU", "UREF", "Houtteman", "Fitzpatrick", "Bronstein"):
        assert code not in text, code  # field names, the examiner, attorneys, citations


def test_a_text_file_that_only_starts_like_aps_is_refused_with_its_name() -> None:
    assert detect.detect_media_type("notes.txt", b"PATN is our project\nnotes") == detect.PLAIN
    with pytest.raises(CorruptDocumentError, match="not a USPTO APS file") as error:
        parse_document(b"TTL  A title\nPAR  text\n", "odd.txt", patent_aps.MEDIA_TYPE)
    assert str(error.value).startswith("odd.txt: ")


def test_an_aps_file_of_several_patents_reads_each_under_its_own_title() -> None:
    one = (FIXTURES / "pftaps057006474.txt").read_text()
    other = one.replace("TTL  Carbocation containing cyanine-type dye", "TTL  Second dye", 1)
    parsed = parse_document((one + other).encode(), "bulk/pftaps19971223_wk51.txt")
    titles = [s.heading for s in parsed.sections if s.level == 1 and s.heading]
    assert titles == ["Carbocation containing cyanine-type dye", "Second dye"]
    assert parsed.text_layer.count("\n\nClaims\n\nWhat is claimed is:") == 2
