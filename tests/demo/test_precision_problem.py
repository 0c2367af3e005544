"""The demo's second, float16 problem: the static loss scale makes the NPU's float16 weight gradient of
fc2 overflow (inf in debug_0 and debug_1, named by the overflow run)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.results import read_result_csv, summarize
from precision_tool.formats.ge_graph import load_graph
from precision_tool.formats.npu_dump import parse_dump_name, read_dump_header, read_tensor, sanitize_op_name
from precision_tool.workspace import Workspace, walk_files

OVERFLOW_OP = "gradients/fc2/MatMul_grad/MatMul_1"
PLANTED = "bn2/FusedBatchNormV3"
FLOAT16_MAX = 65504


def _graph(root: Path, debug_id: int):  # type: ignore[no-untyped-def]
    (path,) = Workspace(root).build_graph_files(debug_id)
    return load_graph(path).graphs[0]


def _dumps(root: Path, debug_id: int) -> dict[str, Path]:
    return {parse_dump_name(p.name).op_name: p for p in walk_files(Workspace(root).newest_dump_dir(debug_id))}


def _first_with_inf(root: Path, debug_id: int) -> tuple[str, int]:
    """The first op (execution order) whose output holds a non-finite value, and how many it holds."""
    dumps = _dumps(root, debug_id)
    for op in _graph(root, debug_id).ops:
        path = dumps.get(sanitize_op_name(op.name))
        if path is None:
            continue
        dump = read_dump_header(path)
        for tensor in dump.outputs:
            bad = int((~np.isfinite(read_tensor(dump, tensor).astype(np.float32))).sum())
            if bad:
                return op.name, bad
    raise AssertionError("no output holds inf")


# --- the overflow, in the run and in the comparison ---------------------------------------------------
@pytest.mark.tf
@pytest.mark.slow
def test_the_float32_gradient_exceeds_float16_and_overflows_first_with_either_kernel(demo_workspace) -> None:
    golden = np.load(next(Workspace(demo_workspace).golden_dir.glob("gradients_fc2_MatMul_grad_MatMul_1.0.*.npy")))
    assert golden.dtype == np.float32 and np.abs(golden).max() > 2 * FLOAT16_MAX  # loss scale 2^17
    for debug_id in (0, 1):  # the faulty and the fixed bn2 kernel
        op, bad = _first_with_inf(demo_workspace, debug_id)
        assert op == OVERFLOW_OP and bad > 0, (debug_id, op)
        (graph_op,) = [o for o in _graph(demo_workspace, debug_id).ops if o.name == OVERFLOW_OP]
        assert graph_op.type == "MatMulV2" and graph_op.output_descs[0].dtype == "DT_FLOAT16"


@pytest.mark.tf
@pytest.mark.slow
def test_debug_0_vs_golden_shows_the_overflow_as_abnormal_inf_data(demo_workspace) -> None:
    folder = Workspace(demo_workspace).newest_result_dir()
    (path,) = [p for p in folder.glob("result_*.csv") if "npu_vs_npu" not in p.name]
    with open(path, newline="") as handle:
        header, *lines = list(csv.reader(handle))
    by_index = {line[header.index("TensorIndex")]: line for line in lines}
    rows = {key: dict(zip(header, line)) for key, line in by_index.items()}
    assert by_index[f"{OVERFLOW_OP}:output:0"][header.index("DataType")] == "float16"  # the NPU's (first) DataType
    out = rows[f"{OVERFLOW_OP}:output:0"]
    assert out["MaxAbsoluteError"] == "inf" and out["CosineSimilarity"] == "nan"
    assert all(rows[f"{OVERFLOW_OP}:input:{n}"]["MaxAbsoluteError"] not in ("inf", "nan") for n in (0, 1))
    summary = summarize(read_result_csv(path), 0.98)
    abnormal = {op.npu_op: op for op in summary.abnormal_ops}
    assert OVERFLOW_OP in abnormal and abnormal[OVERFLOW_OP].nan_data_outputs
    assert summary.first_divergent_op.npu_op == PLANTED and summary.first_divergent_op.index == "16"
    # the unscaled gradient inherits the inf (1/2^17 does not bring it back)
    assert rows["loss_scale/unscale_fc2_kernel:output:0"]["MaxAbsoluteError"] == "inf"


@pytest.mark.tf
@pytest.mark.slow
def test_the_overflow_run_is_debug_0s_step_with_detection_on(demo_workspace) -> None:
    folder = Workspace(demo_workspace).newest_overflow_dir()
    files = list(walk_files(folder))
    dumps = [p for p in files if not p.name.startswith("Opdebug.")]
    assert [parse_dump_name(p.name).op_name for p in dumps] == ["gradients_fc2_MatMul_grad_MatMul_1"]
    assert len(files) == 2  # its dump and one Opdebug record
    seen = read_dump_header(dumps[0])
    same = read_dump_header(_dumps(demo_workspace, 0)["gradients_fc2_MatMul_grad_MatMul_1"])
    for a, b in zip(seen.inputs + seen.outputs, same.inputs + same.outputs):
        np.testing.assert_array_equal(read_tensor(seen, a), read_tensor(same, b))


@pytest.mark.tf
@pytest.mark.slow
def test_loss_scale_ops_are_float32_and_the_kernel_gradient_stays_hwcn(demo_workspace) -> None:
    graph = _graph(demo_workspace, 0)
    scale = graph.op("loss_scale/mul")
    assert scale.type == "Mul" and scale.output_descs[0].dtype == "DT_FLOAT"
    unscale = [op for op in graph.ops if op.name.startswith("loss_scale/unscale_")]
    assert len(unscale) == 9  # one per variable
    for op in unscale:
        assert [d.dtype for d in op.input_descs + op.output_descs] == ["DT_FLOAT"] * 3
        apply = next(o for o in graph.ops if o.type == "ApplyGradientDescent" and op.name + ":0" in o.inputs)
        assert apply.input_descs[2].layout == op.output_descs[0].layout  # no TransData between them
    kernel = graph.op("loss_scale/unscale_conv1_kernel").output_descs[0]
    assert (kernel.layout, kernel.origin_format, kernel.origin_shape) == ("HWCN", "HWCN", (3, 3, 3, 16))
