"""Run the derived NPU graph in the NPU's precision and write what an Ascend run leaves behind.

Every op is computed again, from the NPU's own upstream outputs (so errors propagate as on the
device), with TensorFlow's CPU kernels or numpy, in the dtypes the graph gives it: float16 tensors,
float32 accumulation where the cube unit accumulates in float32 (convolutions, matmuls, reductions),
float32 for the loss, the loss scale and the optimizer, and float32 throughout for the op types the
block list keeps in float32. Nothing is golden plus noise. One kernel is planted wrong
(`PLANTED_FAULT`); the network's static loss scale makes float16 gradients overflow for real.

Writes, under the workspace:
- npu/debug_0/graph/ge_proto_00000001_graph_1_Build.txt and npu/debug_0/dump/<time>/0/<graph>/1/0/*
- npu/debug_1/...: a second run after the faulty kernel was fixed (differs in that one op)
- overflow/dump/<time>/0/<graph>/1/0/: debug_0's step with overflow detection on: an Opdebug record
  and the dump of each op whose float16 result overflowed
- fusion/fusion_result.json: what the fusion passes matched and changed
- npu/debug_2/... (`demo --fixed`, `write_fixed_run`): the step with the block list's op types kept in
  float32 and the fixed kernel
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from precision_tool.workspace import Workspace
from precision_tool.simulate.npu_graph import FLOAT16, FLOAT32, NpuGraph, NpuOp, NpuTensor

PLANTED_FAULT_OP = "bn2/FusedBatchNormV3"
PLANTED_FAULT = ("the NPU BatchNorm kernel of bn2/FusedBatchNormV3 reads its offset (beta) vector one "
                 "channel late: channel c gets beta[c-1] (channel 0 gets the last one)")
PRECISION_PROBLEM = ("not planted, it happens by itself: with the network's static loss scale of 2^17, fc2's "
                     "weight gradient gradients/fc2/MatMul_grad/MatMul_1 (MatMulV2) exceeds float16's 65504 and its "
                     "float16 result overflows to inf")
GRAPH_FILE_NAME = "ge_proto_00000001_graph_1_Build.txt"
STREAM_ID = 0
KERNEL_VERSION = {"faulty": "te_batchnorm_v1_9c1e", "fixed": "te_batchnorm_v2_4a7d"}

Values = dict[tuple[str, int], Any]


@dataclass(frozen=True)
class SimOptions:
    """One simulated run: whether the planted fault is in (the loss scale is part of the graph)."""

    planted_fault: bool = True


# --- kernels -----------------------------------------------------------------------------------------
def _f32(array: Any) -> Any:
    import numpy as np

    return np.asarray(array).astype(np.float32)


def _conv2d(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np
    import tensorflow as tf

    # cube unit: float16 (or float32) operands, float32 accumulation, result in the graph's dtype
    dtype = np.dtype(op.outputs[0].dtype)
    acc = tf.nn.conv2d(_f32(ins[0]), _f32(ins[1]), op.params["strides"], op.params["padding"]).numpy()
    out = acc.astype(dtype)
    if op.params["bias"]:
        out = out + ins[2]  # vector unit, in the bias's dtype (the same)
    if op.params["relu"]:
        out = np.maximum(out, dtype.type(0))
    return [out]


def _matmul(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    a, b = _f32(ins[0]), _f32(ins[1])
    if op.params["transpose_a"]:
        a = a.T
    if op.params["transpose_b"]:
        b = b.T
    # float32 accumulation; a float16 result saturates to inf beyond 65504, a float32 one does not
    out = (a @ b).astype(op.outputs[0].dtype)
    if op.params["bias"]:
        out = out + ins[2]
    return [out]


def _max_pool(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    x = tf.constant(ins[0])  # in its own dtype (float16, or float32 when kept)
    return [tf.raw_ops.MaxPool(input=x, ksize=op.params["ksize"], strides=op.params["strides"],
                               padding=op.params["padding"]).numpy()]


def _max_pool_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    x, y, grad = (tf.constant(a) for a in ins)
    return [tf.raw_ops.MaxPoolGrad(orig_input=x, orig_output=y, grad=grad, ksize=op.params["ksize"],
                                   strides=op.params["strides"], padding=op.params["padding"]).numpy()]


def _relu(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np

    return [np.maximum(ins[0], ins[0].dtype.type(0))]


def _relu_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np

    gradients, features = ins
    return [np.where(features > 0, gradients, gradients.dtype.type(0))]


def _batch_norm(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np
    import tensorflow as tf

    x, scale, offset = ins
    if options.planted_fault and op.name == PLANTED_FAULT_OP:
        offset = np.roll(offset, 1)  # THE PLANTED FAULT: beta read one channel late
    empty = np.zeros(0, np.float32)
    results = tf.raw_ops.FusedBatchNormV3(x=x, scale=scale, offset=offset, mean=empty, variance=empty,
                                          epsilon=op.params["epsilon"], is_training=True)
    return [r.numpy() for r in results[:5]]


def _batch_norm_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np
    import tensorflow as tf

    dy, x, scale, mean, variance = ins
    results = tf.raw_ops.FusedBatchNormGradV3(y_backprop=dy, x=x, scale=scale, reserve_space_1=mean,
                                              reserve_space_2=variance, reserve_space_3=np.zeros(0, np.float32),
                                              epsilon=op.params["epsilon"], is_training=True)
    return [r.numpy() for r in results[:3]]


def _bias_add_grad(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    grad = _f32(ins[0])
    return [grad.reshape(-1, grad.shape[-1]).sum(axis=0).astype(op.outputs[0].dtype)]


def _softmax_xent(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    loss, backprop = tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=_f32(ins[0]), labels=_f32(ins[1]))
    return [loss.numpy(), backprop.numpy()]


def _reduce_mean(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import numpy as np

    return [np.asarray(_f32(ins[0]).mean(axis=tuple(op.params["axes"])), dtype=np.float32)]


def _mul(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return [(ins[0] * ins[1]).astype(ins[0].dtype)]


def _conv_backprop_input(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    acc = tf.raw_ops.Conv2DBackpropInput(input_sizes=op.params["input_size"], filter=_f32(ins[0]),
                                         out_backprop=_f32(ins[1]), strides=op.params["strides"],
                                         padding=op.params["padding"]).numpy()
    return [acc.astype(op.outputs[0].dtype)]


def _conv_backprop_filter(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    import tensorflow as tf

    acc = tf.raw_ops.Conv2DBackpropFilter(input=_f32(ins[0]), filter_sizes=op.params["filter_size"],
                                          out_backprop=_f32(ins[1]), strides=op.params["strides"],
                                          padding=op.params["padding"]).numpy()
    return [_f32(acc)]  # weight gradients stay in float32 (fp32 accumulation, fp32 output)


def _apply_gradient_descent(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    var, lr, delta = ins
    return [_f32(var - lr * delta)]  # delta is already unscaled (the graph's loss_scale/unscale_* Muls)


def _reshape(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return [ins[0].reshape(op.params["shape"])]


def _cast(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return [ins[0].astype(op.outputs[0].dtype)]  # float32 → float16 saturates to inf, as the device does


def _trans_data(op: NpuOp, ins: list[Any], options: SimOptions) -> list[Any]:
    return [ins[0].copy()]  # values kept in logical layout; the device layout is applied when dumping


KERNELS: dict[str, Callable[[NpuOp, list[Any], SimOptions], list[Any]]] = {
    "Conv2D": _conv2d, "MatMulV2": _matmul, "MaxPool": _max_pool, "MaxPoolGrad": _max_pool_grad,
    "Relu": _relu, "ReluGrad": _relu_grad, "BatchNorm": _batch_norm, "BatchNormGrad": _batch_norm_grad,
    "BiasAddGrad": _bias_add_grad, "SoftmaxCrossEntropyWithLogits": _softmax_xent, "ReduceMeanD": _reduce_mean,
    "Mul": _mul, "Conv2DBackpropInputD": _conv_backprop_input, "Conv2DBackpropFilterD": _conv_backprop_filter,
    "ApplyGradientDescent": _apply_gradient_descent, "Reshape": _reshape, "Cast": _cast, "TransData": _trans_data,
}


def simulate(graph: NpuGraph, feeds: dict[str, Any], options: SimOptions) -> Values:
    """Every op's outputs (logical layout, device dtype), computed in execution order.

    `feeds` holds the Data inputs and the variables' starting values by op name (float32)."""
    import numpy as np

    values: Values = {}
    with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for op in graph.ops:
            if op.kind in ("data", "variable"):
                outputs = [np.asarray(feeds[op.name], dtype=op.outputs[0].dtype)]
            elif op.kind == "const":
                outputs = [np.asarray(op.params["value"])]
            else:
                ins = [values[ref] for ref in op.inputs]
                outputs = KERNELS[op.type](op, ins, options)
            if len(outputs) != len(op.outputs):
                raise AssertionError(f"{op.name}: kernel gave {len(outputs)} outputs, graph says {len(op.outputs)}")
            for slot, (array, spec) in enumerate(zip(outputs, op.outputs)):
                array = np.asarray(array)
                if array.dtype != np.dtype(spec.dtype):
                    raise AssertionError(f"{op.name}:{slot} is {array.dtype}, graph says {spec.dtype}")
                if tuple(array.shape) != tuple(spec.shape):
                    raise AssertionError(f"{op.name}:{slot} has shape {array.shape}, graph says {spec.shape}")
                values[(op.name, slot)] = array
    return values


