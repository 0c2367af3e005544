"""The GE readers import one way: ge_model at the bottom, readers on it, the loader (ge_graph) on top.

Why: ge_graph, ge_text, ge_json and ge_tree used to import each other in a circle (lazily, inside
functions), so a new format became one more node in the circle. Every import counts here, lazy ones too
(tests/test_imports.py keeps the whole package free of circles; this keeps the order inside formats/ge/).
"""

from __future__ import annotations

from tests.tools.import_graph import imports

GE = "precision_tool.formats.ge."


def _ge_imports() -> dict[str, set[str]]:
    """ge_* module → the ge_* modules it imports anywhere in its source (functions included)."""
    return {name[len(GE):]: {target[len(GE):] for target in targets if target.startswith(GE + "ge_")}
            for name, targets in imports().items() if name.startswith(GE + "ge_")}


def test_the_ge_readers_are_all_seen() -> None:
    edges = _ge_imports()
    assert {"ge_model", "ge_graph", "ge_text", "ge_json", "ge_tree", "ge_onnx"} <= set(edges)


def test_model_at_the_bottom_and_loader_on_top() -> None:
    edges = _ge_imports()
    assert edges["ge_model"] == set()  # the model imports no reader
    assert {"ge_text", "ge_json", "ge_onnx"} <= edges["ge_graph"]  # the loader knows every reader
    readers = [name for name in edges if name not in ("ge_graph",)]
    assert all("ge_graph" not in edges[name] for name in readers), {n: edges[n] for n in readers}
