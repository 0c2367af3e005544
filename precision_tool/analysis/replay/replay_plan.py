"""What replaying one NPU op needs, gathered without TensorFlow: a *case* folder per op.

For an op of a Build graph: its newest dump (inputs and outputs brought to the origin layout the graph
gives, device padding cut, the NPU's dtypes kept), the TensorFlow tensor each input and output stands
for (an output desc's `_datadump_origin_name`; an input's producer's, followed back through the Cast and
TransData ops the compiler inserted), the golden .npy of each, the TF ops the op was made from
(`_datadump_original_op_names`) and the files that hold the golden GraphDef. The child process
(capture/op_replay.py) rebuilds the ops from that GraphDef and runs them; nothing here guesses: what is
missing becomes the case's `problem`, which the verdict shows as *cannot replay*.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from precision_tool.analysis.graphs.graph_index import GraphIndex
from precision_tool.analysis.graphs.graph_summary import OpEntry
from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_graph import Op, split_input
from precision_tool.workspace import Workspace, golden_dir_for_step

CASE_FILE = "case.json"
RESULT_FILE = "result.json"
# Ops the compiler inserts: replayed by numpy from their own dumped input (no TF op behind them).
NATIVE_TYPES = frozenset({"Cast", "TransData", "TransDataRNN"})
# Producers passed through when looking for the TF tensor an input stands for.
_PASS_THROUGH = NATIVE_TYPES | {"Identity", "TensorMove"}
_SOURCE_TYPES = frozenset({"Data", "Variable", "VariableV2", "Const", "Constant", "RefData", "AippData"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class ReplayTensor:
    """One input or output of the NPU op: its dumped value (saved in the case folder) and its TF side."""

    kind: str  # "input" | "output"
    index: int
    file: str  # its .npy in the case folder
    dtype: str  # numpy dtype name of the NPU's value
    shape: tuple[int, ...]
    layout: str  # the layout of the saved value (the origin layout)
    tf_tensor: str | None  # 'pool1/MaxPool:0': the TF tensor it stands for, when the graph says
    golden: str | None  # that tensor's golden .npy
    npu_name: str | None = None  # an input as the NPU graph spells it ('bn2/gamma:0', as `ni` names it)


@dataclass(frozen=True)
class ReplayCase:
    """One op to replay. `problem` set: it cannot be replayed, and why (the child is not asked)."""

    key: str  # folder name
    folder: str
    op_name: str
    op_type: str
    op_id: int
    debug_id: int
    graph: str
    graph_file: str
    mode: str  # "tf": rebuild the original TF ops; "native": an inserted Cast/TransData, replayed by numpy
    tf_nodes: tuple[str, ...] = ()
    inputs: tuple[ReplayTensor, ...] = ()
    outputs: tuple[ReplayTensor, ...] = ()
    dump_file: str = ""
    graph_defs: tuple[str, ...] = ()
    golden_dir: str = ""
    fp16: bool = False  # the NPU computed in float16 (an input or output is float16): a float16 replay runs
    notes: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def label(self) -> str:
        return f"[{self.op_id}] {self.op_name}"

    def tensor(self, kind: str, index: int) -> ReplayTensor | None:
        return next((t for t in (self.inputs if kind == "input" else self.outputs) if t.index == index), None)


def case_key(entry: OpEntry) -> str:
    """A folder name for the op: debug id, op id and the name made safe."""
    return f"debug_{entry.debug_id}_{entry.id}_{_UNSAFE.sub('_', entry.name)}"[:200]


def golden_graph_files(workspace: Workspace) -> list[Path]:
    """Files holding the golden run's GraphDef, newest first: tfdbg v1 `_tfdbg_graph_*` Events, tfdbg v2
    `*.graphs` files, and the captured step's MetaGraphDef (tf/checkpoints/model.meta)."""
    root = workspace.tf_debug_dir
    found = [p for p in root.rglob("*") if (p.name.startswith("_tfdbg_graph_") or p.suffix == ".graphs")
             and p.is_file()] if root.is_dir() else []  # one walk: a tfdbg tree holds a file per tensor
    found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    meta = workspace.checkpoint_dir / "model.meta"
    if meta.is_file():
        found.append(meta)
    return found


def _graph_op(index: GraphIndex, entry: OpEntry, name: str) -> tuple[OpEntry, Op] | None:
    found = index.entry(entry.file, entry.graph, name)
    return (found, index.op(found)) if found is not None else None


