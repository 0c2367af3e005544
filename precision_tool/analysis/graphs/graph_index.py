"""The workspace's GE graphs as a small, cached index of ops; full op details parsed on demand.

Why: a Build graph has 20,000-100,000 ops and takes seconds to parse, but `ls`, completion and `ni`
need only a summary of every op and the details of a few. The first use parses each graph file once
and writes a summary (name, type, fusion pass, kernel, original ops, inputs, and where the op's text
block starts and ends in the file) to temp/cache/graphs/ as JSON keyed by path, size and mtime.
Later runs read that summary in milliseconds and parse only the blocks of the ops a command shows (one
file's summary and its cache are graph_summary.py's). Nothing here runs at start-up: the index is built
the first time something asks for it.
"""

from __future__ import annotations

import bisect
import threading
from pathlib import Path
from typing import Any, Callable

from precision_tool.analysis.graphs.graph_summary import GraphFile, OpEntry, block_op, index_file, read_cached
from precision_tool.errors import FormatError, WorkspaceError
from precision_tool.formats.ge.ge_graph import Graph, Model, Op, data_edges, load_graph
from precision_tool.workspace import Workspace

_INDEXES: dict[str, "GraphIndex"] = {}


def index_for(workspace: Workspace) -> "GraphIndex":
    """One index per workspace root per process, shared by commands and completion."""
    key = str(workspace.root.resolve())
    index = _INDEXES.get(key)
    if index is None:
        index = _INDEXES[key] = GraphIndex(workspace)
    return index


