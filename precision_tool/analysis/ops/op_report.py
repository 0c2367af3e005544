"""What `ni` shows about one op: its graph relations, the statistics of its NPU dump tensors (in the
origin layout, device padding cut) and of its golden tensors.

Split from graph_index (which only indexes the graphs) so each module stays small.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from precision_tool.analysis.graphs.graph_index import GraphIndex
from precision_tool.analysis.graphs.graph_summary import OpEntry
from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_graph import Op, split_input
from precision_tool.formats.tf.op_sources import Frame, OpSources, read_op_sources
from precision_tool.workspace import Workspace

if TYPE_CHECKING:
    from precision_tool.analysis.dumps.origin_layout import LayoutStory


# --- what `ni` shows about one op ----------------------------------------------------------------------
@dataclass(frozen=True)
class TensorFacts:
    """One tensor found in the workspace: an NPU dump input/output or a golden .npy, with statistics."""

    label: str  # "input 0", "output 1", or the golden key "conv1_Relu.0"
    path: Path
    dtype: str
    layout: str
    shape: tuple[int, ...]
    stats: Any  # tensor_stats.TensorStats, or None when the data could not be read
    problem: str | None = None
    story: "LayoutStory | None" = None  # for a dump tensor: from which device layout it was brought to `layout`
    statistics: bool = False
    """From a statistics CSV (dump_data="stats"): numbers of the device layout, padding included; no zero
    count (stats.zero_count is 0 and not shown)."""


@dataclass(frozen=True)
class SubgraphRelations:
    """How an op sits among a model's graphs: the subgraphs it owns (name, op count or None when the
    file has no such graph), the op owning its graph, and for a subgraph's Data op the producer in the
    owner's graph it stands for (input number `_parent_node_index` of the owner)."""

    subgraphs: tuple[tuple[str, int | None], ...] = ()
    owner: OpEntry | None = None
    parent_node_index: int | None = None
    real_input: tuple[str, str, int] | None = None  # (graph, producer, output index)
    problem: str | None = None  # why a Data op could not be resolved

    @property
    def empty(self) -> bool:
        return not self.subgraphs and self.owner is None and self.parent_node_index is None


@dataclass(frozen=True)
class OpReport:
    """Everything `ni` shows for one op of one graph of one debug id."""

    entry: OpEntry
    op: Op
    consumers: tuple[tuple[str, int, int], ...]  # (consumer, output index, consumer input index)
    dump_files: tuple[tuple[Path, tuple[TensorFacts, ...]], ...]
    golden: tuple[TensorFacts, ...]
    relations: SubgraphRelations = SubgraphRelations()
    dump_ranks: tuple[int | None, ...] = ()
    """The rank of each of `dump_files` in a multi-device dump (None: a single device's)."""
    golden_ranks: tuple[int | None, ...] = ()
    """The rank of each of `golden` when each rank has its own golden folder (tf/dump/rank_<r>/)."""
    input_golden: tuple[str | None, ...] = ()
    """The golden key of each data input (its producer's output, as the comparison matches it); None when
    the graph names none."""
    sources: OpSourceLines | None = None
    """Where the op's original TF ops were created in the user's code (None: not looked up)."""


@dataclass(frozen=True)
class OpSourceLines:
    """The creation stacks of an NPU op's original TF ops, from the golden run's record."""

    stacks: tuple[tuple[str, tuple[Frame, ...]], ...] = ()
    """(TF op name, its frames, outermost first) for each original op the record holds."""
    record: OpSources | None = None
    problem: str | None = None
    """Why there is no answer: no record in the workspace, or a damaged one."""