def input_tf_tensor(index: GraphIndex, entry: OpEntry, ref: str, depth: int = 0) -> str | None:
    """The TF tensor an input ('producer:k') stands for: the producer's output desc names it, or the
    producer is a Data/Variable/Const named as the TF node, or an inserted Cast/TransData passes it on."""
    name, slot = split_input(ref)
    found = _graph_op(index, entry, name)
    if found is None or depth > 32:
        return None
    producer_entry, producer = found
    desc = producer.output_descs[slot] if 0 <= slot < len(producer.output_descs) else None
    if desc is not None and desc.origin_name:
        return f"{desc.origin_name}:{desc.origin_output_index or 0}"
    if producer.type in _PASS_THROUGH and producer.data_inputs:
        source, source_slot = producer.data_inputs[0]
        return input_tf_tensor(index, producer_entry, f"{source}:{source_slot}", depth + 1)
    if producer.type in _SOURCE_TYPES:
        return f"{producer.name}:{slot}"
    return None


def output_tf_tensor(op: Op, slot: int) -> str | None:
    desc = op.output_descs[slot] if 0 <= slot < len(op.output_descs) else None
    if desc is not None and desc.origin_name:
        return f"{desc.origin_name}:{desc.origin_output_index or 0}"
    names = op.original_op_names or []
    if len(names) == 1:
        return f"{names[0]}:{slot}"
    return None


def _golden_path(golden: dict[str, str], tf_tensor: str | None) -> str | None:
    from precision_tool.formats.tf.golden import golden_key

    if tf_tensor is None:
        return None
    name, _, slot = tf_tensor.rpartition(":")
    return golden.get(golden_key(name, int(slot)))


def dump_lookup(workspace: Workspace, debug_ids: set[int]) -> Callable[[OpEntry], list[Path]]:
    """An op's dump files (as find_dump_files finds them) from one walk of each run's newest dump folder:
    planning thousands of ops must not walk the dump folder once per op."""
    from precision_tool.analysis.dumps.dump_files import dumps_of_op, scan_runs
    from precision_tool.formats.npu.npu_dump import sanitize_op_name

    by_op: dict[tuple[int, str], list[Any]] = {}
    for debug_id in debug_ids:
        folder = workspace.newest_dump_dir(debug_id)
        for _, entries in scan_runs([(debug_id, folder)]) if folder is not None else ():
            for e in entries:
                by_op.setdefault((debug_id, e.name.op_name), []).append(e)

    def lookup(entry: OpEntry) -> list[Path]:
        found = by_op.get((entry.debug_id, sanitize_op_name(entry.name)), [])
        return [e.path for _, entries in dumps_of_op([(entry.debug_id, found)], entry.name) for e in entries]

    return lookup


def plan_case(index: GraphIndex, entry: OpEntry, folder: Path, golden: dict[str, str] | None = None,
              graph_defs: list[Path] | None = None,
              lookup: Callable[[OpEntry], list[Path]] | None = None, step: int | None = None) -> ReplayCase:
    """The case of one op, its tensors saved into `folder` (created). Never raises for a bad workspace:
    what is missing is the case's problem. `lookup`: how to find its dumps (dump_lookup), else a walk.
    `step`: the dump iteration to replay (vc --step all's diverging step), else the op's newest dump."""
    from precision_tool.analysis.ops.op_report import find_dump_files, find_stats_files
    from precision_tool.formats.tf.golden import golden_file_paths

    workspace = index.workspace
    op = index.op(entry)
    golden_dir = golden_dir_for_step(workspace.golden_dir, step)  # a step's own golden folder (docs/steps.md)
    golden = golden_file_paths(golden_dir) if golden is None else golden
    graph_defs = golden_graph_files(workspace) if graph_defs is None else graph_defs
    mode = "native" if op.type in NATIVE_TYPES else "tf"
    base = dict(key=case_key(entry), folder=str(folder), op_name=entry.name, op_type=entry.type, op_id=entry.id,
                debug_id=entry.debug_id, graph=entry.graph, graph_file=str(entry.file), mode=mode,
                tf_nodes=tuple(op.original_op_names or ()), golden_dir=str(golden_dir),
                graph_defs=tuple(str(p) for p in graph_defs))
    dumps = lookup(entry) if lookup is not None else find_dump_files(workspace, entry.debug_id, entry.name)
    if step is not None and dumps:  # several iterations: the one compared (its folder is named by the step)
        dumps = [d for d in dumps if d.parent.name == str(step)]
        if not dumps:
            return ReplayCase(**base, problem=f"no dump of {entry.name} at dump iteration {step}")
    if not dumps:
        where = workspace.newest_dump_dir(entry.debug_id) or workspace.dump_root(entry.debug_id)
        stats = find_stats_files(workspace, entry.debug_id, entry.name)
        problem = (f"debug_{entry.debug_id} dumped statistics only for {entry.name} (dump_data=\"stats\"); "
                   "replaying needs its tensors (dump_data=\"tensor\")" if stats
                   else f"no dump of {entry.name} in {where}")
        return ReplayCase(**base, problem=problem)
    if mode == "tf" and not op.original_op_names:
        return ReplayCase(**base, problem=f"{entry.name} has no _datadump_original_op_names: the graph does not "
                                          "say which TensorFlow ops it was made from")
    if mode == "tf" and not graph_defs:
        return ReplayCase(**base, problem=f"no golden GraphDef in {workspace.tf_debug_dir} (tfdbg's _tfdbg_graph_* "
                                          f"or *.graphs files) nor {workspace.checkpoint_dir / 'model.meta'}")
    try:
        inputs, outputs, notes = _save_tensors(index, entry, op, dumps[-1], folder, golden)
    except FormatError as exc:
        return ReplayCase(**base, dump_file=str(dumps[-1]), problem=f"cannot read the dump: {exc}")
    fp16 = any(t.dtype == "float16" for t in (*inputs, *outputs))
    case = ReplayCase(**base, inputs=inputs, outputs=outputs, dump_file=str(dumps[-1]), fp16=fp16, notes=notes)
    write_case(case)
    return case


