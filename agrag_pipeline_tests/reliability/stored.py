"""What a warehouse holds, compared across runs: each file's content with ``created_at`` (the
time it was built, so never equal across runs) aside."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq


def stored_contents(root: Path, keep: Callable[[Path], bool]) -> dict[str, object]:
    """Every file under ``root`` that ``keep`` accepts (by its path relative to ``root``):
    Parquet as its rows and key-value metadata, JSON as its object, anything else as bytes."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or not keep(path.relative_to(root)):
            continue
        name = str(path.relative_to(root))
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            if "created_at" in table.column_names:
                table = table.drop_columns(["created_at"])
            found[name] = (table.to_pylist(), table.schema.metadata)
        elif path.suffix == ".json":
            record = json.loads(path.read_bytes())
            found[name] = {k: v for k, v in record.items() if k != "created_at"}
        else:
            found[name] = path.read_bytes()
    return found
