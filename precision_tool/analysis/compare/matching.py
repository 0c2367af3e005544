"""Which NPU tensor is compared with which golden tensor (compare.md §1), decided before any data is read.

Rules follow msaccucmp where they are sound: rows come from graph ops grouped into fusion groups;
output i uses output_desc[i] (origin name and index), inputs are traced to their producer through
Cast/TransData. Where the reference is unsound we keep indices stable instead: an output with no
output_desc[i] is matched by the op-level rule at index i, never silently against output_desc[0].
Without a graph, NPU dumps are matched to golden tensors by op name (a fallback the reference lacks).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from precision_tool.formats.npu.npu_dump import DumpName, dump_name_of, sanitize_op_name
from precision_tool.formats.tf.golden import golden_key
from precision_tool.workspace import walk_file_names

PASS_THROUGH_TYPES = ("Cast", "TransData")
DEQUANT_NAME_ENDINGS = ("_dequant_layer", "AscendDequant", "_dequant")
"""An op whose name ends so (or of type AscendDequant) has its inputs skipped, as in msaccucmp."""


@dataclass(unsafe_hash=True)  # hashable (a plan keeps each distinct one once); never changed after it is made,
class GoldenRef:  # but not frozen: a plan makes one per golden tensor, and a frozen one costs four times as much
    """Where one NPU tensor's golden counterpart is expected."""

    op_name: str
    """The golden (TF) op name."""
    index: int
    """Its output slot."""
    layout: str | None = None
    """The golden layout (origin_format); None: the NPU tensor's own layout."""
    origin_shape: tuple[int, ...] | None = None
    guess_layout: bool = False
    """No graph: the golden layout is unknown, so a device layout is turned into its usual host layout."""

    @property  # (not functools.cached_property: on Python 3.11 its lock on first use costs more than it saves)
    def key(self) -> str:
        """The golden file's lookup key (golden_key), worked out on first use: a worker asks for it once per
        tensor, and a kept plan's refs are shared by an output and the inputs it feeds."""
        key = self.__dict__.get("_key")
        if key is None:
            key = self.__dict__["_key"] = golden_key(self.op_name, self.index)
        return key


@dataclass(unsafe_hash=True)  # as GoldenRef: hashable, never changed, not frozen (made per tensor)
class TensorMatch:
    """The golden of one NPU tensor, or why there is none."""

    golden: GoldenRef | None
    problem: str = ""
    """Set when the graph says nothing usable (producer missing ...); empty for plain 'no golden'."""


@dataclass  # not frozen: one per op of 100,000-op graphs, and a frozen one costs four times as much to make
class OpPlan:
    """One NPU op to compare: its dump file and how each of its tensors finds its counterpart."""

    name: str
    op_type: str
    dump_path: Path | str | None
    """The op's dump file (as text in a plan made from an index kept between runs: DumpIndex.plan_paths)."""
    inputs: tuple[TensorMatch, ...]
    outputs: tuple[TensorMatch, ...]
    right_dump_path: Path | None = None
    """NPU-vs-NPU: the other run's dump of the same op."""
    skip_inputs: bool = False
    """A dequantize op: msaccucmp does not compare its inputs (int32/int8 data with no golden)."""
    skip_outputs: bool = False
    """An AscendQuant op: msaccucmp does not compare its int8 outputs."""
    sequence: int = 0
    """The graph op's id (msaccucmp's OpSequence; 0 when the graph gives none)."""
    skip_reason: str | None = None
    """Set on the one op standing for a group msaccucmp does not compare (inner nodes of a multi-to-multi
    fusion): the group's row is NaN with this reason."""

    def input_match(self, index: int) -> TensorMatch:
        if index < len(self.inputs):
            return self.inputs[index]
        return TensorMatch(None, f"the graph lists {len(self.inputs)} data inputs of {self.name}, not {index + 1}")

    def output_match(self, index: int) -> TensorMatch:
        if index < len(self.outputs):
            return self.outputs[index]
        return TensorMatch(None, f"the graph has no output {index} of {self.name}")


@dataclass  # not frozen: one per op of 100,000-op graphs, and a frozen one costs four times as much to make
class GroupPlan:
    """One fusion group (msaccucmp's Index): the ops compared together, and the CSV's name columns."""

    index: int
    ops: tuple[OpPlan, ...]
    npu_text: str
    ground_truth_text: str
    sequences: tuple[int, ...] = ()
    """The graph ids of every op of the group (dumped or not): what -r/-s select by."""

    @property
    def first_type(self) -> str:
        return self.ops[0].op_type if self.ops else "NaN"


