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
from typing import Any, Callable, Iterable, Sequence

from precision_tool.analysis.compare.quant_filter import QUANT_NAME as _QUANT_NAME
from precision_tool.formats.npu.npu_dump import DumpName, dump_name_of, sanitize_op_name
from precision_tool.workspace import walk_files

PASS_THROUGH_TYPES = ("Cast", "TransData")
DEQUANT_NAME_ENDINGS = ("_dequant_layer", "AscendDequant", "_dequant")
"""An op whose name ends so (or of type AscendDequant) has its inputs skipped, as in msaccucmp."""


@dataclass(frozen=True)
class GoldenRef:
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

    @property
    def key(self) -> str:
        from precision_tool.formats.tf.golden import golden_key

        return golden_key(self.op_name, self.index)


@dataclass(frozen=True)
class TensorMatch:
    """The golden of one NPU tensor, or why there is none."""

    golden: GoldenRef | None
    problem: str = ""
    """Set when the graph says nothing usable (producer missing ...); empty for plain 'no golden'."""


@dataclass(frozen=True)
class OpPlan:
    """One NPU op to compare: its dump file and how each of its tensors finds its counterpart."""

    name: str
    op_type: str
    dump_path: Path | None
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


@dataclass(frozen=True)
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

    groups: tuple[GroupPlan, ...]
    npu_vs_npu: bool
    warnings: tuple[str, ...] = ()
    matched_dumps: int = 0
    unmatched_dumps: int = 0


# --- the dump folder ----------------------------------------------------------------------------
@dataclass
class DumpIndex:
    """Dump files of a folder tree by op-name field (sanitised name); the latest timestamp wins."""

    by_op: dict[str, Path] = field(default_factory=dict)
    names: dict[Path, DumpName] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)

    def find(self, op_name: str) -> Path | None:
        return self.by_op.get(sanitize_op_name(op_name))


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


def dump_iterations(folder: Path) -> dict[int, list[Path]]:
    """The iteration folders of a dump tree (`.../<model_id>/<iteration>/files`, formats.md §2.1) by number."""
    found: dict[int, list[Path]] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames.sort()
        here = Path(dirpath)
        if filenames and here != Path(folder) and here.name.isascii() and here.name.isdigit() and here.parent.name.isdigit():
            found.setdefault(int(here.name), []).append(here)
    return dict(sorted(found.items()))


def index_dumps(folder: Path, *, recursive: bool = True, with_graph: bool = False,
                step: int | None = None, stats: bool = False) -> DumpIndex:
    """Index the dump files of `folder` by op (`with_graph`: the op names are matched to a graph's;
    `step`: only files of that iteration folder, so iterations are never mixed; `stats`: the statistics
    CSVs of a dump_data="stats" run instead of tensor dumps, named by their dump name without `.csv`)."""
    index = DumpIndex()
    best: dict[str, tuple[int, str, Path]] = {}
    files: Iterable[Path]
    if recursive:
        files = walk_files(folder)
    else:
        files = sorted(p for p in folder.iterdir() if p.is_file())
    if step is not None:
        files = list(files)
        if any(p.parent.name.isdigit() and p.parent.parent.name.isdigit() for p in files):
            files = [p for p in files if p.parent.name == str(step) and p.parent.parent.name.isdigit()]
    for path in files:
        if stats:
            if path.name == "mapping.csv" or not path.name.lower().endswith(".csv"):
                continue
            from precision_tool.formats.npu.stats_dump import stats_name_of

            name = stats_name_of(path)[0]
        elif path.name == "mapping.csv" or path.suffix in (".npy", ".txt", ".json", ".csv", ".partial"):
            continue
        else:
            name = dump_name_of(path)
        if name is None:
            index.ignored.append(path.name)
            continue
        if name.is_opdebug:
            continue
        if name.extra and name.task_type not in (None, 0, 1, 4):
            index.ignored.append(f"{path.name} (task type {name.task_type})")
            continue
        op_key = dump_op_key(name.op_name, with_graph=with_graph)
        if op_key is None:
            index.ignored.append(f"{path.name} (an _lxslice part of an op)")
            continue
        index.names[path] = name
        rank = (name.timestamp_us, path.name, path)
        current = best.get(op_key)
        if current is None or rank[:2] > current[:2]:
            best[op_key] = rank
    index.by_op = {op: value[2] for op, value in best.items()}
    return index


