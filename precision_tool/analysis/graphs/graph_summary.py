"""One GE graph file summarized for the index: an entry per op (name, type, fusion pass, kernel, original
ops, inputs, where its text block lies in the file), kept as JSON in temp/cache/graphs/ keyed by the
file's path, size and mtime, so a later run reads it in milliseconds instead of parsing again.

graph_index.py builds the workspace's index from these summaries and parses single op blocks on demand.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.atomic import write_atomic
from precision_tool.errors import FormatError, PrecisionToolError
from precision_tool.formats.ge.ge_graph import Model, Op, kept_graph, load_graph
from precision_tool.formats.ge.ge_text import op_spans, parse_text
from precision_tool.gc_pause import without_gc_keeping
from precision_tool.workspace import Workspace

CACHE_VERSION = 5  # 3: fusion_pass holds the UB fusion pass too; 4: list attributes as names, never a repr;
# 5: a Cast op's dtypes


@dataclass(frozen=True)
class OpEntry:
    """One op of one graph file, as `ls`, completion and `ni` need it."""

    debug_id: int
    file: Path
    graph: str
    name: str
    type: str
    id: int
    stream_id: int
    fusion_pass: str | None  # 'GraphPass + UbPass' (fusion_pass_text): every pass that made the op
    kernel_name: str | None
    kernel_lib: str | None
    original_names: tuple[str, ...] | None
    inputs: tuple[str, ...]
    offset: int  # byte offset of the op's `  op {` block in a text graph; -1 when unknown (JSON)
    length: int
    subgraphs: tuple[str, ...] = ()  # the graphs this op owns (subgraph_name, e.g. of a PartitionedCall)
    cast: tuple[str, ...] | None = None
    """A Cast op's (input 0 dtype, output 0 dtype), () when the graph lacks either; None: not recorded (`ac`'s
    cast check then parses the op's block: 1,800 blocks of a 20,000-op graph took a fifth of `ac`)."""

    @property
    def has_block(self) -> bool:
        return self.offset >= 0


@dataclass(frozen=True)
class GraphFile:
    """The summary of one graph file."""

    debug_id: int
    path: Path
    is_build: bool
    graph_names: tuple[str, ...]
    ops: tuple[OpEntry, ...]
    warnings: tuple[str, ...]
    from_cache: bool


