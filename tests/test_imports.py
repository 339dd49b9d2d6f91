"""The package's import graph: no cycle between files, no module reaching into another module's private names.

The graph is built from the source with `ast`, counting every import wherever it appears (module level or inside a
function): a function-level import that closes a cycle still ties the two files together. `from pkg import name`
is an edge to the submodule when `name` is one, else to the package's `__init__`.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "sargable"

KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()
"""Cycles (as their sets of modules) that exist on main today and are fixed on other branches: none."""

KNOWN_PRIVATE_IMPORTS: frozenset[tuple[str, str]] = frozenset()
"""(importer, private name) pairs that exist on main today and are fixed on other branches: none."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted((SRC / PACKAGE).rglob("*.py"))}


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module name an `ImportFrom` names, resolving `from . import x` and `from ..a import b`."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, str | None, int]]:
    """(imported module, private name or None, line) for every import of a package module in one file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    aliases[alias.asname or alias.name] = alias.name
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, path, node)
            if target not in modules:
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in modules:
                    aliases[alias.asname or alias.name] = submodule
                    yield submodule, None, node.lineno
                else:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    yield target, (f"{target}.{alias.name}" if private else None), node.lineno
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        if node.value.id in aliases and node.attr.startswith("_") and not node.attr.startswith("__"):
            target = aliases[node.value.id]
            yield target, f"{target}.{node.attr}", node.lineno


def import_graph() -> tuple[dict[str, set[str]], set[tuple[str, str]]]:
    """Edges module -> imported modules, and the (importer, private name) pairs across modules."""
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    private: set[tuple[str, str]] = set()
    for name, path in modules.items():
        for target, private_name, _ in _imports(name, path, modules):
            if target != name:
                edges[name].add(target)
                if private_name is not None:
                    private.add((name, private_name))
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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
                        found.append(frozenset(component))
    return found


def test_cycle_finder_finds_a_function_level_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_sees_imports_inside_functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from sargable.b import g\n    return g\n")
    (package / "b.py").write_text("from sargable import a\nfrom sargable.a import _hidden\n\ndef g():\n  return a._x\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    edges, private = import_graph()
    assert cycles(edges) == [frozenset({"sargable.a", "sargable.b"})]
    assert private == {("sargable.b", "sargable.a._hidden"), ("sargable.b", "sargable.a._x")}


def test_no_import_cycles_between_files() -> None:
    edges, _ = import_graph()
    found = set(cycles(edges))
    assert found - KNOWN_CYCLES == set(), "new import cycles between files"
    assert KNOWN_CYCLES - found == set(), "a known cycle is gone: remove it from KNOWN_CYCLES"


def test_no_module_imports_another_modules_private_names() -> None:
    _, private = import_graph()
    assert private - KNOWN_PRIVATE_IMPORTS == set(), "modules import other modules' private names"
    assert KNOWN_PRIVATE_IMPORTS - private == set(), "a known private import is gone: remove it from the list"


def test_expr_files_form_no_cycle() -> None:
    edges, _ = import_graph()
    expr = {name: {t for t in targets if t.startswith("sargable.expr.")} for name, targets in edges.items()}
    expr = {name: targets for name, targets in expr.items() if name.startswith("sargable.expr.")}
    assert cycles(expr) == []
    assert "sargable.expr.parser" not in edges["sargable.expr.render"]
    assert "sargable.expr.render" not in edges["sargable.expr.nodes"]


def test_base_layers_import_only_what_is_below_them() -> None:
    edges, _ = import_graph()
    assert edges["sargable.domain"] <= {"sargable.types"}
    assert edges["sargable.keys"] <= {"sargable.errors", "sargable.types"}
    assert edges["sargable.stats"] <= {"sargable.errors"}


HEAVY = ("pyarrow", "numpy", "pandas", "pyspark")
"""What start-up must not pay for: `import sargable` and the CLI's listing commands load none of them."""

_LOADED = "import atexit, sys; atexit.register(lambda: print(sorted(m for m in {heavy!r} if m in sys.modules)))\n"
_BLOCK = "import sys; sys.modules['pyspark'] = None\n"
"""Makes `import pyspark` (and every `pyspark.x`) fail as if pyspark were not installed."""


def _run(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, check=False)


def _heavy_loaded(code: str, *args: str) -> list[str]:
    done = _run(_LOADED.format(heavy=HEAVY) + code, *args)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_import_sargable_loads_no_heavy_module() -> None:
    assert _heavy_loaded("import sargable") == []
    assert _heavy_loaded("import sargable as sg; sg.parse('x = 1'); sg.Metastore; sg.SargableError") == []


@pytest.fixture(scope="module")
def small_metastore(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("startup")
    url = f"sqlite:///{folder / 'm.db'}"
    code = (
        "import sys, sargable as sg\n"
        "with sg.Metastore.open(sys.argv[1], warehouse=sys.argv[2], create=True) as ms:\n"
        "    ms.create_database('sales')\n"
        "    ms.create_table('sales', 'events', [('x', 'int')], [('ds', 'date'), ('hr', 'int')])\n"
        "    ms.add_partitions('sales', 'events', [('2024-01-01', h) for h in range(4)])\n"
        "    t = ms.table('sales', 'events')\n"
        "    t.record_write(t.begin_write().write_id, [t.location + '/stray.parquet'])\n"
        "    print(ms.get_table('sales', 'events').location)\n"
    )
    done = _run(code, url, str(folder))
    assert done.returncode == 0, done.stderr
    location = Path(done.stdout.strip())
    location.mkdir(parents=True, exist_ok=True)
    (location / "stray.parquet").write_bytes(b"left by a failed write")
    return url


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["tables"], ["partitions", "sales.events"], ["partitions", "sales.events", "--filter", "hr = 1"]],
    ids=lambda argv: " ".join(argv),
)
def test_quick_commands_load_no_heavy_module(argv: list[str], small_metastore: str) -> None:
    code = "import sys\nfrom sargable.cli import main\nsys.exit(main(sys.argv[1:]))"
    metastore = [] if argv == ["--help"] else ["--metastore", small_metastore]
    assert _heavy_loaded(code, *metastore, *argv) == []


def test_vacuum_runs_without_pyspark(small_metastore: str) -> None:
    code = _BLOCK + "from sargable.cli import main\nsys.exit(main(sys.argv[1:]))"
    done = _run(code, "--metastore", small_metastore, "vacuum", "sales.events", "--older-than", "0", "--json")
    assert done.returncode == 0, done.stderr
    assert [Path(f).name for f in json.loads(done.stdout)["files"]] == ["stray.parquet"]
    assert _run(_BLOCK + "from sargable import spark").returncode == 1
