"""The GE readers import one way: ge_model at the bottom, readers on it, the loader (ge_graph) on top.

Why: ge_graph, ge_text, ge_json and ge_tree used to import each other in a circle (lazily, inside
functions), so a new format became one more node in the circle. Every import counts here, lazy ones too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import precision_tool.formats as formats_package

FORMATS = Path(formats_package.__file__).parent / "ge"


def _ge_imports() -> dict[str, set[str]]:
    """ge_* module → the ge_* modules it imports anywhere in its source (functions included)."""
    modules = {path.stem: path for path in FORMATS.glob("ge_*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                leaf = target.rsplit(".", 1)[-1]
                if target.startswith("precision_tool.formats") and leaf in modules and leaf != name:
                    found.add(leaf)
        edges[name] = found
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
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


def test_ge_format_modules_import_without_a_cycle() -> None:
    edges = _ge_imports()
    assert {"ge_model", "ge_graph", "ge_text", "ge_json", "ge_tree", "ge_onnx"} <= set(edges)
    assert _cycle(edges) is None, " -> ".join(_cycle(edges) or [])


def test_model_at_the_bottom_and_loader_on_top() -> None:
    edges = _ge_imports()
    assert edges["ge_model"] == set()  # the model imports no reader
    assert {"ge_text", "ge_json", "ge_onnx"} <= edges["ge_graph"]  # the loader knows every reader
    readers = [name for name in edges if name not in ("ge_graph",)]
    assert all("ge_graph" not in edges[name] for name in readers), {n: edges[n] for n in readers}


def test_the_cycle_finder_finds_a_lazy_circle() -> None:
    # the checker itself: a circle made only of function-level imports is still a circle
    source = "def f():\n    from precision_tool.formats.ge_b import x\n"
    tree = ast.parse(source)
    assert any(isinstance(node, ast.ImportFrom) for node in ast.walk(tree))
    assert _cycle({"ge_a": {"ge_b"}, "ge_b": {"ge_a"}}) == ["ge_a", "ge_b", "ge_a"]
    assert _cycle({"ge_a": {"ge_b"}, "ge_b": set()}) is None


def test_text_reader_modules_stay_small() -> None:
    for path in FORMATS.glob("ge_*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 520, path.name
