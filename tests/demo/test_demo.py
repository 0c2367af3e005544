"""The demo workspace end to end: `demo DIR` builds it and runs `ac -c`; its files read back through the
project's readers; the reference msaccucmp agrees with our CSV on it; the planted fault is found."""

from __future__ import annotations

import csv
import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precision_tool.formats.ge.ge_graph import load_graph, write_graph_json, write_graph_text
from precision_tool.formats.npu.layouts import from_device, to_device
from precision_tool.formats.npu.npu_dump import parse_dump_name, read_dump_header, read_tensor, sanitize_op_name
from precision_tool.formats.npu.opdebug import parse_opdebug_payload
from precision_tool.workspace import Workspace, walk_files

pytestmark = [pytest.mark.tf, pytest.mark.slow]

PLANTED = "bn2/FusedBatchNormV3"
THRESHOLD = 0.98


def _build_graph(root: Path, debug_id: int = 0) -> tuple[Path, Any, Any]:
    (path,) = Workspace(root).build_graph_files(debug_id)
    model = load_graph(path)
    (graph,) = model.graphs
    return path, model, graph


def _dumps_by_op(root: Path, debug_id: int = 0) -> dict[str, Path]:
    folder = Workspace(root).newest_dump_dir(debug_id)
    found: dict[str, Path] = {}
    for path in walk_files(folder):
        name = parse_dump_name(path.name)
        assert name is not None, path
        assert name.op_name not in found, f"two dumps for {name.op_name}"
        found[name.op_name] = path
    return found


def _our_csv(root: Path) -> list[dict[str, str]]:
    folder = Workspace(root).newest_result_dir()
    (path,) = [p for p in folder.glob("result_*.csv") if "npu_vs_npu" not in p.name]
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _cos(text: str) -> float:
    return float("nan") if text in ("NaN", "") else float(text)


# --- the command and what it prints ------------------------------------------------------------------
def test_demo_prints_planted_op_first_then_overflow_and_open_command(demo_run) -> None:
    assert demo_run.status == 0, demo_run.out[-3000:] + demo_run.err[-3000:]
    out = demo_run.out
    firsts = re.findall(r"first divergent op: \[\d+\] (\S+)", out)
    assert firsts, out
    assert firsts[0] == PLANTED  # NPU vs golden
    assert all(sanitize_op_name(f) == sanitize_op_name(PLANTED) for f in firsts)  # and NPU vs NPU
    assert "gradients_fc2_MatMul_grad_MatMul_1" in out and "overflow" in out
    assert "AABiasaddConvFusion" in out and "MatMulBiasAddFusionPass" in out
    lines = out.strip().splitlines()
    answer = next(i for i, line in enumerate(lines) if line.startswith("answer ─"))
    # the demo's own lines (the open command last), then ac's answer block, the report's path last
    assert lines[answer - 1] == f"  precision-tool --data {demo_run.root}" or \
        lines[answer - 1].endswith(f"--data {demo_run.root}"), lines[answer - 3:answer + 1]
    assert lines[answer + 1].startswith(f"first divergent op: [16] {PLANTED} (BatchNorm)")
    assert lines[-2] == "report (one HTML file, opens offline):" and lines[-1].endswith("/report.html")


def test_demo_records_both_sides_run_config_and_ac_finds_no_difference(demo_run) -> None:
    """The golden step and the simulated NPU runs record what decided their numbers (tf/ and npu/debug_N/
    run_config.json); one process computed both, so `ac` (run by the demo) has no run-config table."""
    root = demo_run.root
    golden = json.loads((root / "tf" / "run_config.json").read_text())
    assert golden["side"] == "golden" and golden["seeds"]["seed"] == 2022 and golden["dropout"] == []
    for debug_id in (0, 1):
        npu = json.loads((root / "npu" / f"debug_{debug_id}" / "run_config.json").read_text())
        assert npu["side"] == "npu" and npu["simulated"] is True
        assert npu["npu_options"]["precision_mode"] == "allow_mix_precision"
    assert "run config:" not in demo_run.out


def test_demo_refuses_an_existing_workspace_without_force(demo_workspace, cli) -> None:
    before = sorted(p.name for p in walk_files(demo_workspace))
    result = cli("demo", str(demo_workspace), "--no-check")
    assert result.status == 1
    assert str(demo_workspace) in result.out and "--force" in result.out
    assert "Traceback" not in result.out + result.err
    assert sorted(p.name for p in walk_files(demo_workspace)) == before  # nothing touched


def test_demo_help_lists_every_option(cli) -> None:
    result = cli("demo", "-h")
    assert result.status == 0
    for option in ("--no-check", "--force", "DIR", "./precision_data_demo"):
        assert option in result.out


