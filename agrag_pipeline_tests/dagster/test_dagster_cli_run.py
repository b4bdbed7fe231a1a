"""``agrag materialize`` records a real run of the ``ingest_documents`` job.

Not a jobless in-process run: the run carries the origin of the code location ``dagster dev``
loads (``workspace.yaml``: the module ``agrag_pipeline.definitions``), so the UI lists it under
the job and re-executes it like any other; and it carries the fingerprint tags.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from agrag_pipeline.runtime import Runtime
from agrag_pipeline.settings import DEFAULT_SETTINGS_PATH

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_agrag_materialize_records_a_run_of_the_job_with_its_code_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "guide.md").write_text("# Guide\n\n## Install\n\nRun the installer.\n")
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO_ROOT / "agrag_pipeline" / "instance" / "dagster.yaml", home)
    env = {**os.environ, "DAGSTER_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    for name in ("AGRAG_RAW_ROOT", "AGRAG_WAREHOUSE_ROOT", "AGRAG_SETTINGS", "AGRAG_CACHE_DIR"):
        env.pop(name, None)
    done = subprocess.run(
        [
            str(REPO_ROOT / ".venv" / "bin" / "agrag"),
            "--raw-root",
            str(raw),
            "--warehouse",
            str(tmp_path / "warehouse"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "materialize",
        ],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the shipped storage's base_dir
    with dg.DagsterInstance.from_config(str(home)) as instance:
        [record] = instance.get_run_records()
        run = record.dagster_run
        assert run.job_name == "ingest_documents"
        origin = run.remote_job_origin
        assert origin is not None, "a jobless run: no code-location origin"
        assert origin.job_name == "ingest_documents"
        assert origin.repository_origin.repository_name == "__repository__"
        location = origin.repository_origin.code_location_origin.location_name
        assert location == "agrag_pipeline.definitions"  # dagster dev's name for workspace.yaml's
        assert run.tags["agrag/trigger"] == "cli"
        expected = Runtime.from_files(DEFAULT_SETTINGS_PATH).fingerprint_tags()
        assert expected.items() <= instance.get_run_by_id(run.run_id).tags.items()
        mat = instance.get_latest_materialization_event(dg.AssetKey("chunks"))
        assert mat is not None and mat.run_id == run.run_id
