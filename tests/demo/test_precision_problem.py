"""The demo's second, float16 problem and its fix: the static loss scale makes the NPU's float16 weight
gradient of fc2 overflow (inf in debug_0 and debug_1, named by the overflow run), and `demo --fixed`
with MatMulV2 on the block list re-runs the step into npu/debug_2, whose comparison with golden passes."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.results.results import read_result_csv, summarize
from precision_tool.errors import FormatError
from precision_tool.formats.ge.ge_graph import load_graph
from precision_tool.formats.npu.mixlist import read_mixlist
from precision_tool.formats.npu.npu_dump import parse_dump_name, read_dump_header, read_tensor, sanitize_op_name
from precision_tool.workspace import Workspace, walk_files

OVERFLOW_OP = "gradients/fc2/MatMul_grad/MatMul_1"
PLANTED = "bn2/FusedBatchNormV3"
FLOAT16_MAX = 65504
NO_OPS_INFO = ("run `ac -c` first: it writes fix/ops_info.json when a replay finds a float16 precision "
               "problem")


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


@pytest.mark.tf
@pytest.mark.slow
def test_the_demo_summary_names_both_problems_and_the_fix(demo_run) -> None:
    assert demo_run.status == 0, demo_run.out[-3000:]
    # what the demo holds is said before the checks run, what to do about it after them
    held = demo_run.out[demo_run.out.index("What it holds:"):demo_run.out.index("tf_dump ─")]
    assert "  planted fault: the NPU BatchNorm kernel of bn2/FusedBatchNormV3" in held
    assert f"  float16 problem: not planted, it happens by itself: with the network's static loss scale of 2^17, " \
           f"fc2's weight gradient {OVERFLOW_OP} (MatMulV2) exceeds float16's 65504" in held
    summary = demo_run.out[demo_run.out.rindex("Demo workspace ready in"):]
    # `ac -c`'s replay wrote fix/ops_info.json: the summary says how to apply it
    assert read_mixlist(demo_run.root / "fix" / "ops_info.json").kept_in_float32 == {"MatMulV2"}
    assert "Apply the fix (fix/ops_info.json: MatMulV2 in float32)" in summary
    assert f"demo --fixed {demo_run.root}" in summary


# --- demo --fixed ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fixed_run(demo_workspace, tmp_path_factory):  # type: ignore[no-untyped-def]
    """A copy of the demo with a hand-written fix/ops_info.json, then `demo --fixed` on it."""
    from tests.conftest import run_demo_cli

    root = tmp_path_factory.mktemp("fixed") / "ws"
    shutil.copytree(demo_workspace, root, symlinks=True)
    shutil.rmtree(root / "fix", ignore_errors=True)  # whatever `ac -c` wrote: this test writes its own
    (root / "fix").mkdir()
    (root / "fix" / "ops_info.json").write_text(json.dumps({"black-list": {"to-add": ["MatMulV2"]}}))
    golden_before = {p.relative_to(root): p.read_bytes() for p in walk_files(root / "tf")}
    proc = run_demo_cli("--data", str(root), "demo", "--fixed")
    return root, proc, golden_before


@pytest.mark.tf
@pytest.mark.slow
def test_demo_fixed_writes_debug_2_whose_comparison_passes(fixed_run) -> None:
    root, proc, golden_before = fixed_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "debug_2 vs golden: 0 op(s) abnormal" in proc.stdout
    assert "94 ops (0 abnormal) · 86 outputs: 77 compared, 0 abnormal, 9 not compared" in proc.stdout
    # the golden run was reused, not rewritten
    assert {p.relative_to(root): p.read_bytes() for p in walk_files(root / "tf")} == golden_before
    ws = Workspace(root)
    assert ws.debug_ids() == [0, 1, 2]
    graph = _graph(root, 2)
    matmuls = [op for op in graph.ops if op.type == "MatMulV2"]
    assert len(matmuls) == 6
    for op in matmuls:  # every MatMulV2 computes in float32
        assert {d.dtype for d in op.input_descs + op.output_descs} == {"DT_FLOAT"}, op.name
    # the rest is as it was, with the vendor's fixed kernel (debug_1's)
    assert {op.output_descs[0].dtype for op in graph.ops if op.type == "BatchNorm"} == {"DT_FLOAT16"}
    kernel = f"{PLANTED}_kernelname"
    assert graph.op(PLANTED).attrs[kernel] == _graph(root, 1).op(PLANTED).attrs[kernel]
    # no inf anywhere in debug_2; the weight gradient holds what float16 could not
    dumps = _dumps(root, 2)
    dump = read_dump_header(dumps["gradients_fc2_MatMul_grad_MatMul_1"])
    out = read_tensor(dump, dump.outputs[0])
    assert out.dtype == np.float32 and np.isfinite(out).all() and np.abs(out).max() > FLOAT16_MAX
    for path in dumps.values():
        header = read_dump_header(path)
        assert all(np.isfinite(read_tensor(header, t).astype(np.float32)).all() for t in header.outputs), path.name
    # the newest result is debug_2 against golden, with no abnormal op
    (csv_path,) = ws.newest_result_dir().glob("result_*.csv")
    summary = summarize(read_result_csv(csv_path), 0.98)
    assert summary.abnormal_ops == () and summary.first_divergent_op is None


@pytest.mark.tf
@pytest.mark.slow
def test_demo_fixed_again_replaces_debug_2(fixed_run) -> None:
    from tests.conftest import run_demo_cli

    root, first, _ = fixed_run
    assert first.returncode == 0
    before = sorted(p.name for p in walk_files(Workspace(root).debug_dir(2)))
    again = run_demo_cli("demo", "--fixed", str(root), "--no-check")
    assert again.returncode == 0, again.stdout + again.stderr
    after = sorted(p.name for p in walk_files(Workspace(root).debug_dir(2)))
    assert len(after) == len(before) and after != before  # one run, newly stamped
    assert len(list(Workspace(root).dump_root(2).iterdir())) == 1


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.slow
def test_every_float16_op_type_on_the_block_list_leaves_no_cast(demo_workspace, tmp_path) -> None:
    """keep_fp32 is not MatMulV2-only: with every op type the NPU runs in float16 on the block list, every
    kernel computes in float32, the graph needs no Cast at all, and nothing is abnormal."""
    from tests.conftest import run_demo_cli

    root = tmp_path / "ws"
    root.mkdir()
    for part in ("tf", "npu"):
        shutil.copytree(demo_workspace / part, root / part, symlinks=True)
    # the ops that compute in float16 (Cast, TransData and Reshape only carry their input's dtype)
    float16_types = sorted({op.type for op in _graph(root, 0).ops
                            if any(d.dtype == "DT_FLOAT16" for d in op.input_descs + op.output_descs)
                            and op.type not in ("Cast", "TransData", "Reshape")})
    assert {"Conv2D", "BatchNorm", "MatMulV2", "Conv2DBackpropFilterD", "MaxPoolGrad"} <= set(float16_types)
    (root / "fix").mkdir()
    (root / "fix" / "ops_info.json").write_text(json.dumps({"black-list": {"to-add": float16_types}}))
    proc = run_demo_cli("demo", "--fixed", str(root))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "debug_2 vs golden: 0 op(s) abnormal" in proc.stdout
    graph = _graph(root, 2)
    assert [op.name for op in graph.ops if op.type == "Cast"] == []
    assert {d.dtype for op in graph.ops for d in op.input_descs + op.output_descs} == {"DT_FLOAT"}


def test_demo_fixed_without_ops_info_is_one_line(demo_workspace, tmp_path) -> None:
    from tests.conftest import run_demo_cli

    root = tmp_path / "ws"
    root.mkdir()
    for part in ("tf", "npu"):
        shutil.copytree(demo_workspace / part, root / part, symlinks=True)
    proc = run_demo_cli("demo", "--fixed", str(root))
    assert proc.returncode == 1
    assert proc.stdout.strip().splitlines() == [
        f"demo --fixed: {root / 'fix' / 'ops_info.json'} does not exist; {NO_OPS_INFO}"]
    assert not Workspace(root).debug_dir(2).exists()
    (root / "fix").mkdir()
    (root / "fix" / "ops_info.json").write_text('{"black-list": ["MatMulV2"]}')
    bad = run_demo_cli("demo", "--fixed", str(root))
    assert bad.returncode == 1 and len(bad.stdout.strip().splitlines()) == 1, bad.stdout
    assert "'black-list' must be an object" in bad.stdout and "remove it and run `ac -c`" in bad.stdout
    assert "Traceback" not in bad.stdout + bad.stderr


def test_demo_fixed_on_a_folder_without_a_demo_is_one_line(tmp_path) -> None:
    from tests.conftest import run_demo_cli

    proc = run_demo_cli("demo", "--fixed", str(tmp_path))
    assert proc.returncode == 1
    (line,) = proc.stdout.strip().splitlines()
    assert line.startswith(f"demo --fixed: {tmp_path} holds no demo workspace (no golden tensors in ")
    assert line.endswith(f"build one with `demo {tmp_path}` first")
    assert list(tmp_path.iterdir()) == []


# --- the mixed-precision list file ----------------------------------------------------------------------
def test_mixlist_reads_the_block_list(tmp_path) -> None:
    path = tmp_path / "ops_info.json"
    path.write_text(json.dumps({"black-list": {"to-add": ["MatMulV2", "Conv2D"], "to-remove": ["Conv2D"]},
                                "white-list": {"to-add": ["Relu"]}}))
    mixlist = read_mixlist(path)
    assert mixlist.kept_in_float32 == frozenset({"MatMulV2"})
    assert mixlist.types("white-list") == ("Relu",) and mixlist.types("gray-list") == ()


@pytest.mark.parametrize("text, problem", [
    ("{", "not JSON"),
    ("[]", "not a mixed-precision list"),
    ('{"blacklist": {}}', "unknown key 'blacklist'"),
    ('{"black-list": {"add": []}}', "unknown key 'add' in 'black-list'"),
    ('{"black-list": {"to-add": "MatMulV2"}}', "black-list to-add must be an array of op type names"),
])
def test_mixlist_names_the_file_and_the_problem(tmp_path, text, problem) -> None:
    path = tmp_path / "ops_info.json"
    path.write_text(text)
    with pytest.raises(FormatError) as caught:
        read_mixlist(path)
    assert str(caught.value).startswith(f"{path}: ") and problem in str(caught.value)
