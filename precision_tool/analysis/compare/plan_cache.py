"""The graph's side of a comparison plan, worked out once per graph file and kept as JSON.

Why: parsing a 20,000-op Build graph and tracing every tensor to its golden takes seconds, every `vc` and
`ac -c` of the same graph did it again, and none of it depends on the dump (graph_plan.GraphSide). The
first run writes it to the workspace's temp/cache/plans/ keyed by the graph file's path, size and mtime
(and this module's version); later runs read it in a fraction of the parse. A stale, damaged or unwritable
cache only means parsing again. JSON, never pickle: a cache is data from disk like any other.

A kept side becomes a plan without first becoming objects (GraphPlans.plan): each group is made when it is
used, so the run's workers make their own groups while the parent only counts which ops have a dump (making
20,000 groups' objects in the parent held the workers back by 0.2 s at 20,000 ops). Since a group may then
be made in a worker, the file carries a CRC of the sides: a damaged file is worked out again before
anything is planned from it. Each side's op ids and names (what a summary labels its ops with) come on a line
of their own before the sides, so `vcs`, `ac` and the report read 0.8 MB instead of the 5.4 MB of sides.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, overload

from precision_tool.analysis.compare.graph_plan import (
    GraphSide, GroupSide, MemberSide, graph_side, group_plan, plan_from_side, plan_warnings,
)
from precision_tool.analysis.compare.matching import DumpIndex, GoldenRef, GroupPlan, MatchPlan, OpPlan, TensorMatch
from precision_tool.atomic import write_atomic
from precision_tool.gc_pause import without_gc, without_gc_keeping

CACHE_VERSION = 4  # 3: a header line (with the CRC of the sides) before the sides; 4: the ops line between
_ALL_GRAPHS = "*"
"""The side of every graph of a file at once (vc -g FILE without a graph name) when it holds several; a file of
one graph keeps that graph's side under its name either way (GraphPlans._key)."""