def find_graph_dump_dir(dump_dir: Path, graph_name: str) -> Path | None:
    """The `<model_name>` folder of a dump tree that belongs to graph `graph_name` (formats.md §2.1)."""
    if not graph_name:
        return None
    for dirpath, dirnames, _ in os.walk(dump_dir, followlinks=True):
        if graph_name in dirnames:
            return Path(dirpath) / graph_name
        dirnames.sort()
    return None


# --- NPU vs golden through the graph --------------------------------------------------------------
def _group_key(op: "Op") -> str | tuple[str, ...]:  # type: ignore[name-defined]  # noqa: F821
    """msaccucmp's fusion-op name: the L1 group number, else the single original name, else the op's own
    name (attribute absent, empty, or ['']), all in one string namespace — so an op without the attribute
    and an op whose only original name is that op share a group. Several original names: their own key."""
    group = op.fusion_group
    if group is not None:
        return group
    names = op.original_op_names
    if not names or (len(names) == 1 and names[0] == ""):
        return op.name
    if len(names) == 1:
        return names[0]
    return ("multi", *names)


def _group_reason(members: Sequence["Op"], inner: set[str], graph: "_GraphIndex") -> str:  # type: ignore[name-defined]  # noqa: F821
    reasons = []
    for op in members:
        if op.name in graph.quant_filtered:
            continue
        if op.name in inner:
            reasons.append(f"[{op.name}] The op is inner node for multi to multi relation.Skip the op.")
        else:
            reasons.append(f'[{op.name}] There is no dump file for my output operator "{op.name}". '
                           f"The type is {op.type}.")
    return ",".join(reasons)


def _ground_truth_names(op: "Op") -> str:  # type: ignore[name-defined]  # noqa: F821
    names = op.original_op_names
    if names is None:
        return op.name
    return ",".join(names)


def _is_inner_node(op: "Op") -> bool:  # type: ignore[name-defined]  # noqa: F821
    multi = op.attrs.get("_datadump_is_multiop")
    return bool(multi) and not any(desc.origin_name for desc in op.output_descs)


class _GraphIndex:
    def __init__(self, ops: Sequence["Op"]) -> None:  # type: ignore[name-defined]  # noqa: F821
        self.by_name = {op.name: op for op in ops}
        self._ops = ops
        self._filtered: set[str] | None = None
        sizes: dict[str | tuple[str, ...], int] = {}
        for op in ops:
            key = _group_key(op)
            sizes[key] = sizes.get(key, 0) + 1
        self.group_size = {op.name: sizes[_group_key(op)] for op in ops}
        self._outputs: dict[tuple[str, int], TensorMatch] = {}
        """(op, output) → its golden: an output is asked for once as itself and once per consumer."""

    @property
    def quant_filtered(self) -> set[str]:
        """The ops msaccucmp's quant filter drops (computed when first asked: only inner-node groups ask)."""
        if self._filtered is None:
            from precision_tool.analysis.compare.quant_filter import quant_filtered

            self._filtered = quant_filtered(self._ops)
        return self._filtered

    def output_golden(self, op: "Op", index: int) -> TensorMatch:  # type: ignore[name-defined]  # noqa: F821
        key = (op.name, index)
        found = self._outputs.get(key)
        if found is None or self.by_name.get(op.name) is not op:
            found = output_golden(op, index, self.by_name.get, lambda o: self.group_size.get(o.name, 1))
            if self.by_name.get(op.name) is op:
                self._outputs[key] = found
        return found

    def input_golden(self, op: "Op", index: int, inputs: list[tuple[str, int]] | None = None) -> TensorMatch:  # type: ignore[name-defined]  # noqa: F821
        """`inputs`: op.data_inputs when the caller has them (they are parsed from text each time)."""
        producer_name, producer_index = (op.data_inputs if inputs is None else inputs)[index]
        producer = self.by_name.get(producer_name)
        if producer is None:
            return TensorMatch(None, f'There is no "{producer_name}" in the graph.')
        return self.output_golden(producer, producer_index)