def summary_cache_path(workspace: Workspace, path: Path) -> Path:
    """Where the summary of the graph file `path` is kept (op_descs.py keeps its descriptions beside it)."""
    digest = hashlib.sha1(str(path.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return workspace.cache_dir / "graphs" / f"{digest}.json"


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def op_blocks(data: bytes, op_count: int) -> list[tuple[int, int]] | None:
    """(offset, length) of each top-level op block in a text graph, or None. GE's one field per line: a
    loop of bytes.find (C speed, ~50 ms on 70 MB), not a line-anchored regex (~1 s); any other layout (a
    graph on one line): ge_text.op_spans, which blanks the strings first (~0.5 s on 50 MB)."""
    blocks = _line_blocks(data)
    if blocks is None or len(blocks) != op_count:
        blocks = op_spans(data)
    return blocks if blocks is not None and len(blocks) == op_count else None


def _line_blocks(data: bytes) -> list[tuple[int, int]] | None:
    if not (data.startswith(b"graph {\n") or b"\ngraph {\n" in data):
        return None
    blocks = []
    find = data.find
    position = 0
    while True:
        found = find(b"\n  op {\n", position)
        if found < 0:
            break
        start = found + 1
        end = find(b"\n  }\n", start + 6)
        if end < 0:
            return None
        blocks.append((start, end + 5 - start))
        position = end + 4
    return blocks


def fusion_passes(op: Op) -> tuple[str, ...]:
    """The fusion passes that made an op: its graph passes (attr pass_name), then its UB passes
    (pass_name_ub); each may be a string or a list of strings (real atc JSON)."""
    return op.fusion_passes


def fusion_pass_text(op: Op) -> str | None:
    """'AABiasaddConvFusion + TbeConvElemwiseFusionPass', as `ls` and `ni` show it; None for no pass."""
    return " + ".join(fusion_passes(op)) or None


def summarize(model: Model, data: bytes | None, debug_id: int, is_build: bool, light: bool = False) -> GraphFile:
    """The summary of a parsed model; `data` (the text file's bytes) gives the op block offsets; `light`: the
    model is a light parse (no descriptors), so a Cast op's dtypes come from its own block."""
    total = sum(len(g.ops) for g in model.graphs)
    blocks = op_blocks(data, total) if data is not None else None
    entries = []
    position = 0
    for graph in model.graphs:
        for op in graph.ops:
            offset, length = blocks[position] if blocks else (-1, 0)
            position += 1
            names = op.original_op_names
            cast = None
            if op.type == "Cast":
                whole = op if not light else None if data is None or offset < 0 else \
                    block_op(model.path, data[offset:offset + length], op.name)
                cast = (cast_dtypes(whole) or ()) if whole is not None else None
            entries.append(OpEntry(debug_id, model.path, graph.name, op.name, op.type, op.id, op.stream_id,
                                   fusion_pass_text(op), op.kernel_name, op.kernel_lib,
                                   tuple(names) if names is not None else None, tuple(op.inputs),
                                   offset, length, tuple(op.subgraph_names), cast))
    return GraphFile(debug_id, model.path, is_build, tuple(g.name for g in model.graphs), tuple(entries),
                     tuple(model.warnings), False)


def block_op(path: Path, block: bytes, name: str) -> Op | None:
    """The op of one text block (`  op { ... }`) parsed whole, descriptors too; None when the block does not
    parse or is not that op (the file changed). The op index reads an op this way (GraphIndex.op), and the
    summary a light parse's Cast ops."""
    try:
        parsed = parse_text("graph {\n" + block.decode("utf-8", "surrogateescape") + "}\n", path)
    except FormatError:
        return None
    ops = parsed.graphs[0].ops if parsed.graphs else []
    return ops[0] if len(ops) == 1 and ops[0].name == name else None


def cast_dtypes(op: Op) -> tuple[str, str] | None:
    """A Cast op's (input 0 dtype, output 0 dtype); None when the graph lacks either."""
    src = op.input_descs[0].dtype if op.input_descs else None
    dst = op.output_descs[0].dtype if op.output_descs else None
    return (src, dst) if src and dst else None


def _to_json(summary: GraphFile, size: int, mtime_ns: int) -> dict[str, Any]:
    graph_numbers = {name: i for i, name in enumerate(summary.graph_names)}
    return {
        "version": CACHE_VERSION, "path": str(summary.path), "size": size, "mtime_ns": mtime_ns,
        "graphs": list(summary.graph_names), "warnings": list(summary.warnings),
        "ops": [[graph_numbers.get(e.graph, 0), e.name, e.type, e.id, e.stream_id, e.fusion_pass,
                 e.kernel_name, e.kernel_lib, list(e.original_names) if e.original_names is not None else None,
                 list(e.inputs), e.offset, e.length, list(e.subgraphs), e.cast] for e in summary.ops],
    }


def _from_json(tree: dict[str, Any], path: Path, debug_id: int, is_build: bool) -> GraphFile:
    graphs = tuple(tree["graphs"])
    ops = tuple(
        OpEntry(debug_id, path, graphs[g], name, op_type, op_id, stream, fusion, kernel, lib,
                tuple(orig) if orig is not None else None, tuple(inputs), offset, length, tuple(subgraphs),
                tuple(cast) if cast is not None else None)
        for g, name, op_type, op_id, stream, fusion, kernel, lib, orig, inputs, offset, length, subgraphs, cast
        in tree["ops"]
    )
    return GraphFile(debug_id, path, is_build, graphs, ops, tuple(tree["warnings"]), True)


@without_gc_keeping  # (40,000 op entries at 20,000 ops, kept by the index)
def read_cached(workspace: Workspace, path: Path, debug_id: int, is_build: bool) -> GraphFile | None:
    """The cached summary when it matches the file's path, size and mtime; None otherwise."""
    cache = summary_cache_path(workspace, path)
    try:
        size, mtime_ns = _stamp(path)
        tree = json.loads(cache.read_text(encoding="utf-8"))
        if (tree.get("version"), tree.get("path"), tree.get("size"), tree.get("mtime_ns")) != (
                CACHE_VERSION, str(path), size, mtime_ns):
            return None
        return _from_json(tree, path, debug_id, is_build)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None  # no cache, or a stale/damaged one: parse again


def write_cache(workspace: Workspace, summary: GraphFile, size: int, mtime_ns: int) -> None:
    cache = summary_cache_path(workspace, summary.path)
    try:
        Workspace.ensure_dir(cache.parent)
        text = json.dumps(_to_json(summary, size, mtime_ns), separators=(",", ":"))
        write_atomic(cache, [text.encode("utf-8", errors="surrogateescape")])
    except OSError:
        pass  # a read-only workspace still works, just without the cache


def index_file(workspace: Workspace, path: Path, debug_id: int, is_build: bool,
               full: bool = False, cached: bool = True) -> tuple[GraphFile, Model | None]:
    """The summary of one graph file (from the cache, or by parsing it and writing the cache); `full`: parse
    a text graph whole and return its model too (the caller reads every op next); `cached=False`: the
    caller found no usable cache already."""
    found = read_cached(workspace, path, debug_id, is_build) if cached else None
    if found is not None:
        return found, None
    size, mtime_ns = _stamp(path)
    is_json = _is_json(path)
    # a whole parse this process keeps gives the same summary; else a text graph gets a light parse (no
    # descriptors): `ni` later parses just the op's own block
    kept = kept_graph(path)
    light = kept is None and not (is_json or full)
    model = kept or load_graph(path, light=light)
    summary = summarize(model, path.read_bytes() if not is_json else None, debug_id, is_build, light)
    write_cache(workspace, summary, size, mtime_ns)
    return summary, model if is_json or full else None


def index_from_kept(workspace: Workspace, path: Path, debug_id: int, is_build: bool = True) -> None:
    """Write the summary of `path` from the whole parse this process keeps (ge_graph.kept_graph), unless
    there is none or a summary is cached already: a comparison that just parsed the graph for its plan
    spares the graph index (the same-step check after it, ls, ni) a second parse of its own."""
    if kept_graph(path) is None or summary_cache_path(workspace, path).exists():
        return  # (a stale cache is found stale and redone when the index reads it)
    try:
        index_file(workspace, path, debug_id, is_build)
    except (PrecisionToolError, OSError):
        pass  # the graph index reads the file itself, and says what is wrong with it


def _is_json(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4096).lstrip()[:1] in (b"{", b"[")
