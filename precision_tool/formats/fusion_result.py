"""`fusion_result.json`: which graph-fusion and UB-fusion passes matched and fired, per graph.

Why: a fusion pass that fired is the first suspect when a fused op loses accuracy. The compiler writes
the file in three shapes seen in the wild (formats.md §5): one object, a JSON list of objects, or
several objects written back to back; counts are strings; the oldest files say `graphId`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.atomic import write_text_atomic
from precision_tool.errors import FormatError


@dataclass(frozen=True)
class PassCount:
    """One fusion pass of one graph. A pass with effect_times 0 matched but did not fire."""

    name: str
    match_times: int
    effect_times: int
    repository_hit_times: int | None = None


@dataclass(frozen=True)
class GraphFusion:
    """The passes of one graph (`session_and_graph_id`, or the old `graphId`)."""

    graph_id: str
    graph_fusion: tuple[PassCount, ...]
    ub_fusion: tuple[PassCount, ...]


def _count(path: Path, value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise FormatError(path, f"{what} is {value!r}, not a count")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise FormatError(path, f"{what} is {value!r}, not a count; the file is damaged, "
                                f"re-run the training to write it again") from None


def _passes(path: Path, section: Any, where: str) -> tuple[PassCount, ...]:
    if section is None:
        return ()
    if not isinstance(section, dict):
        raise FormatError(path, f"{where} is not an object of passes")
    result = []
    for name, counts in section.items():
        if not isinstance(counts, dict):
            raise FormatError(path, f"{where}.{name} is not an object with match_times/effect_times")
        hits = counts.get("repository_hit_times")
        result.append(PassCount(
            str(name),
            _count(path, counts.get("match_times", 0), f"{where}.{name}.match_times"),
            _count(path, counts.get("effect_times", 0), f"{where}.{name}.effect_times"),
            _count(path, hits, f"{where}.{name}.repository_hit_times") if hits is not None else None,
        ))
    return tuple(result)


def split_json_values(text: str, path: Path) -> list[Any]:
    """Every JSON value in the text: one value, or several written back to back."""
    decoder = json.JSONDecoder()
    values = []
    position = 0
    length = len(text)
    while True:
        while position < length and text[position] in " \t\r\n,":
            position += 1
        if position >= length:
            break
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise FormatError(path, f"line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})") from None
        values.append(value)
    return values


def parse_fusion_result(path: str | os.PathLike[str]) -> list[GraphFusion]:
    """All graphs of a fusion_result.json, in file order."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(path, f"cannot read: {exc}") from None
    objects: list[Any] = []
    for value in split_json_values(text, path):
        objects.extend(value if isinstance(value, list) else [value])
    graphs = []
    for number, item in enumerate(objects):
        if not isinstance(item, dict):
            raise FormatError(path, f"entry {number} is not an object with graph_fusion/ub_fusion")
        graph_id = item.get("session_and_graph_id", item.get("graphId", str(number)))
        graphs.append(GraphFusion(str(graph_id), _passes(path, item.get("graph_fusion"), "graph_fusion"),
                                  _passes(path, item.get("ub_fusion"), "ub_fusion")))
    return graphs


def write_fusion_result(graphs: list[GraphFusion], path: str | os.PathLike[str], shape: str = "list") -> None:
    """Write in one of the shapes the compiler uses: 'object' (one graph), 'list', or 'concatenated'."""
    def as_json(graph: GraphFusion) -> dict[str, Any]:
        def section(passes: tuple[PassCount, ...]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for p in passes:
                entry = {"effect_times": str(p.effect_times), "match_times": str(p.match_times)}
                if p.repository_hit_times is not None:
                    entry["repository_hit_times"] = str(p.repository_hit_times)
                out[p.name] = entry
            return out
        return {"graph_fusion": section(graph.graph_fusion), "session_and_graph_id": graph.graph_id,
                "ub_fusion": section(graph.ub_fusion)}

    if shape == "object":
        if len(graphs) != 1:
            raise ValueError("the 'object' shape holds exactly one graph")
        text = json.dumps(as_json(graphs[0]), indent=4)
    elif shape == "list":
        text = json.dumps([as_json(g) for g in graphs], indent=4)
    elif shape == "concatenated":
        text = "".join(json.dumps(as_json(g), indent=4) + "\n" for g in graphs)
    else:
        raise ValueError(f"unknown shape {shape!r}")
    write_text_atomic(Path(path), text)
