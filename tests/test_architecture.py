"""The shape of the code: no module imports itself round a cycle (type-only imports count),
and the objects the GUI, the CLI and the server talk to stay small."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
FACADE_LIMIT = 12


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w) & modules))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_cycles() -> None:
    graph = grimp.build_graph("engine", "app")  # type-only (TYPE_CHECKING) imports are edges too
    modules = {m for m in graph.modules if m.split(".")[0] in ("engine", "app")}
    assert _cycles(graph, modules) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for m in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(m)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert _cycles(graph, {"a.x", "a.y", "a.z"}) == [["a.x", "a.y"]]


def public_methods(path: Path, cls: str) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    methods = (f for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))
    return [f.name for f in methods if not f.name.startswith("_")]


@pytest.mark.parametrize(
    ("module", "cls"),
    [
        ("engine/service.py", "Engine"),
        ("engine/control/transport.py", "Transport"),
        ("engine/control/lines.py", "Lines"),
        ("engine/control/casting.py", "Casting"),
        ("engine/control/project.py", "Projects"),
        ("engine/control/output.py", "Output"),
        ("engine/control/monitor.py", "Monitor"),
    ],
)
def test_facades_are_small(module: str, cls: str) -> None:
    names = public_methods(ROOT / module, cls)
    assert len(names) <= FACADE_LIMIT, f"{cls}: {len(names)} public methods: {names}"


CLASS_LIMIT = 15
"""The house rule: a class with more public methods than this is doing several jobs."""


def test_no_class_is_past_the_house_limit() -> None:
    over = []
    for path in sorted([*(ROOT / "engine").rglob("*.py"), *(ROOT / "app").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            where = f"{path.relative_to(ROOT)}:{node.name}"
            n = len(public_methods(path, node.name))
            if n > CLASS_LIMIT:
                over.append(f"{where} has {n} public methods")
    assert not over, over
