"""Layering: the core never imports Dagster; only the shell (defs/, definitions.py, cli.py) does,
and only ``defs/dagster_internals.py`` takes names from Dagster's private modules; no module of
the package imports, at any depth and in any function, a module that imports it back."""

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


def _module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere: at module level, inside functions,
    under ``if TYPE_CHECKING`` (a cycle hidden in a function is a cycle all the same).
    ``from package import name`` counts as the submodule ``package.name`` when there is one."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(filter(None, (known(a.name) for a in node.names)))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    found = known(f"{source}.{alias.name}")
                    if found:
                        targets.add(found)
        graph[module] = targets - {module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_of_the_package_imports_a_module_that_imports_it_back() -> None:
    modules = _module_files()
    graph = _import_graph(modules)
    # Read inside functions too: the runtime builds its graph store in a method.
    assert "agrag_pipeline.sinks.graph.step" in graph["agrag_pipeline.runtime"]
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_only_dagster_internals_imports_dagster_private_modules() -> None:
    """Dagster may change a private module in any release: one file to check on an upgrade."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            if any(n.startswith("dagster._") for n in names):
                offenders.append(str(path.relative_to(PACKAGE)))
    assert sorted(set(offenders)) == ["defs/dagster_internals.py"]
