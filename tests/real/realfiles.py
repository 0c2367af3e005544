"""Helpers for the tests on real files: where they are, workspaces built from them, and reading the
tables `ac` prints (so assertions name passes and counts, not just an exit status)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
FUSION_FILES = sorted((REAL / "fusion_result").glob("*.json"))

_TITLE = re.compile(r"^graph (.+?): (graph|UB) fusion passes that +fired")


def graph_workspace(tmp_path: Path, *files: Path) -> Path:
    """A workspace whose debug_0 graph folder holds byte copies of `files`."""
    root = tmp_path / "precision_data"
    graph_dir = root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True)
    for f in files:
        shutil.copyfile(f, graph_dir / f.name)
    return root


def fusion_workspace(tmp_path: Path, source: Path) -> Path:
    """A workspace holding only this fusion_result.json, where `ac` looks for it."""
    root = tmp_path / "precision_data"
    (root / "fusion").mkdir(parents=True)
    shutil.copyfile(source, root / "fusion" / "fusion_result.json")
    return root


def fired_tables(out: str) -> dict[tuple[str, str], list[tuple[str, int, int]]]:
    """The fusion tables of `ac`: (graph id, 'graph'|'UB') -> [(pass, effect, match)], "(none fired)" -> [].
    A title too long for the table wraps onto more lines: the lines before a table's top edge are joined."""
    tables: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    current: list[tuple[str, int, int]] | None = None
    pending: list[str] = []
    for line in out.splitlines():
        stripped = line.strip()
        if stripped.startswith("┏"):
            title = _TITLE.match(" ".join(pending))
            # a wrapped title may cut the graph id itself: ids hold no spaces, so drop the ones wrapping added
            current = tables.setdefault((title.group(1).replace(" ", ""), title.group(2)), []) if title else None
            pending = []
        elif stripped.startswith("└"):
            current, pending = None, []
        elif "│" in stripped or "┃" in stripped or stripped.startswith(("┡", "├")):
            cells = [c.strip() for c in stripped.strip("│").split("│")]
            if current is not None and len(cells) == 3 and cells[1].isdigit() and cells[2].isdigit():
                current.append((cells[0], int(cells[1]), int(cells[2])))
        elif stripped == "graph" or stripped.startswith("graph ") or pending:
            pending.append(stripped)
    return tables


def oracle(path: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The graphs of a real file read with plain json, shape by shape (independent of the reader):
    [(graph id, graph_fusion, ub_fusion)]."""
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    values, position = [], 0
    while position < len(text):
        if text[position].isspace():
            position += 1
            continue
        value, position = decoder.raw_decode(text, position)
        values.append(value)
    graphs = []
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            if "graph_fusion" in item or "ub_fusion" in item:
                graphs.append((str(item.get("session_and_graph_id", item.get("graphId"))),
                               item.get("graph_fusion", {}), item.get("ub_fusion", {})))
            else:  # keyed by session_and_graph_id_<id>
                for key, record in item.items():
                    graphs.append((key.removeprefix("session_and_graph_id_"),
                                   record.get("graph_fusion", {}), record.get("ub_fusion", {})))
    return graphs


def oracle_fired(path: Path) -> dict[tuple[str, str], list[tuple[str, int, int]]]:
    expected: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    for graph_id, graph_fusion, ub_fusion in oracle(path):
        for kind, section in (("graph", graph_fusion), ("UB", ub_fusion)):
            rows = [(name, int(c["effect_times"]), int(c["match_times"]))
                    for name, c in section.items() if int(c["effect_times"]) > 0]
            expected[(graph_id, kind)] = sorted(rows, key=lambda r: (-r[1], r[0]))
    return expected
