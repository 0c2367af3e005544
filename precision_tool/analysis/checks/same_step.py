"""Did both runs compute the same step? The step's input data and every weight, NPU against golden.

No op can be blamed while the two runs started from other data or other weights: every tensor after
them differs for that reason alone. Neither Data/GetNext nor Variable ops are dumped on a real NPU, so
each is read where it is used: the input of the first dumped op that reads it (through the Cast and
TransData ops GE inserts), in its origin layout. Its golden tensor is the Data op's own output, or for a
weight the variable's value in tf/dump: the variable itself or its `/read`, else the ReadVariableOps the
captured golden graph (tf/checkpoints/model.meta) says read it, else (no graph) a ReadVariableOp of its
scope with its shape. Of several, the closest (a read after the update holds the next step's value).

"Within what the dtype explains": the golden value is first cast to the NPU tensor's dtype (float32 →
float16 rounds), and an element counts as different only when it is off by more than one step (ulp) of
that dtype at that value, which leaves room for another rounding mode of the device's Cast.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precision_tool.errors import PrecisionToolError

if TYPE_CHECKING:
    import numpy as np

    from precision_tool.workspace import Workspace

INPUT_TYPES = frozenset({"Data", "GetNext", "AippData", "DynamicGetNext", "QueueData"})
WEIGHT_TYPES = frozenset({"Variable", "VariableV2", "VarHandleOp", "RefData"})
# ops that hand a tensor on unchanged but for dtype or layout: a reader behind them still reads the source
PASS_THROUGH_TYPES = frozenset({"Cast", "TransData", "TransDataRNN", "Identity", "ReadVariableOp"})

OPTIMIZER_STATE = "optimizer state, read only by its update op (ApplyMomentum...): no golden tensor of it"
INPUT_CAUSE = "other data fed: another batch, shuffling, or a random op in the input pipeline (augmentation)"
WEIGHT_CAUSE = "other starting weights: checkpoint not loaded (or another one), another initialisation or seed"


@dataclass(frozen=True)
class SourceCheck:
    """One input or weight, compared where the NPU first reads it."""

    kind: str  # "input" or "weight"
    source: str  # the Data/Variable op of the NPU graph
    reader: str  # the dumped op whose input holds it
    reader_input: int
    golden: str  # the golden tensor's key ('conv1_Conv2D_ReadVariableOp.0')
    npu_dtype: str
    elements: int
    differing: int  # elements off by more than the dtype explains
    max_abs_diff: float
    max_rel_diff: float
    rank: int | None = None  # a multi-device dump: the device whose dump was read (against its own golden)

    @property
    def label(self) -> str:
        return self.source if self.rank is None else f"{self.source} (rank {self.rank})"

    @property
    def same(self) -> bool:
        return self.differing == 0

    @property
    def likely_cause(self) -> str:
        return INPUT_CAUSE if self.kind == "input" else WEIGHT_CAUSE


@dataclass(frozen=True)
class SameStepReport:
    """What the check compared, and what it could not (each with its reason)."""

    checks: tuple[SourceCheck, ...]
    unchecked: tuple[tuple[str, str], ...]  # (source op, why)

    @property
    def differing(self) -> tuple[SourceCheck, ...]:
        return tuple(c for c in self.checks if not c.same)

    @property
    def same_step(self) -> bool | None:
        """True: same inputs, same weights; False: one differs; None: nothing could be compared."""
        if self.differing:
            return False
        return True if self.checks else None

    def count(self, kind: str) -> int:
        return sum(1 for c in self.checks if c.kind == kind)


def same_step_check(workspace: "Workspace", debug_id: int = 0, dump_dir: Path | None = None,
                    read_files: set[str] | None = None) -> SameStepReport | None:
    """The check on run `debug_id` (its Build graphs and `dump_dir`, by default its newest dump) against
    tf/dump; None when the workspace lacks one of the three (nothing to say). The graphs are read through
    the workspace's op index (cached under temp/cache/graphs): only the readers' own op blocks are parsed.
    `read_files` gets every dump and golden file the answer was read from (same_step_cache.py)."""
    from precision_tool.analysis.graphs.graph_index import index_for
    from precision_tool.workspace import golden_dir_for_rank, rank_dirs

    dump_dir = dump_dir or workspace.newest_dump_dir(debug_id)
    if not workspace.build_graph_files(debug_id) or dump_dir is None or not workspace.golden_dir.is_dir():
        return None
    index = index_for(workspace)
    index.load()
    graphs: dict[tuple[Path, str], list[Any]] = {}
    for entry in index.entries():
        if entry.debug_id == debug_id:
            graphs.setdefault((entry.file, entry.graph), []).append(entry)
    if not graphs:
        return None
    # a multi-device dump: each rank's dump against its own golden folder (tf/dump/rank_<r>, else tf/dump)
    places = [(r.rank, r.path, golden_dir_for_rank(workspace.golden_dir, r.rank)[0]) for r in rank_dirs(dump_dir)]
    checks: list[SourceCheck] = []
    unchecked: list[tuple[str, str]] = [("a graph", failure) for failure in index.failures]
    reads = variable_reads(workspace.checkpoint_dir / "model.meta")
    # a subgraph's Data ops are its parameters (the owner's inputs), not the step's input data
    graphs = {key: entries for key, entries in graphs.items() if index.subgraph_owner(*key) is None}
    for rank, folder, golden_dir in places or [(None, dump_dir, _first_step_golden(workspace.golden_dir, dump_dir))]:
        dumps = _dump_files(folder)
        for entries in graphs.values():
            found_checks, missing = _check_graph(entries, index, dumps, golden_dir, reads, read_files)
            checks.extend(replace(c, rank=rank) for c in found_checks)
            unchecked.extend((source if rank is None else f"{source} (rank {rank})", why) for source, why in missing)
    return SameStepReport(tuple(checks), tuple(unchecked))


def _check_graph(entries: list[Any], index: Any, dumps: dict[str, str], golden_dir: Path,
                 reads: dict[str, list[str]], read_files: set[str] | None = None,
                 ) -> tuple[list[SourceCheck], list[tuple[str, str]]]:
    from precision_tool.formats.ge.ge_graph import data_edges
    from precision_tool.formats.npu.npu_dump import sanitize_op_name

    by_name = {entry.name: entry for entry in entries}
    sources = {e.name: ("input" if e.type in INPUT_TYPES else "weight") for e in entries
               if e.type in INPUT_TYPES or e.type in WEIGHT_TYPES}
    if not sources:
        return [], []
    first_reader: dict[str, tuple[Any, int, Path]] = {}
    source_of: dict[str, str | None] = {}
    for entry in entries:  # execution order: the first dumped reader of each source
        dump = dumps.get(sanitize_op_name(entry.name))
        if dump is None:
            continue
        for producer, _index, position in data_edges(entry.inputs):
            if producer not in source_of:
                source_of[producer] = _source_of(producer, by_name)
            source = source_of[producer]
            if source in sources and source not in first_reader:
                first_reader[source] = (entry, position, Path(dump))
    golden = _golden_files(golden_dir, [by_name[name] for name in sources], reads)
    checks: list[SourceCheck] = []
    missing: list[tuple[str, str]] = []
    for source, kind in sources.items():
        if source not in first_reader:
            missing.append((source, "no dumped op reads it"))
            continue
        reader, slot, dump = first_reader[source]
        if read_files is not None:
            read_files.add(str(dump))
        try:
            npu = _npu_input(dump, index.op(reader), slot)
        except PrecisionToolError as exc:
            missing.append((source, str(exc)))
            continue
        keys = _golden_candidates(by_name[source], kind, golden, npu.shape, reads)
        if read_files is not None:
            read_files.update(str(golden[key]) for key in keys)
        if not keys:
            # an optimizer's slot (momentum, Adam's m and v) is read by its update op alone, which TF dumps nothing of
            slot_only = "Apply" in reader.type
            missing.append((source, OPTIMIZER_STATE if slot_only else "no golden tensor of it in tf/dump"))
            continue
        try:
            compared = [_compare(source, kind, reader.name, slot, key, npu, golden[key]) for key in keys]
        except PrecisionToolError as exc:  # an unreadable golden file: said, not a crash and not an all-clear
            missing.append((source, str(exc)))
            continue
        fitting = [c for c in compared if c is not None]
        if not fitting:  # another layout or size: no element can be paired with its golden one
            missing.append((source, f"the NPU tensor's shape {list(npu.shape)} is not its golden's ({keys[0]})"))
            continue
        checks.append(min(fitting, key=lambda c: (c.differing, c.max_abs_diff)))
    return checks, missing


def _first_step_golden(golden_root: Path, dump_dir: Path) -> Path:
    """The golden folder of the dump's first iteration (the one _dump_files reads): tf/dump/step_<N>/ when
    the golden tensors are kept per step (docs/steps.md), else tf/dump/."""
    import os

    from precision_tool.workspace import golden_dir_for_step, step_golden_folders

    if not step_golden_folders(golden_root):
        return golden_root
    for where, folders, names in os.walk(dump_dir, followlinks=True):
        folders.sort()
        here = Path(where)
        if names and here.name.isdigit() and here.parent.name.isdigit():
            return golden_dir_for_step(golden_root, int(here.name))
    return golden_root


def _dump_files(dump_dir: Path) -> dict[str, str]:
    """Op name as dump files spell it → its file (as text: 100,000 Paths cost a second), the first (lowest)
    iteration of each. The names are split, not parsed (vc runs this check too); a folder with mapping.csv
    (numbered names) is read by scan_dump_folder, which resolves them."""
    import os

    from precision_tool.analysis.dumps.dump_files import scan_dump_folder
    from precision_tool.formats.npu.npu_dump import MAPPING_FILE

    dumps: dict[str, str] = {}
    for where, folders, names in os.walk(dump_dir, followlinks=True):
        folders.sort()
        if MAPPING_FILE in names:
            for found in scan_dump_folder(Path(where)):
                dumps.setdefault(found.name.op_name, found.path_text)
            folders.clear()  # scan_dump_folder walked below it
            continue
        for name in sorted(names):
            parts = name.split(".")
            if len(parts) in (4, 5, 9) and parts[2].isdigit():  # Type.op_name.task[.stream].time[...]
                if parts[1] not in dumps:
                    dumps[parts[1]] = os.path.join(where, name)
    return dumps


def variable_reads(meta_graph: Path) -> dict[str, list[str]]:
    """Variable → the golden graph's ReadVariableOp (and Identity) nodes that read it, from the captured
    step's MetaGraphDef (tf/checkpoints/model.meta); {} without one, or when it cannot be read (the check then
    falls back to the reads of the variable's scope with its shape)."""
    from google.protobuf.message import DecodeError

    from precision_tool.formats.tf.tf_protos import message_class

    try:
        data = meta_graph.read_bytes()
        meta = message_class("MetaGraphDef")()
        meta.ParseFromString(data)
    except (OSError, DecodeError):
        return {}
    reads: dict[str, list[str]] = {}
    for node in meta.graph_def.node:
        if node.op in ("ReadVariableOp", "Identity") and node.input:
            reads.setdefault(node.input[0].lstrip("^").split(":")[0], []).append(node.name)
    return reads


