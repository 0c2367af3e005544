"""What a simulated NPU run leaves behind, written as Ascend software writes it.

- the GE Build graph (`npu/debug_N/graph/ge_proto_00000001_graph_1_Build.txt`): ids in execution order,
  descs in device layout, `_datadump_original_op_names`, `pass_name`, the kernel each op ran;
- a dump of every device task (`npu/debug_N/dump/<time>/0/<graph>/1/0/`), in device layout, named as
  the runtime names them;
- with overflow detection: an Opdebug record and the dump of each op that turned finite inputs into a
  non-finite float16 result (`overflow/dump/<time>/...`);
- `fusion/fusion_result.json`: what the fusion passes matched and changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from precision_tool.simulate.kernels import Values
from precision_tool.simulate.npu_graph import FLOAT16, FLOAT32, NpuGraph, NpuOp, NpuTensor
from precision_tool.workspace import Workspace

GRAPH_FILE_NAME = "ge_proto_00000001_graph_1_Build.txt"
STREAM_ID = 0

_GE_DTYPES = {FLOAT16: "DT_FLOAT16", FLOAT32: "DT_FLOAT", "float64": "DT_DOUBLE", "int32": "DT_INT32", "int64": "DT_INT64",
              "int8": "DT_INT8", "uint8": "DT_UINT8", "bool": "DT_BOOL"}


def device_array(array: Any, tensor: NpuTensor) -> Any:
    """The tensor as the device stores it (padded blocks for NC1HWC0 / FRACTAL_Z / FRACTAL_NZ)."""
    from precision_tool.formats.npu.layouts import to_device

    if tensor.layout == tensor.origin_format:
        return array
    return to_device(array, tensor.origin_format, tensor.layout)


def _desc(tensor: NpuTensor, *, with_origin: bool) -> Any:
    import numpy as np

    from precision_tool.formats.ge import ge_graph as ge

    shape = tuple(device_array(np.zeros(tensor.shape, dtype=tensor.dtype), tensor).shape)
    attrs: dict[str, Any] = {"origin_format": ge.attr_str(tensor.origin_format),
                             "origin_shape": ge.attr_list_int(tensor.shape)}
    if with_origin and tensor.origin_name is not None:
        attrs["_datadump_origin_name"] = ge.attr_str(tensor.origin_name)
        attrs["_datadump_origin_output_index"] = ge.attr_int(tensor.origin_index or 0)
        attrs["_datadump_origin_format"] = ge.attr_str(tensor.origin_format)
    return ge.TensorDesc(dtype=_GE_DTYPES[tensor.dtype], layout=tensor.layout, shape=shape, attrs=attrs)


def kernel_name(op: NpuOp, kernel_names: Mapping[str, str]) -> str:
    """The TBE kernel an op ran (`kernel_names` names some, e.g. a faulty and a fixed version)."""
    if op.name in kernel_names:
        return kernel_names[op.name]
    digest = sum(ord(c) * (n + 1) for n, c in enumerate(op.name)) & 0xFFFF
    return f"te_{op.type.lower()}_{digest:04x}"


def ge_model(graph: NpuGraph, *, kernel_names: Mapping[str, str] | None = None) -> Any:
    """The compiled graph as GE dumps it (`*_Build.txt`): ids in execution order, descs in device layout."""
    from precision_tool.formats.ge import ge_graph as ge

    consumers: dict[str, list[tuple[str, int]]] = {}
    for op in graph.ops:
        for position, (producer, _slot) in enumerate(op.inputs):
            consumers.setdefault(producer, []).append((op.name, position))
    producer_of = {op.name: op for op in graph.ops}
    ops = []
    for number, op in enumerate(graph.ops):
        attrs: dict[str, Any] = {}
        if op.original_names is not None and op.kind != "trans":
            attrs["_datadump_original_op_names"] = ge.attr_list_str(op.original_names)
        if op.pass_name:
            attrs["pass_name"] = ge.attr_str(op.pass_name)
        if op.pass_name_ub:
            attrs["pass_name_ub"] = ge.attr_str(op.pass_name_ub)
        if op.has_task:
            attrs[f"{op.name}_kernelname"] = ge.attr_str(kernel_name(op, kernel_names or {}))
            attrs["_ge_attr_op_kernel_lib_name"] = ge.attr_str("AIcoreEngine")
        else:
            attrs["_ge_attr_op_kernel_lib_name"] = ge.attr_str("DNN_VM_GE_LOCAL_OP_STORE")
        dsts = consumers.get(op.name, [])
        ops.append(ge.Op(
            name=op.name, type=op.type, id=number, stream_id=STREAM_ID,
            inputs=[f"{producer}:{slot}" for producer, slot in op.inputs],
            input_descs=[_desc(producer_of[p].outputs[s], with_origin=False) for p, s in op.inputs],
            output_descs=[_desc(t, with_origin=op.kind != "trans") for t in op.outputs],
            attrs=attrs, dst_names=[d for d, _ in dsts], dst_indexes=[i for _, i in dsts]))
    return ge.Model(path=Path(GRAPH_FILE_NAME), name=graph.name, graphs=[ge.Graph(name=graph.name, ops=ops)])


# --- dump files --------------------------------------------------------------------------------------
def _spec(array: Any, tensor: NpuTensor, *, output: bool) -> Any:
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    return TensorSpec(array=device_array(array, tensor), format=int(Format[tensor.layout]),
                      original_shape=tuple(tensor.shape),
                      origin_name=tensor.origin_name if output else None,
                      origin_output_index=tensor.origin_index if output and tensor.origin_name else None)


@dataclass(frozen=True)
class TaskInfo:
    """Where an op's dump went: its task id, file and timestamp."""

    op_name: str
    task_id: int
    timestamp_us: int