def output_golden(op: Any, index: int, producer: Callable[[str], Any], group_size: Callable[[Any], int],
                  seen: int = 0) -> TensorMatch:
    """The golden of output `index` of `op`, as msaccucmp finds it: through inserted Cast/TransData ops to the
    producer (`producer(name)` looks an op up), then the output desc's origin name, else the op's one original
    name when it is alone in its group (`group_size`), else its own name when it has none."""
    if op.type in PASS_THROUGH_TYPES and seen < 64:
        inputs = op.data_inputs
        if index < len(inputs):
            producer_name, producer_index = inputs[index]
            found = producer(producer_name)
            if found is None:
                return TensorMatch(None, f'There is no "{producer_name}" in the graph.')
            return output_golden(found, producer_index, producer, group_size, seen + 1)
    desc = op.output_descs[index] if index < len(op.output_descs) else None
    origin = desc.origin_name if desc is not None else None
    if origin:
        name: str | None = origin
    else:
        names = op.original_op_names
        if names is None:
            name = op.name
        elif len(names) == 1 and names[0] and group_size(op) == 1 and _group_key(op) == names[0]:
            name = names[0]  # msaccucmp's "rename node": alone in a group named by its original name
        else:
            name = None
    if name is None:
        return TensorMatch(None)
    golden_index = desc.origin_output_index if desc is not None and desc.origin_output_index is not None else index
    layout = desc.origin_format if desc is not None else None
    shape = desc.origin_shape if desc is not None else None
    return TensorMatch(GoldenRef(name, int(golden_index), layout or None, shape))


def _without_lxslice(ops: Sequence["Op"]) -> Sequence["Op"]:  # type: ignore[name-defined]  # noqa: F821
    """The ops with `_lxslice<k>` removed from their names and inputs, as msaccucmp reads the graph."""
    import dataclasses

    if not any("_lxslice" in op.name or any("_lxslice" in i for i in op.inputs) for op in ops):
        return ops
    return [dataclasses.replace(op, name=graph_op_name(op.name), inputs=[graph_op_name(i) for i in op.inputs])
            if "_lxslice" in op.name or any("_lxslice" in i for i in op.inputs) else op for op in ops]


