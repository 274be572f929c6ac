"""The import graph of a package folder, read from its source (imports inside functions count
too), and a circle in it: what the layout tests of pointabstract.viz and pointabstract.bench check."""

import ast
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    """``core.render`` for root/core/render.py, ``core`` for root/core/__init__.py, ``""`` for the root's."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of the package at ``root`` it imports anywhere (top level or inside a
    function); names relative to ``root``, the package's own ``__init__`` is ``""``."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue  # absolute imports of pointabstract.viz do not occur (relative is the house style)
            parts = package.split(".") if package else []
            if node.level > 1:
                parts = parts[:len(parts) - (node.level - 1)] if node.level - 1 <= len(parts) else None
            if parts is None:
                continue  # above the package: not one of its modules
            base = ".".join([*parts, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}" if base else alias.name
                edges.add(target if target in modules else base)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (``[a, b, ..., a]``), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None
