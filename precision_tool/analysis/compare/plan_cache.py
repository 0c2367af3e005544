"""The graph's side of a comparison plan, worked out once per graph file and kept as JSON.

Why: parsing a 20,000-op Build graph and tracing every tensor to its golden takes seconds, every `vc` and
`ac -c` of the same graph did it again, and none of it depends on the dump (graph_plan.GraphSide). The
first run writes it to the workspace's temp/cache/plans/ keyed by the graph file's path, size and mtime
(and this module's version); later runs read it in a fraction of the parse. A stale, damaged or unwritable
cache only means parsing again. JSON, never pickle: a cache is data from disk like any other.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from precision_tool.analysis.compare.graph_plan import GraphSide, GroupSide, MemberSide, graph_side
from precision_tool.analysis.compare.matching import GoldenRef, TensorMatch
from precision_tool.atomic import write_atomic
from precision_tool.formats.ge.ge_graph import forget_graphs, shared_graph
from precision_tool.gc_pause import without_gc, without_gc_keeping

CACHE_VERSION = 2
_ALL_GRAPHS = "*"  # the side of every graph of the file at once (vc -g FILE without a graph name)


class GraphPlans:
    """One graph file's names and the sides of its graphs, from the cache or worked out on first use."""

    def __init__(self, graph_path: Path, cache_dir: Path | None, size: int, mtime_ns: int) -> None:
        self.path = graph_path
        self.cache_file = _cache_file(cache_dir, graph_path) if cache_dir is not None else None
        self._stamp = (size, mtime_ns)
        self._names: list[str] | None = None
        self._sides: dict[str, GraphSide] = {}
        self._kept: dict[str, Any] = {}
        """Sides as read from the cache file, made into objects when a plan asks for them (`vcs` only wants
        each op's id and name: making 20,000 groups' objects for that cost more than reading the file)."""
        self._read_cache()

    @property
    def graph_names(self) -> list[str]:
        if self._names is None:
            self._names = [graph.name for graph in self._model().graphs]
            self._write_cache()
        return self._names

    @without_gc
    def ops(self, graph_name: str | None) -> list[tuple[int, str]]:
        """(graph id, name) of every op the side of `graph_name` plans, in graph order (the ids result
        summaries show)."""
        key = _ALL_GRAPHS if graph_name is None else graph_name
        if key in self._kept and key not in self._sides:
            try:
                return [(int(member[2]), str(member[0])) for group in self._kept[key]["groups"] for member in group[4]]
            except (KeyError, TypeError, IndexError, ValueError):
                pass  # a damaged cache: the side says (worked out again)
        return [(m.sequence, m.name) for group in self.side(graph_name).groups for m in group.members]

    @without_gc_keeping
    def side(self, graph_name: str | None) -> GraphSide:
        key = _ALL_GRAPHS if graph_name is None else graph_name
        found = self._sides.get(key)
        if found is None and key in self._kept:
            try:
                found = self._sides[key] = _side_from_json(self._kept.pop(key))
            except (KeyError, TypeError, IndexError, AttributeError, ValueError):
                found = None  # a damaged cache: worked out again below
        if found is None:
            model = self._model()
            all_ops = [op for _, op in model.iter_ops()]
            ops = [op for g in model.graphs if graph_name in (None, g.name) for op in g.ops]
            found = self._sides[key] = graph_side(ops, all_ops=all_ops)
            self._names = [graph.name for graph in model.graphs]
            self._write_cache()
            del model, all_ops, ops
            forget_graphs()  # the side is all a comparison needs: the workers fork a lighter process
        return found

    def _model(self) -> Any:
        return shared_graph(self.path)

    # --- the cache file ------------------------------------------------------------------------------
    @without_gc_keeping
    def _read_cache(self) -> None:
        if self.cache_file is None:
            return
        try:
            tree = json.loads(self.cache_file.read_bytes())
            if (tree.get("version"), tree.get("path"), tree.get("size"), tree.get("mtime_ns")) != (
                    CACHE_VERSION, str(self.path), *self._stamp):
                return
            names = [str(name) for name in tree["graphs"]]
            kept = {str(key): value for key, value in tree["sides"].items()}
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return  # no cache, or a stale or damaged one: work it out again
        self._names, self._kept = names, kept

    def _write_cache(self) -> None:
        if self.cache_file is None:
            return
        sides = {**self._kept, **{k: _side_to_json(v) for k, v in self._sides.items()}}
        tree = {"version": CACHE_VERSION, "path": str(self.path), "size": self._stamp[0], "mtime_ns": self._stamp[1],
                "graphs": self._names or [], "sides": sides}
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(tree, separators=(",", ":"), ensure_ascii=False)
            write_atomic(self.cache_file, [text.encode("utf-8", errors="surrogateescape")])
        except OSError:
            pass  # a read-only workspace still compares, just without the cache