# --- GE graph ----------------------------------------------------------------------------------------
_GE_DTYPES = {FLOAT16: "DT_FLOAT16", FLOAT32: "DT_FLOAT", "int32": "DT_INT32"}


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


def kernel_name(op: NpuOp, fixed_kernel: bool) -> str:
    if op.name == PLANTED_FAULT_OP:
        return KERNEL_VERSION["fixed" if fixed_kernel else "faulty"]
    digest = sum(ord(c) * (n + 1) for n, c in enumerate(op.name)) & 0xFFFF
    return f"te_{op.type.lower()}_{digest:04x}"


def ge_model(graph: NpuGraph, *, fixed_kernel: bool = False) -> Any:
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
            attrs[f"{op.name}_kernelname"] = ge.attr_str(kernel_name(op, fixed_kernel))
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
              start_us: int, fixed_kernel: bool) -> int:
    """One NPU run: the Build graph and a dump of every task. Returns the number of dump files."""
    from precision_tool.formats.ge.ge_graph import write_graph_text

    model = ge_model(graph, fixed_kernel=fixed_kernel)
    write_graph_text(model, workspace.graph_dir(debug_id) / GRAPH_FILE_NAME)
    # dump/<time>/<device>/<model name>/<model id>/<iteration>/, as the NPU runtime lays it out
    folder = workspace.dump_root(debug_id) / stamp / "0" / graph.name / "1" / "0"
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