def _save_tensors(index: GraphIndex, entry: OpEntry, op: Op, dump_path: Path, folder: Path,
                  golden: dict[str, str]) -> tuple[tuple[ReplayTensor, ...], tuple[ReplayTensor, ...], tuple[str, ...]]:
    import numpy as np

    from precision_tool.analysis.dumps.origin_layout import op_origin_formats, origin_layout_array
    from precision_tool.formats.npu.npu_dump import read_dump_header, read_tensor

    dump = read_dump_header(dump_path)
    origins = op_origin_formats(op)
    data_inputs = [f"{name}:{slot}" for name, slot in op.data_inputs]
    folder.mkdir(parents=True, exist_ok=True)
    saved: dict[str, list[ReplayTensor]] = {"input": [], "output": []}
    notes: list[str] = []
    # a fused op's own outputs (a batch norm reduce's sums) stand for no TF tensor: the others are replayed
    own = [t.index for t in dump.outputs if output_tf_tensor(op, t.index) is None]
    if len(own) < len(dump.outputs):
        notes.extend(f"not replayed: output {index}, the fused op's own, stands for no TF tensor" for index in own)
    else:
        own = []  # none stands for one: the replay says so
    for tensor in (*dump.inputs, *dump.outputs):
        if tensor.kind == "output" and tensor.index in own:
            continue
        array, story = origin_layout_array(tensor, read_tensor(dump, tensor), origins.get((tensor.kind, tensor.index)))
        if story.problem:
            notes.append(f"{tensor.kind} {tensor.index}: kept as dumped ({story.problem})")
        ref = None
        if tensor.kind == "input":
            ref = data_inputs[tensor.index] if tensor.index < len(data_inputs) else None
            tf_tensor = input_tf_tensor(index, entry, ref) if ref else None
        else:
            tf_tensor = output_tf_tensor(op, tensor.index)
        file_name = f"npu_{tensor.kind}_{tensor.index}.npy"
        np.save(folder / file_name, np.ascontiguousarray(array), allow_pickle=False)
        saved[tensor.kind].append(ReplayTensor(tensor.kind, tensor.index, file_name, str(array.dtype),
                                               tuple(int(d) for d in array.shape), story.layout, tf_tensor,
                                               _golden_path(golden, tf_tensor), ref))
    return tuple(saved["input"]), tuple(saved["output"]), tuple(notes)


def write_case(case: ReplayCase) -> Path:
    from precision_tool.atomic import write_text_atomic

    path = Path(case.folder) / CASE_FILE
    write_text_atomic(path, json.dumps(asdict(case), indent=1))
    return path


@dataclass(frozen=True)
class ChildResult:
    """What the child wrote for one case (result.json)."""

    status: str  # "ok" | "failed"
    reason: str = ""
    feeds: tuple[dict[str, Any], ...] = ()  # {"placeholder", "tf_tensor", "source", "file"}: what was fed
    variants: dict[str, dict[str, str]] = field(default_factory=dict)  # "float32" → {output index: .npy}
    fp16: str = "none"  # how the float16 replay ran: "tensorflow", "emulated", "numpy", "none" (not float16)
    notes: tuple[str, ...] = ()
    graphs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """variant → {"file": the replayed GraphDef (.pb), "fetches": tensors per output, "init": ops run first}"""


def read_child_result(folder: Path) -> ChildResult | None:
    path = folder / RESULT_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return ChildResult(status=data.get("status", "failed"), reason=data.get("reason", ""),
                       feeds=tuple(data.get("feeds", ())), variants=dict(data.get("variants", {})),
                       fp16=data.get("fp16", "none"), notes=tuple(data.get("notes", ())),
                       graphs=dict(data.get("graphs", {})))
