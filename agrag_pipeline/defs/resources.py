"""``PipelineResource``: where documents come from, where outputs go, which settings apply."""

from functools import lru_cache
from pathlib import Path

import dagster as dg

from agrag_pipeline.runtime import Runtime, resolve_roots


class PipelineResource(dg.ConfigurableResource):
    """Paths of the raw root, the warehouse (a path or an fsspec URI) and the settings file.

    Defaults come from ``AGRAG_RAW_ROOT``, ``AGRAG_WAREHOUSE_ROOT`` and ``AGRAG_SETTINGS`` when
    set, else from the project's ``data/`` folder.
    """

    raw_root: str
    warehouse_root: str
    settings_path: str
    cache_dir: str | None = None

    def runtime(self) -> Runtime:
        """The configured parts, built once per process and settings-file content, so the model
        loads once per run and an edited settings file is never served from a stale cache."""
        settings_text = Path(self.settings_path).read_bytes()
        return _runtime(
            settings_text, self.settings_path, self.raw_root, self.warehouse_root, self.cache_dir
        )


@lru_cache(maxsize=4)
def _runtime(
    settings_text: bytes,
    settings_path: str,
    raw_root: str,
    warehouse_root: str,
    cache_dir: str | None,
) -> Runtime:
    return Runtime.from_files(settings_path, raw_root, warehouse_root, cache_dir)


def default_pipeline_resource() -> PipelineResource:
    """Roots from the environment, else the defaults: ``runtime.resolve_roots``, the one
    precedence rule shared with the CLI and the benchmarks."""
    roots = resolve_roots()
    return PipelineResource(
        raw_root=roots.raw_root,
        warehouse_root=roots.warehouse_root,
        settings_path=roots.settings_path,
        cache_dir=roots.cache_dir,
    )