def plan_graph_compare(
    graph_ops: Sequence["Op"],  # type: ignore[name-defined]  # noqa: F821
    dumps: DumpIndex,
    *,
    all_ops: Sequence["Op"] | None = None,  # type: ignore[name-defined]  # noqa: F821
) -> MatchPlan:
    """Rows of an NPU-vs-golden run from the ops of one graph (in file order) and a dump index."""
    graph_ops = _without_lxslice(graph_ops)
    graph = _GraphIndex(_without_lxslice(all_ops) if all_ops is not None else graph_ops)
    groups: dict[str | tuple[str, ...], list["Op"]] = {}  # type: ignore[name-defined]  # noqa: F821
    for op in graph_ops:
        groups.setdefault(_group_key(op), []).append(op)
    plans: list[GroupPlan] = []
    used: set[Path] = set()
    for number, members in enumerate(groups.values()):
        op_plans = []
        for op in members:
            dump = dumps.find(op.name)
            if dump is not None:
                used.add(dump)
            outputs = max(len(op.output_descs), 1)
            data_inputs = op.data_inputs
            op_plans.append(OpPlan(
                name=op.name, op_type=op.type, dump_path=dump,
                inputs=tuple(graph.input_golden(op, i, data_inputs) for i in range(len(data_inputs))),
                outputs=tuple(graph.output_golden(op, i) for i in range(outputs)),
                skip_inputs=op.type == "AscendDequant" or op.name.endswith(DEQUANT_NAME_ENDINGS),
                skip_outputs=op.type == "AscendQuant", sequence=int(op.id or 0),
            ))
        if len(members) == 1:
            npu_text = members[0].name
            gt_text = _ground_truth_names(members[0]) or "*"
            kept = op_plans
        else:
            by_names: dict[str, list[OpPlan]] = {}
            for op, op_plan in zip(members, op_plans):
                by_names.setdefault(_ground_truth_names(op), []).append(op_plan)
            npu_text = ",".join(p.name for plist in by_names.values() for p in plist)
            gt_text = ",".join(by_names.keys())
            inner = {op.name for op in members if _is_inner_node(op)}
            kept = [p for p in op_plans if p.dump_path is not None and p.name not in inner]
            if not kept:
                import dataclasses

                # msaccucmp's one NaN row: each op's reason (inner node / no dump), quant-filtered ops unsaid
                kept = [dataclasses.replace(op_plans[0], skip_reason=_group_reason(members, inner, graph))]
        plans.append(GroupPlan(number, tuple(kept), npu_text, gt_text, tuple(int(op.id or 0) for op in members)))
    matched = len(used)
    unmatched = len(set(dumps.by_op.values()) - used)
    warnings: list[str] = []
    bare = [op.name for op in graph_ops if len(op.output_descs) > 1 and any(not d.attrs for d in op.output_descs)]
    if bare:
        warnings.append(
            f"{len(bare)} ops (e.g. {bare[0]}) have output descs without attributes: msaccucmp drops those descs and "
            "pairs the later outputs with the wrong golden tensors (an index past the end falls back to output 0); "
            "here output i always uses output_desc[i], so its rows for these ops differ from msaccucmp's"
        )
    quant = [op.name for op in graph_ops if _QUANT_NAME.search(op.name + "".join(op.original_op_names or []))]
    if quant:
        warnings.append(
            f"the graph is quantized ({len(quant)} quantize ops, e.g. {quant[0]}): AscendQuant outputs and "
            "dequantize inputs are not compared (as msaccucmp); msaccucmp also skips the ops between a quantize "
            "and its dequantize op, which are compared here"
        )
    ops_with_dump = sum(1 for g in plans for p in g.ops if p.dump_path is not None)
    if graph_ops and (matched == 0 or unmatched > matched):
        warnings.append(
            f"the graph and the dump folder do not seem to belong together: {ops_with_dump} of "
            f"{len(graph_ops)} graph ops have a dump, {unmatched} dump files match no graph op"
        )
    return MatchPlan(tuple(plans), npu_vs_npu=False, warnings=tuple(warnings),
                     matched_dumps=matched, unmatched_dumps=unmatched)


# --- without a graph ------------------------------------------------------------------------------
def _ordered_dumps(dumps: DumpIndex) -> list[tuple[str, Path]]:
    """Dumped ops in execution order (timestamp, then name)."""
    return sorted(dumps.by_op.items(), key=lambda item: (dumps.names[item[1]].timestamp_us, item[0]))


def plan_name_compare(dumps: DumpIndex, golden_keys: Iterable[str]) -> MatchPlan:
    """NPU vs golden by name alone: output i of dump `<op>` ↔ golden `<op>.<i>` (no graph: a fallback)."""
    from precision_tool.formats.tf.golden import golden_key

    keys = set(golden_keys)
    groups = []
    matched = 0
    for number, (op_field, path) in enumerate(_ordered_dumps(dumps)):
        name = dumps.names[path]
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
        name = left.names[path]
        groups.append(GroupPlan(
            number, (OpPlan(op_field, name.op_type, path, (), (), right_dump_path=other),),
            op_field, op_field if other is not None else "*",
        ))
    warnings = []
    if missing:
        warnings.append(f"{missing} of {len(groups)} dumped ops have no dump in the other run")
    return MatchPlan(tuple(groups), npu_vs_npu=True, warnings=tuple(warnings),
                     matched_dumps=len(groups) - missing, unmatched_dumps=missing)
