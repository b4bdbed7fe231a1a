"""A mistake at the command line (a root or settings file that cannot be used) ends in one line
on stderr naming the path and the problem, with its own exit status, never a traceback: real
``agrag`` processes against real missing paths, files in the way, folders without permission
and broken settings files."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agrag_pipeline.cli import EXIT_STATUS, main

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Root reads chmod-000 folders; without these capabilities it gets EACCES, as a user would.
_DROP = "-dac_override,-dac_read_search"
_SETPRIV = ["setpriv", f"--inh-caps={_DROP}", f"--bounding-set={_DROP}"]
needs_setpriv = pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")


@dataclass
class Place:
    """A working raw root, warehouse and settings, and the broken things beside them."""

    tmp: Path
    raw: Path
    warehouse: Path
    a_file: Path
    env: dict[str, str]

    def agrag(
        self, *argv: str, env: dict[str, str] | None = None, prefix: list[str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The installed ``agrag`` command (``python -m agrag_pipeline.cli`` without one)."""
        script = Path(sys.executable).parent / "agrag"
        command = [str(script)] if script.exists() else [sys.executable, "-m", "agrag_pipeline.cli"]
        return subprocess.run(
            [*(prefix or []), *command, *argv],
            env={**self.env, **(env or {})},
            cwd=self.tmp,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "doc.md").write_text("# Doc\n\ntext\n", encoding="utf-8")
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGRAG_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        AGRAG_RAW_ROOT=str(raw),
        AGRAG_WAREHOUSE_ROOT=str(tmp_path / "warehouse"),
        DAGSTER_HOME=str(tmp_path / "dagster_home"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    yield Place(tmp_path, raw, tmp_path / "warehouse", a_file, env)
    for path in tmp_path.rglob("*"):  # let pytest remove what a test locked
        if path.is_dir() and not path.is_symlink():
            path.chmod(stat.S_IRWXU)


def assert_refused(
    out: subprocess.CompletedProcess[str], kind: str, path: Path | str, problem: str
) -> None:
    """Exit status of ``kind``, and stderr one line naming ``path`` and ``problem``."""
    shown = f"status {out.returncode}\nstdout:\n{out.stdout}\nstderr:\n{out.stderr}"
    assert "Traceback" not in out.stderr, shown
    assert out.returncode == EXIT_STATUS[kind], shown
    lines = out.stderr.splitlines()
    assert len(lines) == 1, shown
    assert str(path) in lines[0] and problem in lines[0], shown
    assert out.stdout == "", shown  # refused before any work (nothing announced or started)


#: Every command with the arguments it needs; each refuses before it would run or serve.
COMMANDS = {
    "core": ["core", "--no-embed", "--workers", "1"],
    "materialize": ["materialize"],
    "index": ["index"],
    "search": ["search", "what is a closure", "--mode", "bm25"],
    "eval": ["eval", "questions.tsv"],
    "serve-embeddings": ["serve-embeddings", "--port", "1"],
}
_RAW_ROOT_COMMANDS = ["core", "materialize"]


@pytest.mark.parametrize("command", _RAW_ROOT_COMMANDS)
def test_a_missing_raw_root_is_one_line_and_status_3(place: Place, command: str) -> None:
    missing = place.tmp / "no-such-folder"
    out = place.agrag(*COMMANDS[command], "--raw-root", str(missing))
    assert_refused(out, "raw_root_missing", missing, "(given by --raw-root): does not exist")
    assert not place.warehouse.exists()


def test_a_raw_root_from_the_environment_is_named_with_its_variable(place: Place) -> None:
    missing = place.tmp / "gone"
    out = place.agrag(*COMMANDS["core"], env={"AGRAG_RAW_ROOT": str(missing)})
    assert_refused(out, "raw_root_missing", missing, "given by AGRAG_RAW_ROOT")


@pytest.mark.parametrize("command", _RAW_ROOT_COMMANDS)
def test_a_raw_root_that_is_a_file_is_one_line_and_status_4(place: Place, command: str) -> None:
    out = place.agrag(*COMMANDS[command], "--raw-root", str(place.a_file))
    assert_refused(out, "raw_root_not_a_folder", place.a_file, "is a file, not a folder")


@needs_setpriv
@pytest.mark.parametrize("command", _RAW_ROOT_COMMANDS)
def test_an_unreadable_raw_root_is_one_line_and_status_5(place: Place, command: str) -> None:
    place.raw.chmod(0)
    out = place.agrag(*COMMANDS[command], prefix=_SETPRIV)
    assert_refused(out, "raw_root_unreadable", place.raw, "cannot be listed: Permission denied")


@pytest.mark.parametrize("command", ["core", "materialize", "index", "search", "eval"])
def test_a_warehouse_that_is_a_file_is_one_line_and_status_6(place: Place, command: str) -> None:
    out = place.agrag(*COMMANDS[command], "--warehouse", str(place.a_file))
    assert_refused(out, "output_not_a_folder", place.a_file, "is a file, not a folder")


def test_a_warehouse_below_a_file_names_the_file_in_the_way(place: Place) -> None:
    below = place.a_file / "warehouse"
    out = place.agrag(*COMMANDS["core"], "--warehouse", str(below))
    assert_refused(
        out, "output_not_a_folder", below, f"cannot be created: {place.a_file} is a file"
    )


def test_an_embedding_cache_that_is_a_file_is_refused(place: Place) -> None:
    out = place.agrag(*COMMANDS["serve-embeddings"], "--cache-dir", str(place.a_file))
    assert_refused(out, "output_not_a_folder", place.a_file, "is a file, not a folder")


def test_a_dagster_home_that_is_a_file_is_refused(place: Place) -> None:
    out = place.agrag(*COMMANDS["materialize"], env={"DAGSTER_HOME": str(place.a_file)})
    assert_refused(out, "output_not_a_folder", place.a_file, "given by DAGSTER_HOME")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_missing_settings_file_is_one_line_and_status_8(place: Place, command: str) -> None:
    missing = place.tmp / "no-such-settings.yaml"
    out = place.agrag(*COMMANDS[command], "--settings", str(missing))
    assert_refused(out, "input_unreadable", missing, "cannot be read: No such file or directory")


def test_a_settings_path_that_is_a_folder_is_refused(place: Place) -> None:
    out = place.agrag(*COMMANDS["core"], "--settings", str(place.raw))
    assert_refused(out, "input_unreadable", place.raw, "cannot be read: Is a directory")


@needs_setpriv
def test_an_unreadable_settings_file_is_one_line_and_status_8(place: Place) -> None:
    settings = place.tmp / "private.yaml"
    settings.write_text((REPO_ROOT / "data" / "pipeline.yaml").read_text(encoding="utf-8"))
    settings.chmod(0)
    out = place.agrag(*COMMANDS["core"], "--settings", str(settings), prefix=_SETPRIV)
    assert_refused(out, "input_unreadable", settings, "cannot be read: Permission denied")


def test_a_missing_questions_file_of_eval_is_refused(place: Place) -> None:
    missing = place.tmp / "questions.tsv"
    out = place.agrag(*COMMANDS["eval"])
    assert_refused(out, "input_unreadable", "questions.tsv", "cannot be read")
    assert not missing.exists()


@pytest.mark.parametrize("command", ["core", "index", "serve-embeddings"])
def test_settings_that_are_not_yaml_are_one_line_and_status_9(place: Place, command: str) -> None:
    broken = place.tmp / "broken.yaml"
    broken.write_text("chunker:\n  max_tokens: [256\n", encoding="utf-8")
    out = place.agrag(*COMMANDS[command], "--settings", str(broken))
    assert_refused(out, "settings_invalid", broken, "is not valid YAML: line 3, column 1:")


@pytest.mark.parametrize("command", ["core", "materialize", "search"])
def test_a_wrong_setting_names_the_field_in_one_line_and_status_9(
    place: Place, command: str
) -> None:
    text = (REPO_ROOT / "data" / "pipeline.yaml").read_text(encoding="utf-8")
    assert "  max_tokens: 256" in text
    wrong = place.tmp / "wrong.yaml"
    wrong.write_text(
        text.replace("  max_tokens: 256", "  max_tokens: lots\n  max_tokenz: 3", 1),
        encoding="utf-8",
    )
    out = place.agrag(*COMMANDS[command], "--settings", str(wrong))
    assert_refused(out, "settings_invalid", wrong, "chunker.max_tokens: Input should be")
    assert "chunker.max_tokenz: Extra inputs are not permitted" in out.stderr


def test_every_kind_of_mistake_has_its_own_documented_exit_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    statuses = list(EXIT_STATUS.values())
    assert len(set(statuses)) == len(statuses)
    assert not {0, 1, 2} & set(statuses)  # done, a document failed, argparse's usage error
    for argv in ([], *([command] for command in COMMANDS)):
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        text = capsys.readouterr().out
        assert "exit status:" in text, argv
        for status in statuses:
            assert f"\n  {status}  " in text, (argv, status)
