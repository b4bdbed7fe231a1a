"""The core never imports Dagster; only the shell (defs/, definitions.py, cli.py) does."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "agrag_pipeline"
SHELL = {"defs", "definitions.py", "cli.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_core_module_imports_dagster() -> None:
    core_files = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in SHELL]
    assert len(core_files) > 20
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in core_files
        if {"dagster", "dagster_webserver", "dagster_graphql"} & _imports(p)
    ]
    assert offenders == []


def test_the_core_runs_a_document_without_loading_dagster(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "doc.md").write_text("# Title\n\nSome text.\n", encoding="utf-8")
    script = (
        "import sys\n"
        "from agrag_pipeline.pipeline import run_document\n"
        "from agrag_pipeline.runtime import Runtime\n"
        "from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH\n"
        f"rt = Runtime.from_files(DEFAULT_SETTINGS_PATH, {str(raw)!r}, {str(tmp_path / 'w')!r})\n"
        "result = run_document(rt, 'doc.md', embed=False)\n"
        "assert result.chunks and result.chunks[0].heading_path == ['Title']\n"
        "assert not any(m == 'dagster' or m.startswith('dagster.') for m in sys.modules), "
        "'dagster was imported'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
