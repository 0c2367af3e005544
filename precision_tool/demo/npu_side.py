"""The small demo's NPU side: its planted kernel fault and the runs it writes.

- npu/debug_0: the step with the planted fault (`PLANTED_FAULT`: bn2's BatchNorm kernel reads beta one
  channel late); npu/debug_1: the same step after the vendor fixed that kernel (the Build graphs differ in
  that op's kernel name only); overflow/: debug_0's step with overflow detection on;
  fusion/fusion_result.json;
- npu/debug_2 (`demo --fixed`, `write_fixed_run`): the step with the block list's op types kept in
  float32 and the fixed kernel.
The float16 overflow is not planted: the network's static loss scale makes it happen (PRECISION_PROBLEM).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from precision_tool.simulate.kernels import Fault, SimOptions, simulate
from precision_tool.simulate.mix_precision import WHITE, MixPolicy
from precision_tool.simulate.npu_graph import NpuGraph
from precision_tool.simulate.run_files import OverflowFinding, find_overflows, write_fusion_file, \
    write_overflow_run, write_run
from precision_tool.workspace import Workspace

PLANTED_FAULT_OP = "bn2/FusedBatchNormV3"
PLANTED_FAULT = ("the NPU BatchNorm kernel of bn2/FusedBatchNormV3 reads its offset (beta) vector one "
                 "channel late: channel c gets beta[c-1] (channel 0 gets the last one)")
PRECISION_PROBLEM = ("not planted, it happens by itself: with the network's static loss scale of 2^17, fc2's "
                     "weight gradient gradients/fc2/MatMul_grad/MatMul_1 (MatMulV2) exceeds float16's 65504 and its "
                     "float16 result overflows to inf")
# The small demo's compile, as it was built before the simulation learned CANN's lists (docs/demo.md):
# cube and vector ops in float16; the loss, the loss scale, the gradients' unscaling and the update in
# float32. (CANN 8.1's list would also keep BiasAddGrad in float32.)
DEMO_POLICY = MixPolicy(white=WHITE, black=frozenset({"Mul", "RealDiv", "SoftmaxCrossEntropyWithLogits",
                                                      "ReduceMeanD", "ApplyGradientDescent"}),
                        source="the small demo's own lists (loss, loss scale, unscaling and update in float32)")
FAULTY_KERNEL = {PLANTED_FAULT_OP: "te_batchnorm_v1_9c1e"}
FIXED_KERNEL = {PLANTED_FAULT_OP: "te_batchnorm_v2_4a7d"}


def _beta_one_channel_late(ins: list[Any]) -> list[Any]:
    import numpy as np

    x, scale, offset = ins
    return [x, scale, np.roll(offset, 1)]  # THE PLANTED FAULT: channel c reads beta[c-1]


BN_OFFSET_FAULT = Fault(PLANTED_FAULT_OP, PLANTED_FAULT, inputs=_beta_one_channel_late)


# `demo --npu-start`: what the NPU runs start from, to see the same-step check fail (docs/commands.md, `ac`)
NPU_STARTS = {
    "same": "the golden run's weights and batch",
    "other-weights": "other weights (as if the checkpoint were not loaded: the randomly initialised variables "
                     "drawn again with seed 1234; the all-zeros ones stay as they are)",
    "other-data": "another input batch (as if the NPU were fed another batch of the data set)",
}


def npu_start_feeds(feeds: dict[str, Any], start: str) -> dict[str, Any]:
    """The NPU side's feeds for `demo --npu-start`: the golden ones, or other weights, or another batch."""
    import numpy as np

    if start == "same":
        return feeds
    rng = np.random.default_rng(1234)
    changed = dict(feeds)
    if start == "other-data":
        images = np.asarray(feeds["input"])
        changed["input"] = rng.standard_normal(images.shape).astype(images.dtype)
        return changed
    if start != "other-weights":
        raise ValueError(f"unknown NPU start {start!r}; one of {', '.join(NPU_STARTS)}")
    for name, value in feeds.items():
        value = np.asarray(value)
        if name in ("input", "labels") or not value.size or float(value.std()) == 0.0:
            continue  # a constant initialiser (zeros) gives the same values whatever the seed
        changed[name] = rng.normal(float(value.mean()), float(value.std()), value.shape).astype(value.dtype)
    return changed


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


def record_npu_run(workspace: Workspace, debug_id: int, dropout: list[Any] | None,
                   modify_mixlist: str | None = None) -> None:
    """npu/debug_N/run_config.json of a demo run: what a real NPU run of the demo would record — the
    demo's precision_mode, the data dump on, the block list it kept in float32 — in this process, whose
    seeds, versions and environment are the golden side's (so `ac` finds no difference to show)."""
    from precision_tool.capture.records import run_config_record

    options: dict[str, Any] = {"precision_mode": DEMO_POLICY.mode, "enable_dump": True, "dump_mode": "all"}
    if modify_mixlist is not None:
        options["modify_mixlist"] = modify_mixlist
    run_config_record.write(workspace, run_config_record.build(
        "npu", "demo (simulated NPU side)", npu_options=options, dropout=dropout, simulated=True), debug_id)


def write_npu_side(workspace: Workspace, graph: NpuGraph, feeds: dict[str, Any],
                   dropout: list[Any] | None = None) -> NpuSideReport:
    """debug_0 (planted fault), debug_1 (kernel fixed), the overflow run, and fusion_result.json;
    `dropout`: the golden graph's dropout rates, for the runs' records."""
    started = time.perf_counter()
    now = time.time()
    stamps = [time.strftime("%Y%m%d%H%M%S", time.localtime(now + k)) for k in range(3)]
    start_us = int(now * 1_000_000)
    faulty = simulate(graph, feeds, SimOptions(faults=(BN_OFFSET_FAULT,)))
    count = write_run(workspace, 0, graph, faulty, stamp=stamps[0], start_us=start_us, kernel_names=FAULTY_KERNEL)
    fixed = simulate(graph, feeds, SimOptions())
    write_run(workspace, 1, graph, fixed, stamp=stamps[1], start_us=start_us + 1_000_000, kernel_names=FIXED_KERNEL)
    # debug_0's step again with overflow detection on: the same values, so the same ops overflow
    overflows = write_overflow_run(workspace.overflow_root, graph, faulty, stamp=stamps[2],
                                   start_us=start_us + 2_000_000)
    write_fusion_file(workspace.fusion_file, graph)
    for debug_id in (0, 1):
        record_npu_run(workspace, debug_id, dropout)
    return NpuSideReport(len(graph.ops), count, tuple(overflows), time.perf_counter() - started)


FIXED_DEBUG_ID = 2


def write_fixed_run(workspace: Workspace, graph: NpuGraph, feeds: dict[str, Any],
                    ops_info: str | None = None) -> NpuSideReport:
    """npu/debug_2: the step of `graph` (derived with the block list's op types kept in float32) with the
    vendor's fixed kernel; an earlier debug_2 is replaced. `ops_info`: the block list, for its record."""
    import shutil

    started = time.perf_counter()
    target = workspace.debug_dir(FIXED_DEBUG_ID)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    now = time.time()
    values = simulate(graph, feeds, SimOptions())
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
    count = write_run(workspace, FIXED_DEBUG_ID, graph, values, stamp=stamp, start_us=int(now * 1_000_000),
                      kernel_names=FIXED_KERNEL)
    overflows = tuple(find_overflows(graph, values))
    record_npu_run(workspace, FIXED_DEBUG_ID, None, ops_info)
    return NpuSideReport(len(graph.ops), count, overflows, time.perf_counter() - started)