class GraphPlans:
    """One graph file's names and the sides of its graphs, from the cache or worked out on first use."""

    def __init__(self, graph_path: Path, cache_dir: Path | None, size: int, mtime_ns: int) -> None:
        self.path = graph_path
        self.cache_file = _cache_file(cache_dir, graph_path) if cache_dir is not None else None
        self._stamp = (size, mtime_ns)
        self._names: list[str] | None = None
        self._sides: dict[str, GraphSide] = {}
        self._ops_line: bytes | None = None
        self._ops: dict[str, Any] | None = None
        self._body: bytes | None = None
        self._kept_sides: dict[str, Any] | None = None
        self._read_cache()

    @property
    def _kept(self) -> dict[str, Any]:
        """Sides as read from the cache file (parsed when first asked for: a summary wants only the ops line),
        made into objects when a plan asks for them (making 20,000 groups' objects cost more than reading)."""
        if self._kept_sides is None:
            body, self._body = self._body, None
            self._kept_sides = _kept_json(body, lambda v: isinstance(v, dict) and isinstance(v.get("groups"), list))
        return self._kept_sides

    @property
    def _kept_ops(self) -> dict[str, Any]:
        """Each kept side's [op id, op name] pairs, from the file's ops line (parsed when first asked for: by the
        run's labels, while the workers compare; a damaged line is no line)."""
        if self._ops is None:
            line, self._ops_line = self._ops_line, None
            self._ops = _kept_json(line, lambda v: isinstance(v, list))
        return self._ops

    @property
    def graph_names(self) -> list[str]:
        if self._names is None:
            self._names = [graph.name for graph in self._model().graphs]
            self._write_cache()
        return self._names

    def _key(self, graph_name: str | None) -> str:
        """Where the side of `graph_name` is kept. For every graph of a file of one graph, that graph's: the
        same side under two names was kept twice, and each later run read both (twice the parse)."""
        if graph_name is not None:
            return graph_name
        names = self.graph_names
        return names[0] if len(names) == 1 else _ALL_GRAPHS

    @without_gc
    def ops(self, graph_name: str | None) -> list[tuple[int, str]]:
        """(graph id, name) of every op the side of `graph_name` plans, in graph order (the ids result
        summaries show)."""
        key = self._key(graph_name)
        if key in self._kept_ops and key not in self._sides:
            try:
                return [(int(op_id), str(name)) for op_id, name in self._kept_ops[key]]
            except (TypeError, ValueError):
                pass  # a damaged cache: the side says (worked out again)
        return [(m.sequence, m.name) for group in self.side(graph_name).groups for m in group.members]

    def plan(self, graph_name: str | None, dumps: DumpIndex, only: set[str] | None = None) -> MatchPlan:
        """The plan of `graph_name`'s ops with the dump files of `dumps` (`only`: just the groups holding an op
        of these names); from the kept side, its groups are made as they are used (_KeptGroups)."""
        key = self._key(graph_name)
        kept = self._kept.get(key) if key not in self._sides else None
        if kept is None:
            return plan_from_side(self.side(graph_name), dumps)
        groups = _KeptGroups(kept, dumps, only)
        files = len(dumps.plan_paths())
        warnings = plan_warnings([str(w) for w in kept["warnings"]], int(kept["op_count"]), groups.matched, files,
                                 groups.ops_with_dump)
        return MatchPlan(groups, npu_vs_npu=False, warnings=warnings, matched_dumps=groups.matched,
                         unmatched_dumps=files - groups.matched)

    @without_gc_keeping
    def side(self, graph_name: str | None) -> GraphSide:
        key = self._key(graph_name)
        found = self._sides.get(key)
        if found is None and key in self._kept:
            try:
                found = self._sides[key] = _side_from_json(self._kept[key])
            except (KeyError, TypeError, IndexError, AttributeError, ValueError):
                found = None  # a damaged cache: worked out again below
                del self._kept[key]
        if found is None:
            model = self._model()
            all_ops = [op for _, op in model.iter_ops()]
            ops = [op for g in model.graphs if graph_name in (None, g.name) for op in g.ops]
            found = self._sides[key] = graph_side(ops, all_ops=all_ops)
            self._names = [graph.name for graph in model.graphs]
            self._write_cache()
            del model, all_ops, ops
            from precision_tool.formats.ge.ge_graph import forget_graphs

            forget_graphs()  # the side is all a comparison needs: the workers fork a lighter process
        return found

    def _model(self) -> Any:
        # (imported here: a kept plan needs no graph parser, and the parser's modules cost every vc 15 ms)
        from precision_tool.formats.ge.ge_graph import shared_graph

        return shared_graph(self.path)

    # --- the cache file ------------------------------------------------------------------------------
    @without_gc_keeping
    def _read_cache(self) -> None:
        if self.cache_file is None:
            return
        try:
            head, _, rest = self.cache_file.read_bytes().partition(b"\n")
            ops_line, _, body = rest.partition(b"\n")
            tree = json.loads(head)
            if (tree.get("version"), tree.get("path"), tree.get("size"), tree.get("mtime_ns"), tree.get("crc32"),
                    tree.get("ops_crc32")) != (CACHE_VERSION, str(self.path), *self._stamp, zlib.crc32(body),
                                               zlib.crc32(ops_line)):
                return
            names = [str(name) for name in tree["graphs"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return  # no cache, or a stale or damaged one: work it out again
        self._names, self._ops_line, self._body = names, ops_line, body

    def _write_cache(self) -> None:
        if self.cache_file is None:
            return
        sides = {**self._kept, **{k: _side_to_json(v) for k, v in self._sides.items() if k not in self._kept}}
        ops = {key: [[member[2], member[0]] for group in side["groups"] for member in group[4]]
               for key, side in sides.items()}
        try:
            body, ops_line = (json.dumps(part, separators=(",", ":"), ensure_ascii=False).encode(
                "utf-8", "surrogateescape") for part in (sides, ops))
            head = {"version": CACHE_VERSION, "path": str(self.path), "size": self._stamp[0],
                    "mtime_ns": self._stamp[1], "graphs": self._names or [], "crc32": zlib.crc32(body),
                    "ops_crc32": zlib.crc32(ops_line)}
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            # (JSON text holds no raw newline: the first two end the header and the ops line)
            write_atomic(self.cache_file, [json.dumps(head, ensure_ascii=False).encode("utf-8", "surrogateescape"),
                                           b"\n", ops_line, b"\n", body])
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
def _kept_json(data: bytes | None, valid: Callable[[Any], bool]) -> dict[str, Any]:
    """A kept part of the cache file (the sides, or the ops line) parsed: name → value; {} when absent, or when it
    does not parse or a value is not `valid` (its CRC matched: only a file written wrongly gets here; the
    sides are then worked out again)."""
    if data is None:
        return {}
    try:
        kept = {str(key): value for key, value in json.loads(data).items()}
    except (ValueError, AttributeError):
        return {}
    return kept if all(valid(value) for value in kept.values()) else {}


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
    origin_shape = tuple(map(int, shape)) if shape is not None else None  # (map: half a generator's time)
    return TensorMatch(GoldenRef(str(name), int(index), layout if layout is None else str(layout), origin_shape,
                                 bool(guess)), str(problem))


def _member_from_json(item: list[Any], match: Callable[[int], TensorMatch]) -> MemberSide:
    """One op of a kept group (`match`: a match by its number in the side's table)."""
    name, op_type, sequence, skip_in, skip_out, truth, inner, inputs, outputs = item
    return MemberSide(str(name), str(op_type), tuple(map(match, inputs)), tuple(map(match, outputs)),
                      bool(skip_in), bool(skip_out), int(sequence), str(truth), bool(inner))


def _side_from_json(tree: dict[str, Any]) -> GraphSide:
    # by number (a dict: a damaged negative or float number is a KeyError, not another match)
    match = dict(enumerate(_match_from_json(item) for item in tree["matches"])).__getitem__
    groups = []
    for npu_text, truth_text, sequences, reason, members in tree["groups"]:
        sides = tuple(_member_from_json(item, match) for item in members)
        groups.append(GroupSide(sides, str(npu_text), str(truth_text), tuple(int(s) for s in sequences), str(reason)))
    return GraphSide(tuple(groups), int(tree["op_count"]), tuple(str(w) for w in tree["warnings"]))


class _KeptMatches(dict[int, TensorMatch]):
    """A kept side's matches by number, each decoded on first use (a worker meets only its spans' ones; a
    hit is a plain dict lookup, in C under map())."""

    def __init__(self, raw: list[Any]) -> None:
        super().__init__()
        self._raw = raw

    def __missing__(self, number: int) -> TensorMatch:
        if number.__class__ is not int or number < 0:  # (a damaged bool, float or negative: not another match)
            raise IndexError(number)
        found = self[number] = _match_from_json(self._raw[number])
        return found


class _KeptGroups(Sequence[GroupPlan]):
    """The groups of a plan made from a kept side, each made when used (a slice: those groups, as a list).

    Why: making every group's objects before the workers fork cost the parent 0.2 s at 20,000 ops, while
    the workers, given the spans they compare, make their own in parallel. The parent only counts, name by
    name, which ops have a dump (for the plan's warnings)."""

    def __init__(self, side: dict[str, Any], dumps: DumpIndex, only: set[str] | None) -> None:
        raw = side["groups"]
        self._match = _KeptMatches(side["matches"]).__getitem__
        self._paths = dumps.plan_paths()
        self._key = dumps.key
        self._numbers: Sequence[int] = range(len(raw)) if only is None else [
            number for number, group in enumerate(raw) if any(member[0] in only for member in group[4])]
        self._raw = raw
        used: set[str] = set()
        ops_with_dump = 0
        paths, key = self._paths, self._key
        for number in self._numbers:
            members = raw[number][4]
            if len(members) == 1:  # (most groups)
                name = key(members[0][0])
                if name in paths:
                    used.add(name)
                    ops_with_dump += 1
                continue
            found = first = 0
            for member in members:
                name = key(member[0])
                if name in paths:
                    used.add(name)
                    found += not member[6]
                    first = first or member is members[0]
            # as group_plan keeps them: every member with a dump that is no inner node, else its first op
            ops_with_dump += found or first
        self.matched = len(used)
        self.ops_with_dump = ops_with_dump

    def __len__(self) -> int:
        return len(self._numbers)

    @overload
    def __getitem__(self, item: int) -> GroupPlan: ...

    @overload
    def __getitem__(self, item: slice) -> list[GroupPlan]: ...

    def __getitem__(self, item: int | slice) -> GroupPlan | list[GroupPlan]:
        if isinstance(item, slice):
            return [self._group(number) for number in self._numbers[item]]
        return self._group(self._numbers[item])

    def __iter__(self) -> Iterator[GroupPlan]:
        return map(self._group, self._numbers)

    def _group(self, number: int) -> GroupPlan:
        npu_text, truth_text, sequences, reason, members = self._raw[number]
        if len(members) == 1:  # (most groups: what group_plan keeps of one op, without its lists)
            return GroupPlan(number, (self._op_plan(members[0]),), str(npu_text), str(truth_text),
                             tuple(map(int, sequences)))
        plans = [(self._op_plan(item), bool(item[6])) for item in members]
        return group_plan(number, plans, str(npu_text), str(truth_text), tuple(map(int, sequences)), str(reason))

    def _op_plan(self, item: list[Any]) -> OpPlan:
        """A kept member's OpPlan straight from its JSON (the fields _member_from_json reads; no MemberSide
        between: it cost about a quarter of making 20,000 groups)."""
        name, op_type, sequence, skip_in, skip_out, _, _, inputs, outputs = item
        name, match = str(name), self._match
        return OpPlan(name, str(op_type), self._paths.get(self._key(name)), tuple(map(match, inputs)),
                      tuple(map(match, outputs)), None, bool(skip_in), bool(skip_out), int(sequence))