def _golden_files(golden_dir: Path, sources: list[Any], reads: dict[str, list[str]]) -> dict[str, Path]:
    """The golden files that may hold a source: named after it, its reads, or in its scope (one pass over the
    folder's names)."""
    from precision_tool.formats.tf.golden import safe_node_name, scan_golden_dir

    prefixes = set()
    for source in sources:
        for name in (source.name, *(source.original_names or ())):
            prefixes.add(safe_node_name(name))
            prefixes.add(f"_arg_{safe_node_name(name)}_")  # a tf.function's argument
            prefixes.update(safe_node_name(read) + "." for read in reads.get(name, ()))
        if "/" in source.name:
            prefixes.add(safe_node_name(source.name.rsplit("/", 1)[0]) + "_")
    return scan_golden_dir(golden_dir, tuple(sorted(prefixes))) if prefixes else {}


def _source_of(name: str, by_name: dict[str, Any]) -> str | None:
    """The op a data input comes from, followed back through pass-through ops."""
    from precision_tool.formats.ge.ge_graph import data_edges

    seen = set()
    while name in by_name and name not in seen:
        seen.add(name)
        entry = by_name[name]
        first = next(data_edges(entry.inputs), None)
        if entry.type not in PASS_THROUGH_TYPES or first is None:
            return name
        name = first[0]
    return name


