"""Every import of precision_tool/ as a graph, read from the source (module level, inside functions and
under TYPE_CHECKING alike), and a cycle finder: what tests/test_imports.py and the GE import-flow test
check the package's map with."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "precision_tool"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@lru_cache(maxsize=1)
def imports() -> dict[str, dict[str, int]]:
    """module → {imported module of ours: first line}, every import statement anywhere in the file."""
    ours = modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in ours.items():
        found: dict[str, int] = {}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
                # `from pkg import module` imports the module; `from module import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in ours else base for a in node.names]
            else:
                continue
            for target in targets:
                if target in ours and target != name:
                    found.setdefault(target, node.lineno)
        graph[name] = found
    return graph


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as the list of its nodes with the first repeated at the end; None if none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None
