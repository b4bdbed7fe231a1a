"""Score extraction against a labelled set: precision and recall per entity and relation type.

The labels (``data/extraction_eval.yaml``) are per document: which entities and relations a
careful reader finds under the graph schema. The documents are run through the real pipeline
(snapshot, sections, chunks, extraction with the configured endpoint and the response cache)
into a scratch warehouse, and the union of their mentions is compared with the labels after
name normalisation, so a user can judge the model they point ``llm.base_url`` at.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agrag_pipeline.extraction.extract import normalise_name
from agrag_pipeline.extraction.step import read_mentions
from agrag_pipeline.pipeline import current_document, run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import PipelineSettings
from agrag_pipeline.storage.tables import read_metadata

DEFAULT_LABELS = Path(__file__).resolve().parents[2] / "data" / "extraction_eval.yaml"


@dataclass
class Score:
    predicted: int = 0
    labelled: int = 0
    matched_predicted: int = 0
    matched_labelled: int = 0

    @property
    def precision(self) -> float | None:
        return self.matched_predicted / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.matched_labelled / self.labelled if self.labelled else None


@dataclass
class EvalReport:
    entities: dict[str, Score] = field(default_factory=lambda: defaultdict(Score))
    relations: dict[str, Score] = field(default_factory=lambda: defaultdict(Score))
    calls: int = 0
    failed_chunks: int = 0

    def lines(self) -> list[str]:
        out = [f"{'kind':<9} {'type':<14} {'P':>6} {'R':>6} {'pred':>5} {'gold':>5}"]
        for kind, scores in (("entity", self.entities), ("relation", self.relations)):
            total = Score()
            for name, s in sorted(scores.items()):
                out.append(_line(kind, name, s))
                for attr in ("predicted", "labelled", "matched_predicted", "matched_labelled"):
                    setattr(total, attr, getattr(total, attr) + getattr(s, attr))
            out.append(_line(kind, "(all)", total))
        out.append(f"model calls: {self.calls}; failed chunks: {self.failed_chunks}")
        return out


def _line(kind: str, name: str, s: Score) -> str:
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    return (
        f"{kind:<9} {name:<14} {pct(s.precision):>6} {pct(s.recall):>6} "
        f"{s.predicted:>5} {s.labelled:>5}"
    )


def evaluate_extraction(
    settings: PipelineSettings, corpus_root: Path, labels_path: Path, cache_dir: Path
) -> EvalReport:
    """Extract the labelled documents with ``settings`` and score them."""
    labels = yaml.safe_load(labels_path.read_text(encoding="utf-8"))
    report = EvalReport()
    with tempfile.TemporaryDirectory(prefix="agrag-eval-extraction-") as scratch:
        rt = Runtime(
            settings=settings, raw_root=corpus_root, warehouse_root=scratch, cache_dir=cache_dir
        )
        for doc in labels["documents"]:
            key = doc["source_key"]
            run_document(rt, key, embed=False)
            entities, relations = read_mentions(rt.warehouse, current_document(rt.warehouse, key))
            meta = read_metadata(entities)
            report.calls += int(json.loads(meta.get("stats", "{}")).get("calls", 0))
            report.failed_chunks += len(json.loads(meta.get("failed_chunks", "{}")))
            _score_document(doc, entities.to_pylist(), relations.to_pylist(), report)
    return report


def _score_document(
    doc: dict[str, Any],
    entity_rows: list[dict[str, Any]],
    relation_rows: list[dict[str, Any]],
    report: EvalReport,
) -> None:
    # Each label's canonical name and every spelling that counts as it.
    canonical: dict[tuple[str, str], str] = {}
    gold_entities: set[tuple[str, str]] = set()
    for label in doc.get("entities") or []:
        name = normalise_name(label["name"])
        gold_entities.add((label["type"], name))
        for spelling in [label["name"], *label.get("aliases", [])]:
            canonical[(label["type"], normalise_name(spelling))] = name

    def resolve(kind: str, name: str) -> str:
        return canonical.get((kind, name), name)

    predicted = {(r["type"], resolve(r["type"], r["normalised_name"])) for r in entity_rows}
    for kind in {k for k, _ in predicted | gold_entities}:
        s = report.entities[kind]
        p = {e for e in predicted if e[0] == kind}
        g = {e for e in gold_entities if e[0] == kind}
        s.predicted += len(p)
        s.labelled += len(g)
        s.matched_predicted += len(p & g)
        s.matched_labelled += len(p & g)

    gold_relations = {
        (
            r["type"],
            normalise_name(r["source"]),
            normalise_name(r["target"]),
        )
        for r in doc.get("relations") or []
    }
    name_of = {r["entity_id"]: (r["type"], r["normalised_name"]) for r in entity_rows}
    predicted_relations: set[tuple[str, str, str]] = set()
    for r in relation_rows:
        source, target = name_of.get(r["source_id"]), name_of.get(r["target_id"])
        if source is None or target is None:
            continue
        predicted_relations.add((r["type"], resolve(*source), resolve(*target)))
    for kind in {k for k, _, _ in predicted_relations | gold_relations}:
        r_score = report.relations[kind]
        r_pred = {x for x in predicted_relations if x[0] == kind}
        r_gold = {x for x in gold_relations if x[0] == kind}
        r_score.predicted += len(r_pred)
        r_score.labelled += len(r_gold)
        r_score.matched_predicted += len(r_pred & r_gold)
        r_score.matched_labelled += len(r_pred & r_gold)
