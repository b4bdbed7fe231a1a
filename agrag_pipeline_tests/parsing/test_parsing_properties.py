"""Property-based: any generated Markdown parses into valid, covering spans, or a DocumentError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.contract import contract_violations
from agrag_pipeline.parsing.errors import DocumentError

_WORDS = st.text(
    alphabet=st.sampled_from(list("ab c*_`#|-=>[]()!é中😀𝄞\t")), min_size=0, max_size=20
)
_BLOCKS = st.one_of(
    st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 7), _WORDS),
    st.builds(lambda w, u: f"{w}\n{u * 3}", _WORDS, st.sampled_from(["=", "-"])),
    st.builds(lambda f, w: f"{f}\n# {w}\n{f}", st.sampled_from(["```", "~~~", "````"]), _WORDS),
    st.builds(lambda w: f"    # {w}", _WORDS),
    st.builds(lambda w: f"<!--\n# {w}\n-->", _WORDS),
    st.builds(
        lambda cols, rows, w: (
            "|"
            + "|".join(["h"] * cols)
            + "|\n|"
            + "|".join(["-"] * cols)
            + "|\n"
            + "\n".join("|" + "|".join([w] * cols) + "|" for _ in range(rows))
        ),
        st.integers(1, 3),
        st.integers(0, 3),
        _WORDS,
    ),
    st.builds(lambda w: f"- {w}\n  - {w}\n1. {w}", _WORDS),
    st.builds(lambda w: f"> {w}\n> # {w}", _WORDS),
    _WORDS,
)
_DOCUMENTS = st.builds(
    lambda blocks, sep: sep.join(blocks),
    st.lists(_BLOCKS, max_size=12),
    st.sampled_from(["\n\n", "\n", "\r\n", "\r\n\r\n"]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_DOCUMENTS)
def test_generated_markdown_gives_valid_covering_spans(source: str) -> None:
    try:
        parsed = parse_document(source.encode("utf-8"), "gen.md")
    except DocumentError:
        assert not source.strip()  # the only documented refusal for valid UTF-8 text
        return
    assert contract_violations(parsed) == []
    assert parsed.text_layer == source
    for section in parsed.sections:
        if section.heading is not None:
            assert parsed.text_layer[section.start] in "#" or section.level in (1, 2)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.sampled_from(["x.md", "x.txt", "x.html", "x.pdf"]))
def test_arbitrary_bytes_raise_only_document_errors(raw: bytes, key: str) -> None:
    try:
        parsed = parse_document(raw, key)
    except DocumentError as exc:
        assert str(exc).startswith(f"{key}: ")
        return
    assert contract_violations(parsed) == []