@dataclass(frozen=True)
class MatchPlan:
    """Everything one comparison run does, in graph order."""

    groups: Sequence[GroupPlan]
    """A tuple, or (a plan from a kept graph side) a sequence making each group when it is used."""
    npu_vs_npu: bool
    warnings: tuple[str, ...] = ()
    matched_dumps: int = 0
    unmatched_dumps: int = 0


# --- the dump folder ----------------------------------------------------------------------------
@dataclass
class DumpIndex:
    """Dump files of a folder tree by op-name field (sanitised name); the latest timestamp wins."""

    by_op: dict[str, Path] = field(default_factory=dict)
    names: dict[str, DumpName] = field(default_factory=dict)
    """op-name field → the parsed name of its file in by_op."""
    ignored: list[str] = field(default_factory=list)
    stats_files: int = 0
    """Statistics CSVs met beside the tensor dumps (not indexed: a tensor comparison says it leaves them)."""

    @staticmethod
    def key(op_name: str) -> str:
        """The op-name field a graph op's dump files carry (by_op's key)."""
        return sanitize_op_name(op_name)

    def find(self, op_name: str) -> Path | None:
        return self.by_op.get(self.key(op_name))

    def plan_paths(self) -> Mapping[str, Path | str]:
        """by_op for a plan, whose ops may hold their path as text (listing_cache's index keeps text: a Path
        per op costs as much as the rest of reading the index back)."""
        return self.by_op


_LXSLICE = re.compile(r"_lxslice[0-9]+")
_LXSLICE_AT_END = re.compile(r"_lxslice[0-9]+$")
_SGT_GRAPH = re.compile(r"sgt_graph_[0-9]+")


def graph_op_name(name: str) -> str:
    """A graph op name as msaccucmp reads it: every `_lxslice<k>` removed (FFTS+ manual slicing)."""
    return _LXSLICE.sub("", name) if "_lxslice" in name else name


def dump_op_key(op_field: str, *, with_graph: bool) -> str | None:
    """The op a dump file's op field belongs to, by msaccucmp's rules (formats.md §2.1); None: skip the file.

    With a graph every `_lxslice<k>` is removed. Without one a trailing `_lxslice<k>` is cut, then the
    `..._sgt_graph_<n>_` prefix of a sub-graph task; a name still holding `_lxslice` is not an op's dump.
    """
    if with_graph and "_lxslice" in op_field:
        return _LXSLICE.sub("", op_field)
    if "_lxslice" in op_field:
        op_field = _LXSLICE_AT_END.sub("", op_field)
    if "_sgt_graph" in op_field:
        last = list(_SGT_GRAPH.finditer(op_field))
        if last and last[-1].end() != len(op_field):
            op_field = op_field[last[-1].end() + 1:]
    return None if "_lxslice" in op_field else op_field


def dump_iterations(folder: Path, folders: list[str | None] | None = None) -> dict[int, list[Path]]:
    """The iteration folders of a dump tree (`.../<model_id>/<iteration>/files`, formats.md §2.1) by number;
    `folders` gets each folder walked (None: one not listable), for listing_cache.py."""
    found: dict[int, list[Path]] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True,
                                                onerror=None if folders is None else lambda _: folders.append(None)):
        if folders is not None:
            folders.append(dirpath)
        dirnames.sort()
        here = Path(dirpath)
        if filenames and here != Path(folder) and here.name.isascii() and here.name.isdigit() and here.parent.name.isdigit():
            found.setdefault(int(here.name), []).append(here)
    return dict(sorted(found.items()))


