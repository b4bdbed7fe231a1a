"""Shared helpers of the extraction tests: a raw root of small Markdown documents run through
the real pipeline (snapshot, sections, chunks) into a warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agrag_pipeline.extraction.settings import LlmSettings
from agrag_pipeline.pipeline import current_document, run_document
from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH, PipelineSettings, load_settings
from agrag_pipeline_tests.extraction.llm_support import gemma_gguf, llama_server


def settings_for(base_url: str, **llm: object) -> PipelineSettings:
    settings = load_settings(DEFAULT_SETTINGS_PATH)
    return settings.model_copy(update={"llm": LlmSettings(base_url=base_url, **llm)})  # type: ignore[arg-type]


def chunked_runtime(root: Path, settings: PipelineSettings, documents: dict[str, str]) -> Runtime:
    """Write ``documents`` under ``root/raw`` and chunk them (no extraction yet)."""
    raw = root / "raw"
    for key, text in documents.items():
        (raw / key).parent.mkdir(parents=True, exist_ok=True)
        (raw / key).write_text(text, encoding="utf-8")
    no_llm = settings.model_copy(update={"llm": None})
    rt = Runtime(settings=no_llm, raw_root=raw, warehouse_root=str(root / "warehouse"))
    for key in documents:
        run_document(rt, key, embed=False)
    return Runtime(
        settings=settings,
        raw_root=raw,
        warehouse_root=str(root / "warehouse"),
        cache_dir=root / "cache",
    )


__all__ = ["chunked_runtime", "current_document", "settings_for"]


@pytest.fixture(scope="session")
def llama_base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server (llama-cpp-python, the ``llm`` extra) serving the
    Gemma-3-270M GGUF on loopback, shared by every test that needs a real model."""
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(gemma_gguf(), log) as base_url:
        yield base_url
