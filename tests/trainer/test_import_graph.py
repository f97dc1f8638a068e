"""Imports inside the trainer and the designer point one way: no module imports another
that imports it back, directly or around a loop, lazily inside a function included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spade_envs

PACKAGE = Path(spade_envs.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """Every spade_envs module ``path`` imports, at the top or inside a function."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:  # ``from . import distributed`` names a module
                child = f"{module}.{alias.name}"
                found.add(child if child in known else module)
    return (found & known) - {name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _graph(subpackage: str) -> dict[str, set[str]]:
    # Package __init__ files only re-export (lazily): they are left out.
    files = [p for p in (PACKAGE / subpackage).rglob("*.py") if p.name != "__init__.py"]
    known = {_module_name(p) for p in files}
    return {_module_name(p): _imports(p, known) for p in files}


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("subpackage", ["trainer", "generator"])
def test_no_import_cycles(subpackage):
    graph = _graph(subpackage)
    assert len(graph) > 3  # the modules were found
    assert _cycles(graph) == []


def test_the_loop_imports_its_set_up_and_the_config_io_its_config():
    graph = _graph("trainer")
    assert "spade_envs.trainer.setup" in graph["spade_envs.trainer.loop"]
    assert "spade_envs.trainer.config" in graph["spade_envs.trainer.config_io"]
