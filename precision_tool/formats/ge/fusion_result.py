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
import re
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
_BETWEEN = re.compile(r"[ \t\r\n,]*")  # what may separate objects written back to back
_GRAPH_ID = re.compile(r"[\w.:/+-]+")
# Real files hold tens of graphs (the most seen: 32); `ac` shows two tables per graph.
MAX_GRAPHS = 4096
_TOO_MANY = (f"more than {MAX_GRAPHS} graph records: far more than a training compiles "
             f"(real files hold tens); is it the right file?")
# The compiler counts in C++ integers; a larger count is damage, not a count.
MAX_COUNT = 2**63 - 1
# Pass names and graph ids are identifiers; a longer one is damage (and would swamp the table).
MAX_NAME = 1000
UNKNOWN = ("no graph_fusion or ub_fusion record in any shape this tool knows (one object per graph, "
           "a list of them, or an object keyed by session_and_graph_id_<id>): cannot say which fusion passes fired")
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
    if number is None or number < 0 or number > MAX_COUNT:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise FormatError(path, f"{what} is {shown}, not a count; the file is damaged, {_ADVICE}")
    return number


def _passes(path: Path, section: Any, where: str) -> tuple[PassCount, ...]:
    if not isinstance(section, _Pairs):
        raise FormatError(path, f"{where} is {_kind(section)}, not an object of passes; "
                                f"the file is damaged, {_ADVICE}")
    result = []
    for name, counts in section:
        label = f"{where}.{_short(name) if len(name) > 80 else name}"
        if len(name) > MAX_NAME:
            raise FormatError(path, f"{label}: a pass name of {len(name)} characters; the file is damaged, {_ADVICE}")
        if not name.isprintable():  # a newline or a terminal escape in a name is damage (and would garble output)
            raise FormatError(path, f"{where}.{name!r}: a pass name with control characters; "
                                    f"the file is damaged, {_ADVICE}")
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


def _kind(value: Any) -> str:
    if isinstance(value, _Pairs):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "null" if value is None else f"a {type(value).__name__} ({_short(value)})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _graph_id(path: Path, record: _Pairs, key: str | None, number: int) -> str:
    graph_id = None
    for id_key in ID_KEYS:
        value = record.get(id_key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            graph_id = str(value).strip()
            break
    if graph_id is None and key is not None and key.strip():
        graph_id = key[len(KEY_PREFIX):] if key.startswith(KEY_PREFIX) and len(key) > len(KEY_PREFIX) else key
        graph_id = graph_id.strip()
    if not graph_id:
        graph_id = str(number)
    if len(graph_id) > MAX_NAME:
        raise FormatError(path, f"a graph id of {len(graph_id)} characters: the file is damaged, {_ADVICE}")
    if not _GRAPH_ID.fullmatch(graph_id):
        # the compiler writes <session>_<graph> numbers; brackets, spaces or control characters are damage
        raise FormatError(path, f"graph id {_short(graph_id)} is not a session_graph id; the file is damaged, {_ADVICE}")
    return graph_id


def _keyed(path: Path, value: _Pairs, where: str) -> Iterator[tuple[_Pairs, str | None]]:
    """The newer shape: an object whose values are graph records, keyed session_and_graph_id_<id>."""
    if not any(_is_record(child) or str(key).startswith(KEY_PREFIX) for key, child in value):
        keys = ", ".join(_short(str(key)) for key, _ in value[:5]) or "none"
        raise FormatError(path, f"{where}{UNKNOWN} (an object with keys: {keys})")
    for key, child in value:
        if _is_record(child):
            yield child, str(key)
        elif isinstance(child, (_Pairs, list)) or str(key).startswith(KEY_PREFIX):
            # a graph that cannot be read must not just vanish from the listing
            raise FormatError(path, f"{where}{_short(str(key))} is {_kind(child)}, not a graph record with "
                                    f"graph_fusion/ub_fusion; the file is damaged, {_ADVICE}")


def _records(path: Path, value: Any, number: int) -> Iterator[tuple[_Pairs, str | None]]:
    """The graph records of one top-level JSON value, in every shape the compiler writes."""
    where = f"value {number + 1}: " if number else ""
    if _is_record(value):
        yield value, None
    elif isinstance(value, _Pairs):
        yield from _keyed(path, value, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if _is_record(item):
                yield item, None
            elif isinstance(item, _Pairs):
                yield from _keyed(path, item, f"{where}entry {index}: ")
            else:
                raise FormatError(path, f"{where}entry {index} of the list is {_kind(item)}, not a graph record; "
                                        f"the file is damaged, {_ADVICE}")
    else:
        raise FormatError(path, f"{where}the file holds {_kind(value)}, not fusion records: "
                                f"not a fusion_result.json")


def split_json_values(text: str, path: Path) -> list[Any]:
    """Every JSON value in the text: one value, or several written back to back. Objects come back
    as `_Pairs` so that a key written twice keeps both values."""
    decoder = json.JSONDecoder(object_pairs_hook=_Pairs)
    values = []
    position = 0
    length = len(text)
    while True:
        position = _BETWEEN.match(text, position).end()  # type: ignore[union-attr]
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
    # every graph record holds one of these keys: count them before parsing half a million records
    if max(text.count('"graph_fusion"'), text.count('"ub_fusion"')) > MAX_GRAPHS:
        raise FormatError(path, _TOO_MANY)
    graphs = []
    for number, value in enumerate(split_json_values(text, path)):
        for record, key in _records(path, value, number):
            if len(graphs) >= MAX_GRAPHS:
                # `ac` prints a table per graph: a file of 500,000 graph records would print for hours
                raise FormatError(path, _TOO_MANY)
            graphs.append(GraphFusion(_graph_id(path, record, key, len(graphs)),
                                      *(_passes(path, record.get(key), key) if record.has(key) else ()
                                        for key in SECTIONS)))
    if not graphs:
        raise FormatError(path, UNKNOWN)
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
