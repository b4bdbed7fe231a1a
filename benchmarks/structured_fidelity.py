"""Fidelity of structured text and code (JSON, NDJSON, YAML, XML, notebooks, source files).

Run::

    .venv/bin/python -m benchmarks.structured_fidelity                 # the test fixtures
    .venv/bin/python -m benchmarks.structured_fidelity /path/to/folder # any folder

For these formats the reference text is the values themselves, read by the format's own
reader (no peer converts them to a text we could trust more): JSON and NDJSON by ``json``,
YAML by PyYAML's safe loader, each key and scalar; XML by lxml, every element's text, tail and
attribute value; a notebook's cell sources and text outputs; a source file's text. Scores
(``benchmarks.fidelity.words``: case-folded runs of letters and digits, bags with counts):
``cov`` the share of the reference's words in our text layer (counts matched: every value
once for each time it occurs), ``prec`` the share of our distinct words that the reference
holds (keys repeat in every path by design, so distinct words: what is left is what we add,
record positions ``[3]`` and ``line 4``, ``document 2``), ``sections`` and
``files/s`` (CPU seconds of this process, ``parse_document`` including reading quality).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import yaml
from lxml import etree

from agrag_pipeline.file_kinds import kind_of
from agrag_pipeline.parsing import parse_document
from agrag_pipeline.parsing.errors import DocumentError
from benchmarks.fidelity import words

FIXTURES = Path(__file__).resolve().parents[1] / "agrag_pipeline_tests" / "fixtures" / "structured"


def _scalars(value: object) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    elif value is not None:
        yield str(value) if not isinstance(value, bool) else str(value).lower()


def _notebook_text(raw: bytes) -> Iterator[str]:
    for cell in json.loads(raw).get("cells", []):
        yield "".join(cell.get("source", ""))
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            yield "".join(text)


def reference(path: Path) -> tuple[str, str]:
    """The values of ``path`` as its own format's reader gives them, one per line, and the
    names around them that are not values (XML element and attribute names; '' elsewhere)."""
    raw = path.read_bytes()
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "\n".join(_scalars(json.loads(raw))), ""
    if suffix in (".ndjson", ".jsonl"):
        lines = raw.decode("utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        return "\n".join(s for record in records for s in _scalars(record)), ""
    if suffix in (".yaml", ".yml"):
        return "\n".join(s for doc in yaml.safe_load_all(raw) for s in _scalars(doc)), ""
    if suffix == ".xml":
        root = etree.fromstring(raw, etree.XMLParser(resolve_entities=False, no_network=True))
        elements = [e for e in root.iter() if isinstance(e.tag, str)]
        values = [t for e in elements for t in (e.text, e.tail, *e.attrib.values()) if t]
        names = [n for e in elements for n in (etree.QName(e).localname, *e.attrib.keys())]
        return "\n".join(values), "\n".join(names)
    if suffix == ".ipynb":
        return "\n".join(_notebook_text(raw)), ""
    return raw.decode("utf-8", "replace"), ""


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else FIXTURES
    rows: dict[str, list[tuple[float, float, int, float]]] = defaultdict(list)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and kind_of(p.name)):
        raw = path.read_bytes()
        started = time.process_time()
        try:
            parsed = parse_document(raw, path.name)
        except DocumentError as exc:
            print(f"{path.name}: {exc.problem}", file=sys.stderr)
            continue
        seconds = time.process_time() - started
        values, names = reference(path)
        ours, ref = Counter(words(parsed.text_layer)), Counter(words(values))
        cov = sum((ours & ref).values()) / max(1, sum(ref.values()))
        known = ref.keys() | set(words(names))
        prec = len(ours.keys() & known) / max(1, len(ours))
        kind = kind_of(path.name) or "?"
        rows[kind].append((cov, prec, len(parsed.sections), seconds))
    print("| kind | files | cov | prec | sections | files/s |")
    print("|---|---|---|---|---|---|")
    for kind, scores in sorted(rows.items()):
        n = len(scores)
        cov = sum(s[0] for s in scores) / n
        prec = sum(s[1] for s in scores) / n
        sections = sum(s[2] for s in scores)
        rate = n / max(1e-9, sum(s[3] for s in scores))
        print(f"| {kind} | {n} | {cov:.3f} | {prec:.3f} | {sections} | {rate:.1f} |")


if __name__ == "__main__":
    main()