def graph_plans(graph_path: str | os.PathLike[str], cache_dir: Path | None) -> GraphPlans:
    """The plans of one graph file; `cache_dir`: where to keep them (None: this process only)."""
    path = Path(graph_path).resolve()
    stat = path.stat()
    return _plans(path, None if cache_dir is None else Path(cache_dir), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _plans(path: Path, cache_dir: Path | None, size: int, mtime_ns: int) -> GraphPlans:
    return GraphPlans(path, cache_dir, size, mtime_ns)


def _cache_file(cache_dir: Path, graph_path: Path) -> Path:
    digest = hashlib.sha1(str(graph_path).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return cache_dir / "plans" / f"{digest}.json"


# --- JSON ------------------------------------------------------------------------------------------
def _match_to_json(match: TensorMatch) -> list[Any]:
    golden = match.golden
    if golden is None:
        return [match.problem]
    shape = list(golden.origin_shape) if golden.origin_shape is not None else None
    return [match.problem, golden.op_name, golden.index, golden.layout, shape, golden.guess_layout]


def _side_to_json(side: GraphSide) -> dict[str, Any]:
    table: dict[TensorMatch, int] = {}  # each distinct match once (an output's golden is each consumer's input)
    groups = []
    for group in side.groups:
        members = [[m.name, m.op_type, m.sequence, m.skip_inputs, m.skip_outputs, m.ground_truth, m.inner,
                    [table.setdefault(t, len(table)) for t in m.inputs],
                    [table.setdefault(t, len(table)) for t in m.outputs]]
                   for m in group.members]
        groups.append([group.npu_text, group.ground_truth_text, list(group.sequences), group.reason, members])
    return {"op_count": side.op_count, "warnings": list(side.warnings), "matches": [_match_to_json(t) for t in table],
            "groups": groups}


def _match_from_json(item: list[Any]) -> TensorMatch:
    if len(item) == 1:
        return TensorMatch(None, str(item[0]))
    problem, name, index, layout, shape, guess = item
    origin_shape = tuple(int(d) for d in shape) if shape is not None else None
    return TensorMatch(GoldenRef(str(name), int(index), layout if layout is None else str(layout), origin_shape,
                                 bool(guess)), str(problem))


def _side_from_json(tree: dict[str, Any]) -> GraphSide:
    # by number (a dict: a damaged negative or float number is a KeyError, not another match)
    match = dict(enumerate(_match_from_json(item) for item in tree["matches"])).__getitem__
    groups = []
    for npu_text, truth_text, sequences, reason, members in tree["groups"]:
        sides = tuple(
            MemberSide(str(name), str(op_type), tuple(map(match, inputs)), tuple(map(match, outputs)),
                       bool(skip_in), bool(skip_out), int(sequence), str(truth), bool(inner))
            for name, op_type, sequence, skip_in, skip_out, truth, inner, inputs, outputs in members)
        groups.append(GroupSide(sides, str(npu_text), str(truth_text), tuple(int(s) for s in sequences), str(reason)))
    return GraphSide(tuple(groups), int(tree["op_count"]), tuple(str(w) for w in tree["warnings"]))