def op_source_lines(workspace: Workspace, op: Op) -> OpSourceLines:
    """The record's stacks of `op`'s original TF ops (its own name when it has none)."""
    try:
        record = read_op_sources(workspace.op_sources_file)
    except FormatError as exc:
        return OpSourceLines(problem=str(exc))
    if record is None:
        return OpSourceLines(problem="not recorded: the golden run was captured without tf_config.sess_dump or "
                                     "estimator_dump (TF1), which record where each op was created")
    names = op.original_op_names or [op.name]
    stacks = tuple((name, stack) for name in names if (stack := record.stack(name)) is not None)
    if not stacks and op.original_op_names:
        return OpSourceLines(record=record, problem=f"the golden run's record has no op named {names[0]!r}")
    return OpSourceLines(stacks, record)


def subgraph_relations(index: GraphIndex, entry: OpEntry, op: Op) -> SubgraphRelations:
    """The op's subgraphs, its graph's owner op, and a Data op's real input through _parent_node_index."""
    subgraphs = tuple((name, index.graph_op_count(entry.file, name)) for name in op.subgraph_names)
    owner = index.subgraph_owner(entry.file, entry.graph)
    parent_index = op.parent_node_index
    real_input = None
    problem = None
    if parent_index is not None:
        if owner is None:
            problem = f"no op of {entry.file.name} lists graph {entry.graph!r} as its subgraph"
        else:
            inputs = [split_input(t) for t in owner.inputs if t and not t.endswith(":-1")]
            if 0 <= parent_index < len(inputs):
                producer, out_idx = inputs[parent_index]
                real_input = (owner.graph, producer, out_idx)
            else:
                problem = (f"_parent_node_index {parent_index} but {owner.name} has {len(inputs)} data "
                           f"input(s)")
    return SubgraphRelations(subgraphs, owner, parent_index, real_input, problem)


def find_dump_files(workspace: Workspace, debug_id: int, op_name: str) -> list[Path]:
    """The NPU dump files of an op in the newest dump folder of npu/debug_N, oldest first: the files `pt`,
    `dc` and `ls dump` find (numbered files through mapping.csv)."""
    return find_op_files(workspace, debug_id, op_name, stats=False)[0]


def find_stats_files(workspace: Workspace, debug_id: int, op_name: str) -> list[Path]:
    """The statistics CSVs (dump_data="stats") of an op in the newest dump folder of npu/debug_N, oldest first."""
    return find_op_files(workspace, debug_id, op_name, dumps=False)[1]


def find_op_files(workspace: Workspace, debug_id: int, op_name: str, *, dumps: bool = True,
                  stats: bool = True) -> tuple[list[Path], list[Path]]:
    """(find_dump_files, find_stats_files) from one walk of the dump folder (`ni` wants both)."""
    from precision_tool.analysis.dumps.dump_files import dumps_of_op, op_needle, scan_folder, stats_in

    folder = workspace.newest_dump_dir(debug_id)
    if folder is None:
        return [], []
    dump_entries, stats_entries = scan_folder(folder, op_needle(op_name), dumps=dumps, stats=stats)
    return ([e.path for _, entries in dumps_of_op([(debug_id, dump_entries)], op_name) for e in entries],
            [e.path for _, entries in stats_in([(debug_id, stats_entries)], op_name) for e in entries])


def stats_facts(path: Path) -> tuple[TensorFacts, ...]:
    """The rows of one statistics CSV as facts (the device's numbers, as written); a bad file is one fact
    with a problem."""
    from precision_tool.analysis.dumps.tensor_stats import TensorStats
    from precision_tool.formats.npu.stats_dump import read_stats_csv

    try:
        stats_file = read_stats_csv(path)
    except FormatError as exc:
        return (TensorFacts("file", path, "", "", (), None, exc.problem, statistics=True),)
    facts = []
    for row in stats_file.rows:
        shape = row.shape or ()
        stats = None
        problem = None
        if row.computed:
            stats = TensorStats(shape=shape, dtype=row.data_type, count=row.count if row.count is not None else -1,
                                max=row.max, min=row.min, mean=row.mean, nan_count=row.nan_count or 0,
                                inf_count=row.inf_count or 0, zero_count=0)
        else:
            problem = "statistics CSV: no statistics written for this tensor (no data address on the device)"
        facts.append(TensorFacts(row.label, path, row.data_type, row.layout, shape, stats, problem,
                                 statistics=True))
    return tuple(facts)


