"""Run the rank demo's NPU graph on N ranks in lockstep and write what N Ascend devices leave behind.

Each rank computes every op from its own upstream outputs in the NPU's precision, with simulate/'s kernels
(no planted kernel fault); an `HcomAllReduce` waits for all ranks: its output, the same on every rank, is
the sum of the ranks' inputs in their own dtype (`ranks.float16_sum`). On the faulty rank the all-reduce
of `ranks.FAULT_VARIABLE` reads a corrupted input (`ranks.corrupt`); its dump shows the input as read.

Writes npu/debug_0/graph/<Build graph> once (HCCL ops with their reduction/group/fusion attributes and
the HCCL kernel library) and npu/debug_0/dump/<stamp>/<rank>/<graph>/1/0/<dumps> per rank, plus
fusion/fusion_result.json.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from precision_tool.demo import ranks
from precision_tool.demo.npu_side import FIXED_KERNEL
from precision_tool.simulate import kernels as sim_kernels
from precision_tool.simulate import run_files
from precision_tool.simulate.npu_graph import NpuGraph, NpuOp
from precision_tool.workspace import Workspace

Values = sim_kernels.Values
OPTIONS = sim_kernels.SimOptions()  # the single demo's bn2 kernel fault is off here


@dataclass
class RankRun:
    """Every rank's op outputs, and the inputs an op read that differ from their producers' outputs."""

    values: list[Values]
    read_inputs: dict[tuple[int, str], dict[tuple[str, int], Any]] = field(default_factory=dict)
    fault: tuple[int, str] | None = None  # (rank, op) of the planted fault


def _check(op: NpuOp, outputs: list[Any]) -> list[Any]:
    import numpy as np

    if len(outputs) != len(op.outputs):
        raise AssertionError(f"{op.name}: kernel gave {len(outputs)} outputs, graph says {len(op.outputs)}")
    checked = []
    for slot, (array, spec) in enumerate(zip(outputs, op.outputs)):
        array = np.asarray(array)
        if array.dtype != np.dtype(spec.dtype) or tuple(array.shape) != tuple(spec.shape):
            raise AssertionError(f"{op.name}:{slot} is {array.dtype}{list(array.shape)}, graph says "
                                 f"{spec.dtype}{list(spec.shape)}")
        checked.append(array)
    return checked


def simulate_ranks(graph: NpuGraph, rank_feeds: list[dict[str, Any]], *, planted: bool = True) -> RankRun:
    """All ranks' outputs, op by op in execution order (`rank_feeds[r]`: rank r's Data inputs and the
    variables' starting values by op name). `planted`: corrupt the fault's all-reduce input."""
    import numpy as np

    count = len(rank_feeds)
    fault = ranks.planted_rank_fault(count) if planted else None
    run = RankRun([{} for _ in range(count)], fault=fault)
    producer_of = {op.name: op for op in graph.ops}
    with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for op in graph.ops:
            if op.type == ranks.ALLREDUCE_TYPE:
                ref = op.inputs[0]
                read = [values[ref] for values in run.values]
                if fault is not None and op.name == fault[1]:
                    spec = producer_of[ref[0]].outputs[ref[1]]
                    read[fault[0]] = ranks.corrupt(read[fault[0]], spec.origin_format, spec.layout,
                                                   ranks.fault_factor(count))
                    run.read_inputs[(fault[0], op.name)] = {ref: read[fault[0]]}
                (total,) = _check(op, [ranks.float16_sum(read)])
                for values in run.values:
                    values[(op.name, 0)] = total
                continue
            for rank, values in enumerate(run.values):
                if op.kind in ("data", "variable"):
                    outputs = [np.asarray(rank_feeds[rank][op.name], dtype=op.outputs[0].dtype)]
                elif op.kind == "const":
                    outputs = [np.asarray(op.params["value"])]
                else:
                    outputs = KERNELS[op.type](op, [values[ref] for ref in op.inputs], OPTIONS)
                for slot, array in enumerate(_check(op, outputs)):
                    values[(op.name, slot)] = array
    return run


def _real_div(op: NpuOp, ins: list[Any], options: sim_kernels.SimOptions) -> list[Any]:
    return [(ins[0] / ins[1]).astype(op.outputs[0].dtype)]


KERNELS = {**sim_kernels.KERNELS, ranks.MEAN_TYPE: _real_div}


def ge_model(graph: NpuGraph) -> Any:
    """The Build graph (run_files', the fixed bn2 kernel), its HCCL ops as GE writes them: the reduction,
    group and fusion attributes, the HCCL kernel library, no TBE kernel."""
    from precision_tool.formats.ge import ge_graph as ge

    model = run_files.ge_model(graph, kernel_names=FIXED_KERNEL)
    params = {op.name: op.params for op in graph.ops}
    for op in model.graphs[0].ops:
        if op.type != ranks.ALLREDUCE_TYPE:
            continue
        op.attrs.pop(f"{op.name}_kernelname", None)
        op.attrs["_ge_attr_op_kernel_lib_name"] = ge.attr_str(ranks.HCCL_KERNEL_LIB)
        for key, value in {**ranks.HCCL_ATTRS, **params[op.name]}.items():
            op.attrs[key] = ge.attr_str(value) if isinstance(value, str) else ge.attr_int(value)
    return model


@dataclass(frozen=True)
class RankSideReport:
    ranks: int
    ops: int
    allreduces: int
    dump_files: int
    seconds: float

    def __str__(self) -> str:
        return (f"NPU side: {self.ranks} ranks, {self.ops} ops ({self.allreduces} {ranks.ALLREDUCE_TYPE}), "
                f"{self.dump_files} dump files per rank, {self.seconds:.1f} s")


def write_rank_side(workspace: Workspace, graph: NpuGraph, rank_feeds: list[dict[str, Any]]) -> RankSideReport:
    """Simulate every rank and write the Build graph, each rank's dumps and fusion_result.json."""
    from precision_tool.formats.ge.ge_graph import write_graph_text

    started = time.perf_counter()
    run = simulate_ranks(graph, rank_feeds)
    write_graph_text(ge_model(graph), workspace.graph_dir(0) / run_files.GRAPH_FILE_NAME)
    now = time.time()
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
    start_us = int(now * 1_000_000)
    count = 0
    for rank, values in enumerate(run.values):
        # dump/<time>/<device = rank>/<model name>/<model id>/<iteration>/
        folder = workspace.dump_root(0) / stamp / str(rank) / graph.name / "1" / "0"
        tasks = run_files.task_table(graph, start_us + 11 * rank)  # the ranks run side by side
        count = len(tasks)
        for op in graph.ops:
            if op.has_task:
                read = run.read_inputs.get((rank, op.name))
                run_files.write_op_dump(folder, op, graph, {**values, **read} if read else values, tasks[op.name])
    run_files.write_fusion_file(workspace.fusion_file, graph)
    allreduces = sum(op.type == ranks.ALLREDUCE_TYPE for op in graph.ops)
    return RankSideReport(len(rank_feeds), len(graph.ops), allreduces, count, time.perf_counter() - started)
