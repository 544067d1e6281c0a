"""The house's joins (issue 18 point 5): no import circles, and the benchmarks import no
test code.

The graph is read from the source (ast), not by importing: every ``import`` and ``from
... import`` in clock_service, firmware_bridge, web_ui, harness and bench, at module level
or inside a function (a function-level import that closes a circle still ties the two
modules together), but not those under ``if TYPE_CHECKING:`` (never run). An import names
its most specific module: ``from clock_service.core import events`` is an edge to
clock_service.core.events, ``from clock_service.core.events import Event`` one to clock_service.core.events
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
    assert len(graph) > 100 and "clock_service.core.clock" in graph  # the scan found the code
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
    assert "clock_service.edges.tournament.part" in graph["clock_service.edges.cli.main"]
    # Bare-name neighbours in bench/ resolve to bench modules.
    assert "bench.observer" in graph["bench.bench"]


# -- the floors (issue 38 point 1) -------------------------------------------------------------
# core: no I/O, imports only the core; service: the core and itself; edges: the core, the
# service and their own package. Edges meet only through the service; the CLI is the
# composition root (it builds every part and hands them over), so it may import any edge.
# firmware_bridge (the hardware bridge) and web_ui (the pages) are edges outside the package.
FLOORS = {"core": 0, "service": 1, "edges": 2}
COMPOSITION = "clock_service.edges.cli"
# Arrows that still cross between edges, each with what removes it. The test fails on any
# other, and on one of these that no longer exists (so the list only shrinks).
CROSSING: dict[tuple[str, str], str] = {}


def floor_of(module: str) -> tuple[str, str] | None:
    """(floor, room) of a module of the product: room is the edge's package."""
    parts = module.split(".")
    if parts[0] in ("firmware_bridge", "web_ui"):
        return "edges", parts[0]
    if parts[0] != "clock_service" or len(parts) < 2 or parts[1] not in FLOORS:
        return None
    if parts[1] == "edges":  # the package ``clock_service.edges`` itself is no room
        return ("edges", ".".join(parts[:3])) if len(parts) > 2 else None
    return parts[1], parts[1]


def floor_violations(graph: Mapping[str, Collection[str]]) -> set[tuple[str, str]]:
    found = set()
    for module, imported in graph.items():
        here = floor_of(module)
        if here is None:
            continue
        for target in imported:
            there = floor_of(target)
            if there is None:
                continue
            if FLOORS[there[0]] > FLOORS[here[0]]:
                found.add((module, target))  # upward
            elif (here[0] == there[0] == "edges" and here[1] != there[1]
                  and here[1] != COMPOSITION):
                found.add((module, target))  # between edges
    return found


def test_every_module_is_on_a_floor() -> None:
    """Nothing of clock_service sits beside the floors (only the package's own face)."""
    loose = sorted(m for m in import_graph() if m.startswith("clock_service.")
                   and floor_of(m) is None
                   and m not in ("clock_service.__main__", "clock_service.edges"))
    assert loose == []


def test_no_floor_imports_upward_and_edges_meet_only_through_the_service() -> None:
    found = floor_violations(import_graph())
    assert found - set(CROSSING) == set(), "new arrows up or between edges"
    assert set(CROSSING) - found == set(), "gone: take them off CROSSING"


def test_the_floor_check_can_fail() -> None:
    graph = {"clock_service.core.clock": {"clock_service.service.runtime"},
             "clock_service.service.hub": {"clock_service.edges.api.app"},
             "clock_service.edges.mqtt.hall": {"clock_service.edges.api.app",
                                              "clock_service.service.hub"},
             "clock_service.edges.cli.main": {"clock_service.edges.mqtt.hall"},
             "firmware_bridge.bridge": {"clock_service.service.runtime", "web_ui"}}
    assert floor_violations(graph) == {
        ("clock_service.core.clock", "clock_service.service.runtime"),
        ("clock_service.service.hub", "clock_service.edges.api.app"),
        ("clock_service.edges.mqtt.hall", "clock_service.edges.api.app"),
        ("firmware_bridge.bridge", "web_ui")}
