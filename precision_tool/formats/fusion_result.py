"""`fusion_result.json`: which graph-fusion and UB-fusion passes matched and fired, per graph.

Why: a fusion pass that fired is the first suspect when a fused op loses accuracy. The compiler has
written the file in several shapes over the years (formats.md §5), and a reader that knows only some of
them reads the others as "no pass fired" — a false all-clear. So the reader looks for graph records
(objects holding `graph_fusion` / `ub_fusion`) wherever the known shapes put them:
- one object per graph (`session_and_graph_id`, oldest files `graphId`), alone, in a JSON list, or
  several written back to back (the old writer appended one per graph);
- one object keyed by graph, `{"session_and_graph_id_0_0": {...}, ...}` (newer writers, which append
  by rewriting the closing brace — so a key can repeat: every record is kept, not the last one only).
Counts are strings in every real file; numbers are accepted too. A file in which no graph record can
be found is an error naming the file, never an empty result.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from precision_tool.atomic import write_text_atomic
from precision_tool.errors import FormatError

SECTIONS = ("graph_fusion", "ub_fusion")
ID_KEYS = ("session_and_graph_id", "graphId")
KEY_PREFIX = "session_and_graph_id_"
# Real files are kilobytes (the largest seen: 76 KB for 30 graphs); far above that is not this file.
MAX_BYTES = 256 * 1024 * 1024
# Graph records sit at most this deep: list > keyed object > record (> one more for safety).
MAX_DEPTH = 4
_ADVICE = "re-run the training or atc to write it again"


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

    @property
    def passes(self) -> int:
        return len(self.graph_fusion) + len(self.ub_fusion)


class _Pairs(list):
    """A JSON object as its (key, value) pairs, in file order, duplicates kept."""

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self:
            if k == key:
                return v
        return default

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self)


def _count(path: Path, value: Any, what: str) -> int:
    """A count written as a string ("70") or a number (70, 70.0); anything else is damage."""
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and len(value) <= 30:
        text = value.strip()
        if text.isascii() and text.isdigit():
            number = int(text)
    if number is None or number < 0:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise FormatError(path, f"{what} is {shown}, not a count; the file is damaged, {_ADVICE}")
    return number


def _passes(path: Path, section: Any, where: str) -> tuple[PassCount, ...]:
    if section is None:
        return ()
    if not isinstance(section, _Pairs):
        raise FormatError(path, f"{where} is {type(section).__name__ if not isinstance(section, list) else 'a list'}, "
                                f"not an object of passes; the file is damaged, {_ADVICE}")
    result = []
    for name, counts in section:
        label = f"{where}.{name}"
        if not isinstance(counts, _Pairs):
            raise FormatError(path, f"{label} is not an object with match_times/effect_times; {_ADVICE}")
        found = {}
        for key in ("effect_times", "match_times"):
            if not counts.has(key):
                # without effect_times nobody can say whether the pass fired: never guess "did not"
                raise FormatError(path, f"{label} has no {key}; the file is damaged, {_ADVICE}")
            found[key] = _count(path, counts.get(key), f"{label}.{key}")
        hits = counts.get("repository_hit_times")
        result.append(PassCount(
            str(name), found["match_times"], found["effect_times"],
            _count(path, hits, f"{label}.repository_hit_times") if hits is not None else None,
        ))
    return tuple(result)


def _is_record(value: Any) -> bool:
    return isinstance(value, _Pairs) and any(value.has(key) for key in SECTIONS)


def _graph_id(record: _Pairs, key: str | None, number: int) -> str:
    for id_key in ID_KEYS:
        value = record.get(id_key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return str(value)
    if key is not None:
        return key[len(KEY_PREFIX):] if key.startswith(KEY_PREFIX) and len(key) > len(KEY_PREFIX) else key
    return str(number)


def _records(value: Any, key: str | None, depth: int) -> Iterator[tuple[_Pairs, str | None]]:
    """Every graph record in a JSON value, with the key it was found under (the keyed shape's id)."""
    if depth > MAX_DEPTH:
        return
    if _is_record(value):
        yield value, key
    elif isinstance(value, _Pairs):
        for child_key, child in value:
            yield from _records(child, str(child_key), depth + 1)
    elif isinstance(value, list):
        for child in value:
            yield from _records(child, None, depth + 1)


def split_json_values(text: str, path: Path) -> list[Any]:
    """Every JSON value in the text: one value, or several written back to back. Objects come back
    as `_Pairs` so that a key written twice keeps both values."""
    decoder = json.JSONDecoder(object_pairs_hook=_Pairs)
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
            raise FormatError(path, f"line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg}); "
                                    f"{_ADVICE}") from None
        except RecursionError:
            raise FormatError(path, "JSON nested too deep to be a fusion_result.json; "
                                    f"the file is damaged, {_ADVICE}") from None
        except ValueError as exc:  # e.g. a number longer than Python converts (sys.get_int_max_str_digits)
            raise FormatError(path, f"not valid JSON ({str(exc)[:80]}); {_ADVICE}") from None
        values.append(value)
    return values


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise FormatError(path, f"{size} bytes: far too large for a fusion_result.json "
                                    f"(real ones are kilobytes); is it the right file?")
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(path, f"byte {exc.start} is not UTF-8 text: not a fusion_result.json, "
                                f"or a damaged one; {_ADVICE}") from None


def parse_fusion_result(path: str | os.PathLike[str]) -> list[GraphFusion]:
    """All graphs of a fusion_result.json, in file order, whatever its shape.

    FormatError when the file is damaged or holds no graph record at all: "no pass fired" is only
    ever said about passes that were read."""
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise FormatError(path, f"the file is empty; {_ADVICE}")
    graphs = []
    for value in split_json_values(text, path):
        for record, key in _records(value, None, 0):
            graphs.append(GraphFusion(_graph_id(record, key, len(graphs)),
                                      _passes(path, record.get("graph_fusion"), "graph_fusion"),
                                      _passes(path, record.get("ub_fusion"), "ub_fusion")))
    if not graphs:
        raise FormatError(path, "no graph_fusion or ub_fusion record in any shape this tool knows "
                                "(one object per graph, a list of them, or an object keyed by "
                                "session_and_graph_id_...): cannot say which fusion passes fired")
    return graphs


def write_fusion_result(graphs: list[GraphFusion], path: str | os.PathLike[str], shape: str = "list") -> None:
    """Write in one of the shapes the compiler uses: 'object' (one graph), 'list', 'concatenated'
    (objects back to back), or 'keyed' (one object keyed by session_and_graph_id_<id>)."""
    def section(passes: tuple[PassCount, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for p in passes:
            entry = {"effect_times": str(p.effect_times), "match_times": str(p.match_times)}
            if p.repository_hit_times is not None:
                entry["repository_hit_times"] = str(p.repository_hit_times)
            out[p.name] = entry
        return out

    def as_json(graph: GraphFusion) -> dict[str, Any]:
        record: dict[str, Any] = {"graph_fusion": section(graph.graph_fusion), "session_and_graph_id": graph.graph_id}
        if graph.ub_fusion:
            record["ub_fusion"] = section(graph.ub_fusion)
        return record

    if shape == "object":
        if len(graphs) != 1:
            raise ValueError("the 'object' shape holds exactly one graph")
        text = json.dumps(as_json(graphs[0]), indent=4)
    elif shape == "list":
        text = json.dumps([as_json(g) for g in graphs], indent=4)
    elif shape == "concatenated":
        text = "".join(json.dumps(as_json(g), indent=4) + "\n" for g in graphs)
    elif shape == "keyed":
        keyed: dict[str, Any] = {}
        for g in graphs:
            record = {"graph_fusion": section(g.graph_fusion)}
            if g.ub_fusion:
                record["ub_fusion"] = section(g.ub_fusion)
            keyed[KEY_PREFIX + g.graph_id] = record
        text = json.dumps(keyed, indent=4)
    else:
        raise ValueError(f"unknown shape {shape!r}")
    write_text_atomic(Path(path), text)