# --- the planted fault -----------------------------------------------------------------------------
def test_error_is_born_at_the_planted_op(demo_workspace) -> None:
    rows = _our_csv(demo_workspace)
    by_op: dict[str, list[dict[str, str]]] = {}
    order: list[str] = []
    for row in rows:
        op = row["TensorIndex"].rsplit(":", 2)[0] if ":" in row["TensorIndex"] else row["NPUDump"]
        if op not in by_op:
            order.append(op)
        by_op.setdefault(op, []).append(row)
    planted = by_op[PLANTED]
    outputs = {r["TensorIndex"]: _cos(r["CosineSimilarity"]) for r in planted if ":output:" in r["TensorIndex"]}
    inputs = [_cos(r["CosineSimilarity"]) for r in planted if ":input:" in r["TensorIndex"]]
    assert outputs[f"{PLANTED}:output:0"] < 0.9  # y is wrong
    assert all(v > 0.9999 for k, v in outputs.items() if not k.endswith(":0"))  # batch statistics are right
    assert inputs and all(v > 0.999 for v in inputs)
    # every op before it is fine (float16 rounding only), so this is where the error is born
    for op in order[: order.index(PLANTED)]:
        for row in by_op[op]:
            value = _cos(row["CosineSimilarity"])
            assert math.isnan(value) or value > 0.999, (op, row["TensorIndex"], value)
    # and it propagates: the loss and the first gradients inherit it
    later = {r["TensorIndex"]: _cos(r["CosineSimilarity"]) for op in order[order.index(PLANTED) + 1:]
             for r in by_op[op]}
    assert later["loss/xent:output:1"] < THRESHOLD


