"""The import structure of `src/sargable`: what `import sargable` loads, which modules the base layers may import,
and no import cycle between files (imports inside functions count)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src"

CYCLE_FREE = (
    "sargable.domain",
    "sargable.keys",
    "sargable.stats",
    "sargable.parquet_stats",
    "sargable.skipping",
    "sargable.plan",
    "sargable.expr.normalize",
)
"""Modules (and packages) that must not be part of any import cycle."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in (SOURCE / "sargable").rglob("*.py"):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the sargable modules it imports anywhere in its file (`from a import b` counts as `a.b` when that
    is a module)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for child in edges:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_through_the_base_layers() -> None:
    graph = import_graph()
    assert "sargable.skipping.vector" in graph["sargable.skipping.table"]
    for component in cycles(graph):
        inside = [m for m in component if m.startswith(CYCLE_FREE)]
        assert not inside, f"import cycle through {sorted(component)}"


def test_base_layers_import_only_what_is_below_them() -> None:
    graph = import_graph()
    assert graph["sargable.domain"] <= {"sargable.types"}
    assert graph["sargable.keys"] <= {"sargable.errors", "sargable.types"}
    assert graph["sargable.stats"] <= {"sargable.errors"}


def test_import_sargable_loads_neither_pandas_nor_the_parquet_reader() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, sargable; print(sorted(m for m in ('pandas', 'pyarrow.parquet') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert loaded == "[]"