def dump_facts(path: Path, op: Op | None = None) -> tuple[TensorFacts, ...]:
    """Statistics of every input and output of one dump file, in the origin layout with the device
    padding cut, read as `pt` reads them (origin_layout.shown_tensor), so they match `pt` and the golden
    tensor; a bad file is one fact with a problem. `op` (the graph's op) tells each tensor's origin layout."""
    from precision_tool.analysis.dumps.origin_layout import op_origin_formats, shown_tensor
    from precision_tool.analysis.dumps.tensor_stats import tensor_stats
    from precision_tool.formats.npu.dump_types import data_type_name, format_name
    from precision_tool.formats.npu.npu_dump import read_dump_header

    try:
        dump = read_dump_header(path)
    except FormatError as exc:
        return (TensorFacts("file", path, "", "", (), None, exc.problem),)
    origins = op_origin_formats(op) if op is not None else {}
    facts = []
    for tensor in (*dump.inputs, *dump.outputs):
        problem = story = None
        stats = None
        layout, shape = format_name(tensor.format), tuple(tensor.shape)
        try:
            array, story = shown_tensor(dump, tensor, origins.get((tensor.kind, tensor.index)))
            layout, shape = story.layout, tuple(array.shape)
            stats = tensor_stats(array)
        except (FormatError, ValueError) as exc:
            problem = str(exc)
        facts.append(TensorFacts(f"{tensor.kind} {tensor.index}", path, data_type_name(tensor.data_type),
                                 layout, shape, stats, problem, story))
    return tuple(facts)


def golden_facts(workspace: Workspace, original_names: list[str]) -> tuple[TensorFacts, ...]:
    """Statistics of the golden tensors of the op's original TF ops (every output slot found)."""
    return tuple(fact for fact, _rank in ranked_golden_facts(workspace, original_names))


def ranked_golden_facts(workspace: Workspace, original_names: list[str],
                        keys: Sequence[str] = ()) -> list[tuple[TensorFacts, int | None]]:
    """golden_facts with the rank each comes from: every rank's own golden folder (tf/dump/rank_<r>/) when
    there are such, else tf/dump (rank None). `keys`: golden keys wanted as well (the inputs' tensors)."""
    from precision_tool.formats.tf.golden import golden_key, scan_golden_dir
    from precision_tool.workspace import rank_golden_folders

    ranked = rank_golden_folders(workspace.golden_dir)
    folders: list[tuple[Path, int | None]] = [(folder, rank) for rank, folder in ranked] or \
        [(workspace.golden_dir, None)]
    facts = []
    # only the names of these ops' tensors are looked at: a golden folder may hold a million tensors
    prefixes = tuple(golden_key(name, 0)[:-1] for name in original_names) + tuple(f"{key}." for key in keys)
    for folder, rank in folders:
        golden = scan_golden_dir(folder, prefixes)
        seen: set[str] = set()
        for name in original_names:
            prefix = golden_key(name, 0)[:-1]  # 'conv1_Relu.'
            for key in sorted(k for k in golden if k.startswith(prefix) and k[len(prefix):].isdigit()):
                if key not in seen:
                    seen.add(key)
                    facts.append((_npy_facts(key, golden[key]), rank))
        for key in keys:
            if key in golden and key not in seen:
                seen.add(key)
                facts.append((_npy_facts(key, golden[key]), rank))
    return facts