def _npu_input(dump: Path, op: Any, slot: int) -> "np.ndarray":
    from precision_tool.analysis.dumps.origin_layout import op_origin_formats, shown_tensor
    from precision_tool.formats.npu.npu_dump import read_dump_header

    header = read_dump_header(dump)
    inputs = [t for t in header.tensors if t.label.startswith("input")]
    if slot >= len(inputs):
        raise PrecisionToolError(f"{dump}: holds {len(inputs)} inputs, the graph says input {slot} exists")
    array, _story = shown_tensor(header, header.tensor("input", slot), op_origin_formats(op).get(("input", slot)))
    return array


def _golden_candidates(source: Any, kind: str, golden: dict[str, Path], shape: tuple[int, ...],
                       reads: dict[str, list[str]]) -> list[str]:
    """Golden tensors that hold the source's value: its own output first; for a weight, else its reads in the
    golden graph (`reads`), else the reads in its scope with its shape (shapes read from the .npy headers)."""
    from precision_tool.formats.tf.golden import golden_key, read_npy_header, safe_node_name

    names = [source.name, *(source.original_names or ())]
    own = [golden_key(name, 0) for name in names] + [golden_key(name + "/read", 0) for name in names]
    found = [key for key in dict.fromkeys(own) if key in golden]
    if found:
        return found
    if kind == "input":  # a tf.function's argument: _arg_<name>_0_<n>
        args = tuple(f"_arg_{safe_node_name(name)}_" for name in names)
        return [key for key in golden if key.startswith(args) and key.endswith(".0")]
    known = [golden_key(read, 0) for name in names for read in reads.get(name, ())]
    found = [key for key in dict.fromkeys(known) if key in golden]
    if found:  # the golden graph says which tensors read it: no guess by scope and shape
        return found
    scope = source.name.rsplit("/", 1)[0] if "/" in source.name else ""
    prefix = safe_node_name(scope) + "_" if scope else ""
    reads = []
    for key, path in golden.items():
        if key.startswith(prefix) and "ReadVariableOp" in key:
            try:
                if tuple(read_npy_header(path)[1]) == tuple(shape):
                    reads.append(key)
            except PrecisionToolError:
                continue
    return reads