def task_table(graph: NpuGraph, start_us: int) -> dict[str, TaskInfo]:
    """Task ids and dump timestamps in execution order (ops without a device task have none)."""
    table = {}
    task = 0
    for op in graph.ops:
        if op.has_task:
            table[op.name] = TaskInfo(op.name, task, start_us + 37 * task)
            task += 1
    return table


def write_op_dump(folder: Path, op: NpuOp, graph: NpuGraph, values: Values, task: TaskInfo) -> Path:
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import write_dump

    producer_of = {o.name: o for o in graph.ops}
    inputs = [_spec(values[ref], producer_of[ref[0]].outputs[ref[1]], output=False) for ref in op.inputs]
    outputs = [_spec(values[(op.name, slot)], tensor, output=op.kind != "trans")
               for slot, tensor in enumerate(op.outputs)]
    path = folder / dump_file_name(op.type, op.name, task.task_id, STREAM_ID, task.timestamp_us)
    write_dump(path, op_name=op.name, inputs=inputs, outputs=outputs, dump_time_us=task.timestamp_us)
    return path


def write_run(workspace: Workspace, debug_id: int, graph: NpuGraph, values: Values, *, stamp: str,
              start_us: int, kernel_names: Mapping[str, str] | None = None, iteration: int = 0) -> int:
    """One NPU run: the Build graph and a dump of every task into iteration folder `iteration` (a run of
    several steps calls it once per step with the same `stamp`). Returns the number of dump files."""
    from precision_tool.formats.ge.ge_graph import write_graph_text

    model = ge_model(graph, kernel_names=kernel_names)
    write_graph_text(model, workspace.graph_dir(debug_id) / GRAPH_FILE_NAME)
    # dump/<time>/<device>/<model name>/<model id>/<iteration>/, as the NPU runtime lays it out
    folder = workspace.dump_root(debug_id) / stamp / "0" / graph.name / "1" / str(iteration)
    tasks = task_table(graph, start_us)
    for op in graph.ops:
        if op.has_task:
            write_op_dump(folder, op, graph, values, tasks[op.name])
    return len(tasks)


# --- overflow ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OverflowFinding:
    op_name: str
    op_type: str
    task_id: int
    status: int


def find_overflows(graph: NpuGraph, values: Values) -> list[OverflowFinding]:
    """Ops that *create* a non-finite float16 result from finite inputs (what the device flags)."""
    import numpy as np

    tasks = task_table(graph, 0)
    found = []
    for op in graph.ops:
        if not op.has_task:
            continue
        ins_finite = all(np.isfinite(values[ref]).all() for ref in op.inputs
                         if values[ref].dtype.kind == "f")
        outs = [values[(op.name, s)] for s in range(len(op.outputs))]
        if ins_finite and any(o.dtype == np.float16 and not np.isfinite(o).all() for o in outs):
            # 0x100: the float32 result (a Cast's input, the cube's float32 accumulator) does not fit
            # float16; 0x20: a float16 vector operation overflowed
            converts = op.type == "Cast" or op.type.startswith(("Conv2D", "MatMul", "BiasAddGrad"))
            status = 0x100 if converts else 0x20
            found.append(OverflowFinding(op.name, op.type, tasks[op.name].task_id, status))
    return found


def write_overflow_run(overflow_root: Path, graph: NpuGraph, values: Values, *, stamp: str,
                       start_us: int) -> list[OverflowFinding]:
    """What overflow detection leaves: per overflowing task, an Opdebug record and that op's dump."""
    import numpy as np

    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
    from precision_tool.formats.npu.opdebug import old_layout_payload

    findings = find_overflows(graph, values)
    folder = overflow_root / stamp / "0" / graph.name / "1" / "0"
    tasks = task_table(graph, start_us)
    for finding in findings:
        task = tasks[finding.op_name]
        write_op_dump(folder, graph.op(finding.op_name), graph, values, task)
        payload = old_layout_payload(ai_core=(STREAM_ID, task.task_id, finding.status))
        debug_time = task.timestamp_us + 5
        name = dump_file_name("Opdebug", "Node_OpDebug", task.task_id, STREAM_ID, debug_time)
        write_dump(folder / name, op_name="Node_OpDebug", inputs=[],
                   outputs=[TensorSpec(array=np.frombuffer(payload, dtype=np.uint8).copy())],
                   dump_time_us=debug_time)
    return findings


# --- fusion_result.json --------------------------------------------------------------------------------
def write_fusion_file(path: Path, graph: NpuGraph) -> None:
    """What the fusion passes matched and changed, in the compiler's one-object shape."""
    from precision_tool.formats.ge.fusion_result import GraphFusion, PassCount, write_fusion_result

    def passes(entries: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(PassCount(name, c.match_times, c.effect_times) for name, c in sorted(entries.items()))

    path.parent.mkdir(parents=True, exist_ok=True)
    write_fusion_result([GraphFusion("0_1", passes(graph.graph_fusion), passes(graph.ub_fusion))], path,
                        shape="object")
