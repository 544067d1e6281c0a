"""The house's joins (issue 18 point 5): no import circles, and the benchmarks import no
test code.

The graph is read from the source (ast), not by importing: every ``import`` and ``from
... import`` in clock_service, firmware_bridge, web_ui, harness and bench, at module level
or inside a function (a function-level import that closes a circle still ties the two
modules together), but not those under ``if TYPE_CHECKING:`` (never run). An import names
its most specific module: ``from clock_service import events`` is an edge to
clock_service.events, ``from clock_service.events import Event`` one to clock_service.events
(not to the package ``clock_service`` as well: a package's ``__init__`` is not counted as
imported by each of its modules). The bench scripts import their neighbours by bare name
(``from observer import Observer``, bench/ is on sys.path when they run).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("clock_service", "firmware_bridge", "web_ui", "harness", "bench")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def _imported(name: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The dotted names an import statement in module ``name`` asks for."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    base = node.module or ""
    if node.level:  # relative: from the package of this module
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join([*package, *([base] if base else [])])
    for alias in node.names:
        yield f"{base}.{alias.name}" if base else alias.name
    yield base


@functools.cache
def import_graph() -> dict[str, frozenset[str]]:
    """module -> the modules it imports (of these packages, and of ``tests``)."""
    modules = _modules()
    graph: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_lines(tree)
        edges: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in skip:
                continue
            wanted = list(_imported(name, path, node))
            # ``from a import b``: the submodule a.b when there is one, else a itself.
            resolved = set()
            for target in wanted:
                if name.startswith("bench.") and f"bench.{target}" in modules:
                    target = f"bench.{target}"  # a bench script's neighbour, by bare name
                while target and target not in modules and not target.startswith("tests"):
                    target = target.rpartition(".")[0]
                if target:
                    resolved.add(target)
            if isinstance(node, ast.ImportFrom) and len(resolved) > 1 and (
                    node.module or "") in resolved:
                resolved.discard(node.module or "")  # only submodules were imported
            edges |= resolved
        edges.discard(name)
        graph[name] = frozenset(edges)
    return graph


def cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    graph = import_graph()
    assert len(graph) > 100 and "clock_service.clock" in graph  # the scan found the code
    assert cycles(graph) == []


def test_the_benchmarks_import_no_test_code() -> None:
    """Nothing bench/ imports, directly or through harness/ or the service, is in tests/."""
    graph = import_graph()
    seen: set[str] = set()
    todo = [name for name in graph if name.startswith("bench.")]
    assert todo
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        tests = sorted(t for t in graph.get(name, ()) if t.split(".")[0] == "tests")
        assert tests == [], f"{name} imports {tests}"
        todo.extend(graph.get(name, ()))


def test_the_scan_sees_circles_and_test_imports() -> None:
    """The checks above can fail: a circle of two, and an edge into tests."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    # Function-level imports count (cli.py imports most of the service inside functions).
    assert "clock_service.tournament.part" in graph["clock_service.cli"]
    # Bare-name neighbours in bench/ resolve to bench modules.
    assert "bench.observer" in graph["bench.bench"]