# --- the reference tool agrees ------------------------------------------------------------------------
@pytest.mark.reference
def test_reference_msaccucmp_agrees_with_our_csv(demo_workspace, reference_tool, tmp_path) -> None:
    _path, model, _graph = _build_graph(demo_workspace)
    graph_json = tmp_path / "graph.json"
    write_graph_json(model, graph_json)
    ws = Workspace(demo_workspace)
    dump_dir = next(p.parent for p in walk_files(ws.newest_dump_dir(0)))
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([str(reference_tool), "compare", "-m", str(dump_dir), "-g", str(ws.golden_dir),
                           "-f", str(graph_json), "-out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 2), proc.stdout[-2000:] + proc.stderr[-2000:]  # 2: Data ops have no dump
    (ref_csv,) = out.glob("result_*.csv")
    with open(ref_csv, newline="") as handle:
        reference = {row["TensorIndex"]: row for row in csv.DictReader(handle)}
    ours = {row["TensorIndex"]: row for row in _our_csv(demo_workspace)}
    assert set(ours) == set(reference)
    agreed = 0
    for key, row in ours.items():
        mine, theirs = row["CosineSimilarity"], reference[key]["CosineSimilarity"]
        assert mine == theirs, (key, mine, theirs)  # incl. conv1's small FRACTAL_Z weights [3,3,3,16]
        assert row["MaxAbsoluteError"] == reference[key]["MaxAbsoluteError"], key
        agreed += mine != "NaN"
    assert agreed >= 150
    assert reference[f"{PLANTED}:output:0"]["CosineSimilarity"] == ours[f"{PLANTED}:output:0"]["CosineSimilarity"]


# --- files read back through our readers ---------------------------------------------------------------
def test_build_graph_round_trips_through_text_and_json(demo_workspace, tmp_path) -> None:
    path, model, graph = _build_graph(demo_workspace)
    assert path.name == "ge_proto_00000001_graph_1_Build.txt"
    write_graph_text(model, tmp_path / "again.txt")
    assert load_graph(tmp_path / "again.txt").graphs == model.graphs
    write_graph_json(model, tmp_path / "again.json")
    again = load_graph(tmp_path / "again.json").graphs[0]
    assert [(o.name, o.type, o.id, o.inputs) for o in again.ops] == [(o.name, o.type, o.id, o.inputs) for o in graph.ops]
    assert [o.id for o in graph.ops] == list(range(len(graph.ops)))  # ids in execution order
    fused = graph.op("conv1/Conv2D")
    assert fused.original_op_names == ["conv1/Conv2D", "conv1/BiasAdd", "conv1/Relu"]
    assert fused.fusion_pass == "AABiasaddConvFusion"
    assert fused.output_descs[0].origin_name == "conv1/Relu" and fused.output_descs[0].origin_output_index == 0
    assert fused.output_descs[0].layout == "NC1HWC0" and fused.output_descs[0].origin_format == "NHWC"
    assert fused.input_descs[1].layout == "FRACTAL_Z" and fused.input_descs[1].origin_format == "HWCN"
    types = {o.type for o in graph.ops}
    assert {"Cast", "TransData", "Data", "Variable", "MatMulV2", "BatchNorm"} <= types
    assert {o.output_descs[0].dtype for o in graph.ops if o.type == "Cast"} == {"DT_FLOAT16", "DT_FLOAT"}


def test_graph_edges_are_consistent_and_trans_ops_change_one_thing(demo_workspace) -> None:
    """What a compiler guarantees: each input desc is its producer's output desc; a Cast changes only
    the dtype, a TransData only the layout (and so the device shape)."""
    _path, _model, graph = _build_graph(demo_workspace)
    for op in graph.ops:
        for position, (producer, slot) in enumerate(op.data_inputs):
            source = graph.op(producer).output_descs[slot]
            target = op.input_descs[position]
            assert (target.dtype, target.layout, target.shape, target.origin_shape) == \
                (source.dtype, source.layout, source.shape, source.origin_shape), (producer, op.name)
        if op.type in ("Cast", "TransData"):
            (source,) = op.input_descs
            (result,) = op.output_descs
            assert result.origin_shape == source.origin_shape and result.origin_format == source.origin_format
            assert (result.dtype != source.dtype) == (op.type == "Cast")
            assert (result.layout != source.layout) == (op.type == "TransData")


def test_every_task_has_one_dump_matching_the_graph(demo_workspace) -> None:
    _path, _model, graph = _build_graph(demo_workspace)
    dumps = _dumps_by_op(demo_workspace)
    task_ops = [o for o in graph.ops if o.type not in ("Data", "Variable", "Const")]
    assert sorted(sanitize_op_name(o.name) for o in task_ops) == sorted(dumps)
    for op in task_ops:
        dump = read_dump_header(dumps[sanitize_op_name(op.name)])
        assert dump.op_name == op.name
        assert len(dump.inputs) == len(op.input_descs) and len(dump.outputs) == len(op.output_descs)
        for tensor, desc in zip(dump.inputs + dump.outputs, op.input_descs + op.output_descs):
            assert tensor.shape == desc.shape, (op.name, tensor.label, tensor.shape, desc.shape)
            assert tensor.original_shape == desc.origin_shape
            assert tensor.numpy_dtype == {"DT_FLOAT16": np.float16, "DT_FLOAT": np.float32}[desc.dtype]
        for tensor, desc in zip(dump.outputs, op.output_descs):
            assert tensor.origin_name == desc.origin_name


def test_dumped_edges_agree_and_layouts_round_trip(demo_workspace) -> None:
    """A tensor is dumped twice (producer output, consumer input): both copies are identical, and the
    device layout converts back to the origin layout and again to the same device bytes."""
    _path, _model, graph = _build_graph(demo_workspace)
    dumps = {name: read_dump_header(path) for name, path in _dumps_by_op(demo_workspace).items()}
    checked = 0
    for op in graph.ops:
        consumer = dumps.get(sanitize_op_name(op.name))
        if consumer is None:
            continue
        for position, (producer_name, slot) in enumerate(op.data_inputs):
            producer = dumps.get(sanitize_op_name(producer_name))
            if producer is None:
                continue
            left = read_tensor(consumer, consumer.inputs[position])
            right = read_tensor(producer, producer.outputs[slot])
            np.testing.assert_array_equal(left, right, err_msg=f"{producer_name}:{slot} → {op.name}")
            desc = op.input_descs[position]
            if desc.layout in ("NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ"):
                logical = from_device(left, desc.layout, desc.origin_format, desc.origin_shape,
                                      original_format=desc.origin_format if desc.layout != "FRACTAL_NZ" else None)
                assert logical.shape == desc.origin_shape
                np.testing.assert_array_equal(to_device(logical, desc.origin_format, desc.layout), left)
            checked += 1
    assert checked > 60


def test_npu_values_are_computed_in_float16_not_golden_plus_noise(demo_workspace) -> None:
    """conv1's NPU output is exactly fp16(conv in fp32 of its fp16 input dumps) + bias, relu: what the
    device computes from its own inputs; and it differs from the fp32 golden only by fp16 rounding."""
    import tensorflow as tf

    _path, _model, graph = _build_graph(demo_workspace)
    dump = read_dump_header(_dumps_by_op(demo_workspace)["conv1_Conv2D"])
    op = graph.op("conv1/Conv2D")
    x = from_device(read_tensor(dump, dump.inputs[0]), "NC1HWC0", "NHWC", op.input_descs[0].origin_shape)
    w = from_device(read_tensor(dump, dump.inputs[1]), "FRACTAL_Z", "HWCN", op.input_descs[1].origin_shape,
                    original_format="HWCN")
    b = read_tensor(dump, dump.inputs[2])
    y = from_device(read_tensor(dump, dump.outputs[0]), "NC1HWC0", "NHWC", op.output_descs[0].origin_shape)
    expected = tf.nn.conv2d(x.astype(np.float32), w.astype(np.float32), 1, "SAME").numpy().astype(np.float16)
    expected = np.maximum(expected + b, np.float16(0))
    np.testing.assert_array_equal(y, expected)
    golden = np.load(next(Workspace(demo_workspace).golden_dir.glob("conv1_Relu.0.*.npy")))
    assert golden.dtype == np.float32 and not np.array_equal(golden.astype(np.float16), y)
    assert np.abs(golden - y.astype(np.float32)).max() < 0.02


# --- overflow, fusion, debug_1 ----------------------------------------------------------------------------
def test_overflow_record_points_at_an_op_that_really_overflows(demo_workspace) -> None:
    folder = Workspace(demo_workspace).newest_overflow_dir()
    files = list(walk_files(folder))
    (opdebug,) = [p for p in files if p.name.startswith("Opdebug.")]
    header = read_dump_header(opdebug)
    payload = read_tensor(header, header.outputs[0]).tobytes()
    assert len(payload) == 2048
    (record,) = parse_opdebug_payload(payload, opdebug)
    assert record.status & 0x100
    (op_dump,) = [p for p in files if p is not opdebug and parse_dump_name(p.name).task_id == record.task_id]
    dump = read_dump_header(op_dump)
    assert dump.op_name == "gradients/fc2/MatMul_grad/MatMul_1"
    assert all(np.isfinite(read_tensor(dump, t)).all() for t in dump.inputs)
    out = read_tensor(dump, dump.outputs[0])
    assert out.dtype == np.float16 and np.isinf(out).any()


def test_fusion_result_lists_the_passes_of_the_graph(demo_workspace) -> None:
    data = json.loads(Workspace(demo_workspace).fusion_file.read_text())
    _path, _model, graph = _build_graph(demo_workspace)
    used = {o.attrs.get("pass_name") for o in graph.ops} | {o.attrs.get("pass_name_ub") for o in graph.ops}
    listed = set(data["graph_fusion"]) | set(data["ub_fusion"])
    assert used - {None} <= listed
    for table in (data["graph_fusion"], data["ub_fusion"]):
        for counts in table.values():
            assert counts["effect_times"].isdigit() and counts["match_times"].isdigit()
    assert data["graph_fusion"]["ConvBatchnormFusionPass"] == {"effect_times": "0", "match_times": "1"}


def test_debug_1_differs_from_debug_0_in_one_op(demo_workspace) -> None:
    _p0, _m0, graph0 = _build_graph(demo_workspace, 0)
    _p1, _m1, graph1 = _build_graph(demo_workspace, 1)
    changed = [a.name for a, b in zip(graph0.ops, graph1.ops) if a != b]
    assert changed == [PLANTED]  # only its kernel differs
    first, second = _dumps_by_op(demo_workspace, 0), _dumps_by_op(demo_workspace, 1)
    first_different = None
    for op in graph0.ops:
        key = sanitize_op_name(op.name)
        if key not in first:
            continue
        a, b = read_dump_header(first[key]), read_dump_header(second[key])
        if any(not np.array_equal(read_tensor(a, x), read_tensor(b, y)) for x, y in zip(a.outputs, b.outputs)):
            first_different = op.name
            break
    assert first_different == PLANTED


def test_demo_in_a_folder_that_cannot_be_created_is_one_line(cli, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = cli("demo", str(blocker / "sub"))
    assert result.status == 1
    assert result.out.strip().splitlines() == [
        f"cannot write the demo folder {blocker / 'sub'}: Not a directory; give a folder you can write: `demo DIR`"]


def test_demo_builds_in_the_data_folder_when_that_is_new(tmp_path) -> None:
    """`precision-tool --data DIR demo` builds in DIR when DIR is new or empty (the --data warning says so);
    a workspace that holds anything is never the default target."""
    from .conftest import run_demo_cli

    target = tmp_path / "new_ws"
    built = run_demo_cli("--data", str(target), "demo", "--no-check", cwd=tmp_path)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (target / "npu" / "debug_0" / "graph").is_dir()
    assert not (tmp_path / "precision_data_demo").exists()
    again = run_demo_cli("--data", str(target), "demo", "--no-check", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (tmp_path / "precision_data_demo" / "npu").is_dir()  # the default, not the full DIR