def index_dumps(folder: Path, *, recursive: bool = True, with_graph: bool = False,
                step: int | None = None, stats: bool = False, folders: list[str | None] | None = None) -> DumpIndex:
    """Index the dump files of `folder` by op (`with_graph`: the op names are matched to a graph's;
    `step`: only files of that iteration folder, so iterations are never mixed; `stats`: the statistics
    CSVs of a dump_data="stats" run instead of tensor dumps, named by their dump name without `.csv`;
    `folders`: every folder a recursive index walked is appended to it (None: one it could not list), for
    listing_cache.py)."""
    index = DumpIndex()
    # (folder, file name) text, and a Path only for the file kept per op: a network's dump is tens of
    # thousands of files, and a Path each cost as much as the rest of the indexing
    best: dict[str, tuple[int, str, str, DumpName]] = {}
    files: Iterable[tuple[str, str]]
    if recursive:
        files = walk_file_names(folder, folders)
    else:
        files = ((str(folder), p.name) for p in sorted(folder.iterdir()) if p.is_file())
    if step is not None:
        files = list(files)
        if any(_is_iteration_folder(dirpath) for dirpath, _ in files):
            files = [(d, n) for d, n in files
                     if os.path.basename(os.path.normpath(d)) == str(step) and _is_iteration_folder(d)]
    for dirpath, file_name in files:
        if stats:
            if file_name == "mapping.csv" or not file_name.lower().endswith(".csv"):
                continue
            from precision_tool.formats.npu.stats_dump import stats_name_of

            name = stats_name_of(Path(dirpath, file_name))[0]
        elif file_name == "mapping.csv" or os.path.splitext(file_name)[1] in (".npy", ".txt", ".json", ".csv", ".partial"):
            if os.path.splitext(file_name)[1] == ".csv" and file_name != "mapping.csv":
                from precision_tool.formats.npu.stats_dump import stats_name_of

                index.stats_files += stats_name_of(Path(dirpath, file_name))[0] is not None
            continue
        else:
            name = dump_name_of(os.path.join(dirpath, file_name))  # (a numbered file: by its mapping.csv)
        if name is None:
            index.ignored.append(file_name)
            continue
        if name.is_opdebug:
            continue
        if name.extra and name.task_type not in (None, 0, 1, 4):
            index.ignored.append(f"{file_name} (task type {name.task_type})")
            continue
        op_key = dump_op_key(name.op_name, with_graph=with_graph)
        if op_key is None:
            index.ignored.append(f"{file_name} (an _lxslice part of an op)")
            continue
        current = best.get(op_key)
        if current is None or (name.timestamp_us, file_name) > current[:2]:
            best[op_key] = (name.timestamp_us, file_name, dirpath, name)
    folders: dict[str, Path] = {}
    for op, (_, file_name, dirpath, name) in best.items():
        parent = folders.get(dirpath)
        if parent is None:
            parent = folders[dirpath] = Path(dirpath)
        path = parent / file_name  # (a child of a made Path parses only its own name)
        index.by_op[op] = path
        index.names[op] = name
    return index


def _is_iteration_folder(dirpath: str) -> bool:
    """`.../<model_id>/<iteration>`: two numbered folders (formats.md §2.1)."""
    head, tail = os.path.split(os.path.normpath(dirpath))
    return tail.isdigit() and os.path.basename(head).isdigit()


def find_graph_dump_dir(dump_dir: Path, graph_name: str) -> Path | None:
    """The `<model_name>` folder of a dump tree that belongs to graph `graph_name` (formats.md §2.1)."""
    if not graph_name:
        return None
    for dirpath, dirnames, _ in os.walk(dump_dir, followlinks=True):
        if graph_name in dirnames:
            return Path(dirpath) / graph_name
        dirnames.sort()
    return None


# --- without a graph ------------------------------------------------------------------------------
def _ordered_dumps(dumps: DumpIndex) -> list[tuple[str, Path]]:
    """Dumped ops in execution order (timestamp, then name)."""
    return sorted(dumps.by_op.items(), key=lambda item: (dumps.names[item[0]].timestamp_us, item[0]))


def plan_name_compare(dumps: DumpIndex, golden_keys: Iterable[str]) -> MatchPlan:
    """NPU vs golden by name alone: output i of dump `<op>` ↔ golden `<op>.<i>` (no graph: a fallback)."""
    from precision_tool.formats.tf.golden import golden_key

    keys = set(golden_keys)
    groups = []
    matched = 0
    for number, (op_field, path) in enumerate(_ordered_dumps(dumps)):
        name = dumps.names[op_field]
        has_any = golden_key(op_field, 0) in keys
        matched += has_any
        outputs = tuple(TensorMatch(GoldenRef(op_field, i, guess_layout=True)) for i in range(16))
        groups.append(GroupPlan(number, (OpPlan(op_field, name.op_type, path, (), outputs),), op_field, op_field))
    warnings = [
        "no graph: NPU dumps are matched to golden tensors by op name only (outputs only; fused ops and "
        "renamed tensors are not matched). Give the Build graph with -g for a full comparison."
    ]
    return MatchPlan(tuple(groups), npu_vs_npu=False, warnings=tuple(warnings),
                     matched_dumps=matched, unmatched_dumps=len(groups) - matched)


def plan_npu_compare(left: DumpIndex, right: DumpIndex) -> MatchPlan:
    """NPU vs NPU: ops matched by the op field of the file name, tensors zipped by index."""
    groups = []
    missing = 0
    for number, (op_field, path) in enumerate(_ordered_dumps(left)):
        other = right.by_op.get(op_field)
        missing += other is None
        name = left.names[op_field]
        groups.append(GroupPlan(
            number, (OpPlan(op_field, name.op_type, path, (), (), right_dump_path=other),),
            op_field, op_field if other is not None else "*",
        ))
    warnings = []
    if missing:
        warnings.append(f"{missing} of {len(groups)} dumped ops have no dump in the other run")
    return MatchPlan(tuple(groups), npu_vs_npu=True, warnings=tuple(warnings),
                     matched_dumps=len(groups) - missing, unmatched_dumps=missing)
