"""The rank demo (`demo --ranks N`): what it builds and where its one planted fault is.

An N-rank data-parallel version of the demo network: every rank trains the same weights on its own
batch (seed `DATA_SEED + rank`), the gradients are all-reduced between the backward pass and the weight
update, as npu_bridge's distributed optimizer does it: per trained variable one `HcomAllReduce`
(reduction "sum", group "hccl_world_group") of the gradient, then a `RealDiv` by the rank size, then
`ApplyGradientDescent`. The single demo's two problems (the bn2 kernel fault, the loss scale that makes a
float16 gradient overflow) are off here: the only divergence is the planted one.

The planted fault: on one rank (`faulty_rank(n)`, never 0) the input of fc1's kernel all-reduce is
corrupted as the collective reads it: a contiguous quarter of its device buffer (FRACTAL_NZ) reads 16
times too large (2N times from 9 ranks on; a stomped buffer). The producer's own output is intact. So on that rank the all-reduce's input
diverges from its golden, and on every rank its output (and all that follows) diverges, because the
collective spreads the error.

Layout written (the rank-aware `vc`/`ac` read exactly this):
- npu/debug_0/graph/ge_proto_00000001_graph_1_Build.txt: one Build graph, shared by every rank;
- npu/debug_0/dump/<stamp>/<rank>/<graph name>/1/0/<dump files>: rank = 0 .. N-1 (the device_id level);
- tf/tf_debug/rank_<r>/run_*: the golden tfdbg dump of each rank; `tf_dump` extracts each into
  tf/dump/rank_<r>/<tensor>.<slot>.<timestamp_us>.npy.

Plain data and numpy only: TensorFlow is imported by `rank_network` (the child process) alone.
"""

from __future__ import annotations

from typing import Any

MIN_RANKS = 2
MAX_RANKS = 64
DEFAULT_DIR = "./precision_data_demo_ranks"
RANK_DIR_PREFIX = "rank_"  # tf/tf_debug/rank_<r>, tf/dump/rank_<r>
ALLREDUCE_SCOPE = "allreduce"
ALLREDUCE_TYPE = "HcomAllReduce"
MEAN_TYPE = "RealDiv"
HCCL_GROUP = "hccl_world_group"
HCCL_ATTRS = {"reduction": "sum", "group": HCCL_GROUP, "fusion": 1, "fusion_id": -1}  # hccl_ops.allreduce's
HCCL_KERNEL_LIB = "ops_kernel_info_hccl"
# The variable whose gradient's all-reduce input is corrupted on the faulty rank (fc1's [384, 64] kernel,
# a float16 MatMulV2 gradient in FRACTAL_NZ).
FAULT_VARIABLE = "fc1/kernel"
FAULT_GRADIENT = "gradients/fc1/MatMul_grad/MatMul_1"
# Which part of the device buffer is hit, as fractions of its element count, and how much too large it
# reads (`fault_factor`: 16, more from 9 ranks on, so that the error still shows in the sum of 64 ranks).
FAULT_BLOCK = (0.25, 0.5)
FAULT_FACTOR = 16.0


def variable_key(variable: str) -> str:
    """'fc1/kernel' → 'fc1_kernel' (the all-reduce scope's name for it)."""
    return variable.replace("/", "_")


def allreduce_op_name(variable: str) -> str:
    """The all-reduce of a variable's gradient: the NPU HcomAllReduce op and its golden stand-in (an AddV2
    of the rank's own gradient and the other ranks' sum) carry this one name."""
    return f"{ALLREDUCE_SCOPE}/{variable_key(variable)}/{ALLREDUCE_TYPE}"


def others_placeholder_name(variable: str) -> str:
    """The golden graph's Placeholder that holds the sum of the other ranks' gradients."""
    return f"{ALLREDUCE_SCOPE}/{variable_key(variable)}/others"


def mean_op_name(variable: str) -> str:
    """The RealDiv of the all-reduced sum by the rank size (npu_bridge's `tf.div(summed, rank_size)`)."""
    return f"{ALLREDUCE_SCOPE}/{variable_key(variable)}/truediv"


def check_ranks(ranks: int) -> int:
    """`ranks` when it is a rank count the demo builds; ValueError (one line) otherwise."""
    if isinstance(ranks, bool) or not isinstance(ranks, int) or not MIN_RANKS <= ranks <= MAX_RANKS:
        raise ValueError(f"--ranks takes a number of ranks from {MIN_RANKS} to {MAX_RANKS}, not {ranks!r}")
    return ranks


def faulty_rank(ranks: int) -> int:
    """The rank with the planted fault: 3 from 4 ranks on, else the last one (never rank 0)."""
    check_ranks(ranks)
    return 3 if ranks >= 4 else ranks - 1


def planted_rank_fault(ranks: int) -> tuple[int, str]:
    """(rank, NPU op name) of the planted fault: the HcomAllReduce whose input is corrupted on that rank."""
    return faulty_rank(ranks), allreduce_op_name(FAULT_VARIABLE)


def planted_rank_fault_text(ranks: int) -> str:
    """One sentence naming the planted fault (the demo's summary prints it)."""
    rank, op = planted_rank_fault(ranks)
    start, stop = FAULT_BLOCK
    return (f"rank {rank}: the input of {op} ({ALLREDUCE_TYPE}) was corrupted: as the collective read it, "
            f"elements {start:.0%}-{stop:.0%} of its device buffer (the gradient {FAULT_GRADIENT}, "
            f"FRACTAL_NZ) read {fault_factor(ranks):g} times too large, while the gradient op's own output is intact; the all-reduce "
            f"spreads the error to every rank's sum and weight update")


def fault_factor(ranks: int) -> float:
    """How many times too large the corrupted block reads with `ranks` ranks: 16, or 2 x ranks beyond 8."""
    return max(FAULT_FACTOR, 2.0 * check_ranks(ranks))


def rank_dir_name(rank: int) -> str:
    return f"{RANK_DIR_PREFIX}{rank}"


def corrupt(array: Any, origin_format: str, layout: str, factor: float = FAULT_FACTOR) -> Any:
    """`array` (logical layout) with FAULT_BLOCK of its device buffer (`layout`) multiplied by `factor`
    (`fault_factor(ranks)`), back in the logical layout: what a stomped input buffer reads as."""
    import numpy as np

    from precision_tool.formats.npu.layouts import from_device, to_device

    device = to_device(array, origin_format, layout) if layout != origin_format else np.array(array)
    flat = device.reshape(-1).copy()
    start, stop = (int(round(f * flat.size)) for f in FAULT_BLOCK)
    flat[start:stop] = flat[start:stop] * flat.dtype.type(factor)
    device = flat.reshape(device.shape)
    if layout == origin_format:
        return device
    return np.ascontiguousarray(from_device(device, layout, origin_format, tuple(array.shape),
                                            original_format=origin_format))


def float16_sum(arrays: list[Any]) -> Any:
    """The collective's sum: added in rank order, rounded to the tensors' own dtype after each addition
    (float16 gradients sum in float16, as HCCL reduces them)."""
    import numpy as np

    total = np.array(arrays[0], copy=True)
    for other in arrays[1:]:
        total = (total + other).astype(total.dtype)
    return total