class GraphIndex:
    """Every graph of the workspace, loaded on first use; thread-safe so completion can warm it up."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._lock = threading.RLock()
        self._files: dict[Path, GraphFile] = {}
        self._models: dict[Path, Model] = {}
        self._by_name: dict[str, list[OpEntry]] | None = None
        # made from _by_name when first asked for (an exact name, the usual `ni`, needs none of them:
        # 0.1 s of every `ni` at 20,000 ops)
        self._names: list[str] | None = None
        self._spellings: list[str] | None = None
        self._aliases: tuple[dict[str, set[str]], dict[str, set[str]]] | None = None
        self._consumers: dict[tuple[Path, str, str], list[tuple[str, int, int]]] | None = None
        self._owners: dict[tuple[Path, str], OpEntry] | None = None
        self.failures: list[str] = []
        self._warming: threading.Thread | None = None

    # --- which files ----------------------------------------------------------------------------
    def graph_files(self, debug_id: int, graph_filter: str | None = None) -> list[tuple[Path, bool]]:
        """(file, is_build) to use for one debug id: its Build graphs, or with -g the files whose name
        (or graph name, checked later) matches, Build or not."""
        files = self.workspace.graph_files(debug_id)
        # the Build graphs (GE's ONNX-style ge_onnx_*_Build.pbtxt only when there is no ge_proto/JSON one);
        # with -g any graph file whose name matches, ONNX-style ones included
        chosen = [(p, True) for p in self.workspace.build_graph_files(debug_id)]
        if graph_filter:
            needle = graph_filter.lower()
            taken = {p for p, _ in chosen}
            chosen += [(p, False) for p in files if p not in taken and needle in p.name.lower()]
        # a Build graph given both as .txt and .json: keep the text one (it has op offsets)
        stems = {p.stem for p, _ in chosen if p.suffix == ".txt"}
        return [(p, b) for p, b in chosen if not (p.suffix == ".json" and p.stem in stems)]

    def load(self, graph_filter: str | None = None, progress: Callable[[str], None] | None = None,
             full: bool = False) -> list[GraphFile]:
        """Summaries of the graphs `ls`/`ni` use, in debug-id order. Bad files are recorded in
        `failures` (one line each) and skipped; the rest stays usable. `full`: a graph parsed now is parsed
        whole and kept (`model`), for a caller that reads every op next (the report)."""
        result = []
        with self._lock:
            for debug_id in self.workspace.debug_ids():
                for path, is_build in self.graph_files(debug_id, graph_filter):
                    summary = self._files.get(path)
                    if summary is None:
                        # (the cache read once: a 20,000-op summary takes 0.1 s to read)
                        summary, model = read_cached(self.workspace, path, debug_id, is_build), None
                        if summary is None:
                            if progress is not None and path.stat().st_size > 5_000_000:
                                progress(f"parsing {path.name} (once; cached under temp/cache/graphs)")
                            try:
                                summary, model = index_file(self.workspace, path, debug_id, is_build, full,
                                                            cached=False)
                            except FormatError as exc:
                                message = str(exc)
                                if message not in self.failures:
                                    self.failures.append(message)
                                continue
                        self._files[path] = summary
                        if model is not None:
                            self._models[path] = model
                        self._by_name = self._consumers = self._owners = None
                        self._names = self._spellings = self._aliases = None
                    result.append(summary)
        return result

    def missing_build_message(self) -> str | None:
        """When no debug folder has a Build graph: what was found instead and what to do."""
        ids = self.workspace.debug_ids()
        if any(self.workspace.build_graph_files(i) for i in ids):
            return None
        found = [p.name for i in ids for p in self.workspace.graph_files(i)]
        where = self.workspace.graph_dir(0)
        if not found:
            return (f"no GE graphs in {where}; run the NPU training with DUMP_GE_GRAPH=2 "
                    f"(tf_config sets it) to get ge_proto_*_Build.txt (or ge_onnx_*_Build.pbtxt)")
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        return (f"no *_Build.txt graph in the graph folders; found {shown}. Use -g to pick one, or dump "
                f"with DUMP_GRAPH_LEVEL=3 so the compiled graph is written")

    # --- lookups ----------------------------------------------------------------------------------
    def entries(self, graph_filter: str | None = None) -> list[OpEntry]:
        needle = graph_filter.lower() if graph_filter else None
        out: list[OpEntry] = []
        for summary in self.load(graph_filter):
            if needle is None or needle in summary.path.name.lower():
                out.extend(summary.ops)
            else:
                out.extend(e for e in summary.ops if needle in e.graph.lower())
        return out

    def graph_names(self, graph_filter: str | None = None) -> list[str]:
        """Names of the loaded graphs (and their files) that `graph_filter` selects, as -g matches them:
        a file whose name contains it selects all its graphs. Without a filter: every graph."""
        needle = graph_filter.lower() if graph_filter else None
        out: list[str] = []
        for summary in self.load(graph_filter):
            for graph in summary.graph_names:
                if needle is None or needle in summary.path.name.lower() or needle in graph.lower():
                    if graph not in out:
                        out.append(graph)
        return out

    def graph_choices(self) -> list[str]:
        """What -g can be given: graph names and graph file names of every debug id (for hints and
        completion), without parsing anything for the file names."""
        names = self.graph_names()
        for debug_id in self.workspace.debug_ids():
            for path in self.workspace.graph_files(debug_id):
                if path.name not in names:
                    names.append(path.name)
        return names

    def _build_names(self) -> dict[str, list[OpEntry]]:
        with self._lock:
            if self._by_name is None:
                by_name: dict[str, list[OpEntry]] = {}
                for summary in self._files.values():
                    for entry in summary.ops:
                        by_name.setdefault(entry.name, []).append(entry)
                self._by_name = by_name
                self._names = self._spellings = self._aliases = None
            return self._by_name

    def _build_spellings(self) -> tuple[list[str], list[str], tuple[dict[str, set[str]], dict[str, set[str]]]]:
        """(sorted names, sorted spellings `ni` accepts, aliases)."""
        by_name = self._build_names()
        with self._lock:
            if self._names is None or self._spellings is None or self._aliases is None:
                aliases = _aliases(by_name)
                names = sorted(by_name)
                self._spellings = sorted(set(names).union(*(set(a) for a in aliases)))
                self._names, self._aliases = names, aliases
            return self._names, self._spellings, self._aliases

    def names(self) -> list[str]:
        """Every op name of the loaded graphs, sorted."""
        return list(self._build_spellings()[0])

    def names_set(self) -> Any:
        """The op names of the loaded graphs, for fast `in` tests."""
        return self._build_names().keys()

    def aliases(self) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """(dump-file spelling → op names, fused-away TF name → op names), see `_aliases`."""
        return self._build_spellings()[2]

    def find(self, name: str, graph_filter: str | None = None) -> list[OpEntry]:
        """Every op with exactly this name (one per debug id and graph)."""
        self.entries(graph_filter)
        self._build_names()
        assert self._by_name is not None
        found = self._by_name.get(name, [])
        if graph_filter:
            needle = graph_filter.lower()
            found = [e for e in found if needle in e.graph.lower() or needle in e.file.name.lower()]
        return found

    def complete(self, prefix: str, limit: int = 200) -> list[str]:
        """Names starting with `prefix` (a binary search: fast on 100,000 names), including the other
        spellings `ni` accepts: dump-file names and the TF names of ops fused away."""
        names = self._build_spellings()[1]
        start = bisect.bisect_left(names, prefix)
        out = []
        for name in names[start:start + limit]:
            if not name.startswith(prefix):
                break
            out.append(name)
        return out

    def ready_for_completion(self) -> bool:
        """True when names can be listed without parsing (loaded, or every summary is cached)."""
        with self._lock:
            if self._spellings is not None:
                return True
        for debug_id in self.workspace.debug_ids():
            for path, is_build in self.graph_files(debug_id):
                if path not in self._files and read_cached(self.workspace, path, debug_id, is_build) is None:
                    return False
        return True

    def warm_up(self) -> None:
        """Parse in a background thread (used by completion so typing never waits)."""
        with self._lock:
            if self._warming is not None and self._warming.is_alive():
                return

            def run() -> None:
                self.load()
                self._build_spellings()

            self._warming = threading.Thread(target=run, name="graph-index", daemon=True)
            self._warming.start()

    def consumers(self, entry: OpEntry, *, many: bool = False) -> list[tuple[str, int, int]]:
        """(consumer name, output index of `entry`, consumer input index) within the same graph. `many`: the
        caller asks for many ops (every op's consumers are indexed once); else, until an index exists, only
        the inputs naming `entry` are read (`ni` of one op: 0.1 s less at 20,000 ops)."""
        with self._lock:
            if self._consumers is None and not many:
                return self._consumers_of(entry)
            if self._consumers is None:
                index: dict[tuple[Path, str, str], list[tuple[str, int, int]]] = {}
                for summary in self._files.values():
                    for op in summary.ops:
                        for producer, out_idx, position in data_edges(op.inputs):
                            index.setdefault((summary.path, op.graph, producer), []).append(
                                (op.name, out_idx, position))
                self._consumers = index
            return list(self._consumers.get((entry.file, entry.graph, entry.name), ()))

    def _consumers_of(self, entry: OpEntry) -> list[tuple[str, int, int]]:
        """consumers() of one op without the index: the same answer, in the same order."""
        name, found = entry.name, []
        for summary in self._files.values():
            if summary.path != entry.file:
                continue
            for op in summary.ops:
                if op.graph != entry.graph or name not in "\0".join(op.inputs):
                    continue  # (a test in C first: most ops name other producers)
                found.extend((op.name, out_idx, position) for producer, out_idx, position in data_edges(op.inputs)
                             if producer == name)
        return found

    def subgraph_owner(self, file: Path, graph: str) -> OpEntry | None:
        """The op of the same file whose subgraph_name lists `graph` (e.g. its PartitionedCall)."""
        with self._lock:
            if self._owners is None:
                owners: dict[tuple[Path, str], OpEntry] = {}
                for summary in self._files.values():
                    for op in summary.ops:
                        for name in op.subgraphs:
                            owners.setdefault((summary.path, name), op)
                self._owners = owners
            return self._owners.get((file, graph))

    def graph_op_count(self, file: Path, graph: str) -> int | None:
        """How many ops a graph of an indexed file has; None when the file has no such graph."""
        summary = self._files.get(file)
        if summary is None or graph not in summary.graph_names:
            return None
        return sum(1 for op in summary.ops if op.graph == graph)

    # --- details ----------------------------------------------------------------------------------
    def summary(self, path: Path) -> GraphFile | None:
        """The summary of one graph file as load() read it; None when it could not be read."""
        self.load()
        return self._files.get(path)

    def has_model(self, path: Path) -> bool:
        """True when this process has parsed the whole file already (model() costs nothing then)."""
        return path in self._models

    def model(self, path: Path) -> Model:
        """The whole parsed model of one file (parsed once per process)."""
        with self._lock:
            model = self._models.get(path)
            if model is None:
                model = load_graph(path)
                self._models[path] = model
            return model

    def op(self, entry: OpEntry) -> Op:
        """The full op: from the model when this process has parsed it already (a whole-graph reader ran),
        else parsed from its own text block when the offset is known, else from the model."""
        parsed = self._models.get(entry.file)
        if parsed is not None:
            graph = next((g for g in parsed.graphs if g.name == entry.graph), None)
            found = graph.op(entry.name) if graph is not None else None
            if found is not None:
                return found
        if entry.has_block:
            op = _parse_block(entry)
            if op is not None:
                return op
        graph = self.graph(entry)
        found = graph.op(entry.name) if graph else None
        if found is None:
            raise WorkspaceError(f"{entry.file}: op {entry.name} is no longer in the graph; the file changed "
                                 f"since it was indexed — run the command again")
        return found

    def graph(self, entry: OpEntry) -> Graph | None:
        model = self.model(entry.file)
        for graph in model.graphs:
            if graph.name == entry.graph:
                return graph
        return None

    def entry(self, file: Path, graph: str, name: str) -> OpEntry | None:
        summary = self._files.get(file)
        if summary is None:
            return None
        for candidate in self.find(name):
            if candidate.file == file and candidate.graph == graph:
                return candidate
        return None


def _aliases(by_name: dict[str, list[OpEntry]]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Other spellings of op names that the tool prints and `ni` accepts back:
    the dump-file spelling ('/' and '.' → '_', as in dump and golden file names) → op names, and
    the TF names listed in `_datadump_original_op_names` of an op they were fused into → op names."""
    from precision_tool.formats.tf.golden import safe_node_name
    from precision_tool.formats.npu.npu_dump import sanitize_op_name

    spelled: dict[str, set[str]] = {}
    fused: dict[str, set[str]] = {}
    for name, entries in by_name.items():
        for spelling in {sanitize_op_name(name), safe_node_name(name)} - {name}:
            spelled.setdefault(spelling, set()).add(name)
        for original in {o for e in entries for o in e.original_names or ()}:
            if original == name or original in by_name:
                continue  # an op of its own: its name finds it
            for spelling in {original, sanitize_op_name(original), safe_node_name(original)}:
                fused.setdefault(spelling, set()).add(name)
    return spelled, fused


def _parse_block(entry: OpEntry) -> Op | None:
    try:
        with open(entry.file, "rb") as handle:
            handle.seek(entry.offset)
            block = handle.read(entry.length)
    except OSError:
        return None
    return block_op(entry.file, block, entry.name)  # (None: the file changed; the caller parses it whole)