def _npy_facts(label: str, path: Path) -> TensorFacts:

    from precision_tool.analysis.dumps.tensor_stats import tensor_stats

    from precision_tool.formats.tf.golden import load_npy

    try:
        array = load_npy(path)
    except FormatError as exc:
        return TensorFacts(label, path, "", "", (), None, f"cannot read: {exc.problem}")
    try:
        stats = tensor_stats(array)
    except ValueError as exc:  # strings, records: shown, without statistics
        return TensorFacts(label, path, str(array.dtype), "", tuple(array.shape), None, str(exc))
    return TensorFacts(label, path, str(array.dtype), "", tuple(array.shape), stats)


def op_report(index: GraphIndex, entry: OpEntry, with_tensors: bool = True) -> OpReport:
    op = index.op(entry)
    dumps: tuple[tuple[Path, tuple[TensorFacts, ...]], ...] = ()
    golden: list[tuple[TensorFacts, int | None]] = []
    inputs: tuple[str | None, ...] = ()
    if with_tensors:
        dump_files, stats_files = find_op_files(index.workspace, entry.debug_id, entry.name)
        dumps = tuple((p, dump_facts(p, op)) for p in dump_files) + tuple((p, stats_facts(p)) for p in stats_files)
        inputs = input_golden_keys(index, entry, op)
        golden = ranked_golden_facts(index.workspace, op.original_op_names or [], [k for k in inputs if k])
    return OpReport(entry, op, tuple(index.consumers(entry)), dumps, tuple(f for f, _ in golden),
                    subgraph_relations(index, entry, op), _dump_ranks(index.workspace, entry.debug_id, dumps),
                    tuple(rank for _, rank in golden), inputs,
                    op_source_lines(index.workspace, op) if with_tensors else None)


def input_golden_keys(index: GraphIndex, entry: OpEntry, op: Op) -> tuple[str | None, ...]:
    """The golden key of each data input: the producer's output as the comparison matches it
    (matching.output_golden): through inserted Cast/TransData, then the output's origin name and slot, else
    the producer's one `_datadump_original_op_names`, else its own name when it has no such attribute."""
    return tuple(_output_key(index, entry, producer, slot) for producer, slot in op.data_inputs)


def _output_key(index: GraphIndex, entry: OpEntry, name: str, slot: int) -> str | None:
    """The golden key of output `slot` of the op `name`, found as the comparison finds it (matching's
    output_golden); only the producers are looked up, so every op counts as alone in its fusion group."""
    from precision_tool.analysis.compare.graph_plan import output_golden
    from precision_tool.formats.tf.golden import golden_key

    def producer(op_name: str) -> Any:
        found = index.entry(entry.file, entry.graph, op_name)
        return index.op(found) if found is not None else None

    start = producer(name)
    match = output_golden(start, slot, producer, lambda _op: 1) if start is not None else None
    ref = match.golden if match is not None else None
    return golden_key(ref.op_name, ref.index) if ref is not None else None


def _dump_ranks(workspace: Workspace, debug_id: int, dumps: Sequence[tuple[Path, object]]) -> tuple[int | None, ...]:
    from precision_tool.workspace import rank_dirs, rank_of_path

    folder = workspace.newest_dump_dir(debug_id)
    if folder is None or not rank_dirs(folder):
        return tuple(None for _ in dumps)
    return tuple(rank_of_path(path, folder) for path, _ in dumps)


def neighbourhood(index: GraphIndex, entry: OpEntry, depth: int) -> list[OpEntry]:
    """The op and every op within `depth` data edges of it, both directions, in the same graph."""
    seen = {entry.name: entry}
    frontier = [entry]
    for _ in range(depth):
        following = []
        for current in frontier:
            names = [split_input(t)[0] for t in current.inputs if t and not t.endswith(":-1")]
            names += [c[0] for c in index.consumers(current, many=True)]
            for name in names:
                if name in seen:
                    continue
                neighbour = next((e for e in index.find(name) if e.file == entry.file and e.graph == entry.graph),
                                 None)
                if neighbour is not None:
                    seen[name] = neighbour
                    following.append(neighbour)
        frontier = following
    return list(seen.values())