# --- the whole NPU side --------------------------------------------------------------------------------
@dataclass(frozen=True)
class NpuSideReport:
    ops: int
    dump_files: int
    overflows: tuple[OverflowFinding, ...]
    seconds: float

    def __str__(self) -> str:
        first = self.overflows[0].op_name if self.overflows else "none"
        return (f"NPU side: {self.ops} ops, {self.dump_files} dump files per run, "
                f"first overflow: {first}, {self.seconds:.1f} s")


def write_npu_side(workspace: Workspace, graph: NpuGraph, feeds: dict[str, Any]) -> NpuSideReport:
    """debug_0 (planted fault), debug_1 (kernel fixed), the overflow run, and fusion_result.json."""
    started = time.perf_counter()
    now = time.time()
    stamps = [time.strftime("%Y%m%d%H%M%S", time.localtime(now + k)) for k in range(3)]
    start_us = int(now * 1_000_000)
    faulty = simulate(graph, feeds, SimOptions(planted_fault=True))
    count = write_run(workspace, 0, graph, faulty, stamp=stamps[0], start_us=start_us, fixed_kernel=False)
    fixed = simulate(graph, feeds, SimOptions(planted_fault=False))
    write_run(workspace, 1, graph, fixed, stamp=stamps[1], start_us=start_us + 1_000_000, fixed_kernel=True)
    # debug_0's step again with overflow detection on: the same values, so the same ops overflow
    overflows = write_overflow_run(workspace.overflow_root, graph, faulty, stamp=stamps[2],
                                   start_us=start_us + 2_000_000)
    write_fusion_file(workspace.fusion_file, graph)
    return NpuSideReport(len(graph.ops), count, tuple(overflows), time.perf_counter() - started)


FIXED_DEBUG_ID = 2


def write_fixed_run(workspace: Workspace, graph: NpuGraph, feeds: dict[str, Any]) -> NpuSideReport:
    """npu/debug_2: the step of `graph` (derived with the block list's op types kept in float32) with the
    vendor's fixed kernel; an earlier debug_2 is replaced."""
    import shutil

    started = time.perf_counter()
    target = workspace.debug_dir(FIXED_DEBUG_ID)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    now = time.time()
    values = simulate(graph, feeds, SimOptions(planted_fault=False))
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
    count = write_run(workspace, FIXED_DEBUG_ID, graph, values, stamp=stamp, start_us=int(now * 1_000_000),
                      fixed_kernel=True)
    overflows = tuple(find_overflows(graph, values))
    return NpuSideReport(len(graph.ops), count, overflows, time.perf_counter() - started)