def _compare(source: str, kind: str, reader: str, slot: int, key: str, npu: "np.ndarray",
             golden_path: Path) -> SourceCheck | None:
    """The NPU tensor against one golden file; None when their shapes differ beyond size-1 dimensions."""
    import numpy as np

    from precision_tool.formats.tf.golden import load_npy

    golden = np.asarray(load_npy(golden_path))
    npu = np.asarray(npu)
    if golden.shape != npu.shape:
        squeezed = tuple(d for d in golden.shape if d != 1) == tuple(d for d in npu.shape if d != 1)
        if not squeezed:
            return None  # reshaping would pair the wrong elements (another layout) and call it a difference
        golden = golden.reshape(npu.shape)
    with np.errstate(all="ignore"):
        expected = golden.astype(npu.dtype)  # what the dtype explains: the golden value in the NPU's dtype
        if np.issubdtype(npu.dtype, np.floating):
            got, want = npu.astype(np.float64), expected.astype(np.float64)
            diff = np.abs(got - want)
            allowed = np.spacing(np.abs(expected)).astype(np.float64)  # one step of the NPU dtype
            both_nan = np.isnan(got) & np.isnan(want)
            off = ~both_nan & ~(diff <= allowed) & ~(got == want)
            finite = np.isfinite(diff)
            max_abs = float(diff[finite].max()) if finite.any() else 0.0
            scale = np.abs(golden.astype(np.float64))
            rel = np.where(scale > 0, diff / np.where(scale > 0, scale, 1), 0.0)
            max_rel = float(rel[finite].max()) if finite.any() else 0.0
        else:
            off = npu != expected
            diff = np.abs(npu.astype(np.float64) - expected.astype(np.float64))
            max_abs = float(diff.max()) if diff.size else 0.0
            max_rel = 0.0
    return SourceCheck(kind, source, reader, slot, key, str(npu.dtype), int(npu.size), int(np.count_nonzero(off)),
                       max_abs, max_rel)


def first_difference(report: SameStepReport) -> SourceCheck | None:
    """The first differing input or weight, in the graph's order (the one to fix first)."""
    return next(iter(report.differing), None)
