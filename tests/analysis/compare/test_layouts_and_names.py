"""Fixes found by comparing with msaccucmp: `cp` on device layouts, SGT/lxslice dump names, fusion-group
keys, dump iterations, empty tensors, NPU-vs-NPU rows, quant ops, NaN outputs in summaries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.compare import network_compare as nc
from precision_tool.errors import UsageError


def _write_dump(folder: Path, name: str, outputs, inputs=(), op_type: str = "Relu", ts: int = 1) -> Path:  # type: ignore[no-untyped-def]
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import write_dump

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / dump_file_name(op_type, name, 1, 0, ts)
    write_dump(path, op_name=name, inputs=list(inputs), outputs=list(outputs), dump_time_us=ts)
    return path


# --- 1. cp converts device layouts to the host layout -----------------------------------------------
@pytest.mark.parametrize(("host", "device", "shape", "wanted"), [
    ("NCHW", "NC1HWC0", (1, 40, 4, 4), "NCHW"),
    ("NHWC", "NC1HWC0", (2, 5, 6, 20), "NHWC"),
    ("NCHW", "FRACTAL_Z", (20, 5, 3, 3), "NCHW"),
    ("HWCN", "FRACTAL_Z", (3, 3, 5, 20), "HWCN"),
    ("ND", "FRACTAL_NZ", (3, 2, 20, 40), "ND"),
    ("NCDHW", "NDC1HWC0", (1, 20, 3, 4, 5), "NCDHW"),
])
def test_cp_converts_a_device_layout_dump_to_the_golden_layout(
    tmp_path: Path, host: str, device: str, shape: tuple[int, ...], wanted: str, cli  # type: ignore[no-untyped-def]
) -> None:
    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    rng = np.random.default_rng(1)
    value = rng.standard_normal(shape).astype(np.float16)
    dump = _write_dump(tmp_path / "d", "op/x", [TensorSpec(to_device(value, host, device), Format[device], shape)])
    golden = tmp_path / "golden.npy"
    np.save(golden, value.astype(np.float32))
    report = nc.compare_pair(f"{dump}:output:0", str(golden))
    assert report.allclose and report.metrics.values[0] == "1.000000"
    assert report.left_shape == shape
    assert len(report.conversions) == 1 and f"converted to {wanted} {list(shape)}".replace(" ", "") in \
        report.conversions[0].replace(" ", "")
    shown = cli("cp", f"{dump}:output:0", str(golden), data=tmp_path)
    assert shown.status == 0 and f"{device}" in shown.out and f"converted to {wanted}" in shown.out


def test_cp_refuses_when_converted_shapes_differ(tmp_path: Path) -> None:
    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    value = np.ones((1, 16, 4, 4), np.float16)
    dump = _write_dump(tmp_path / "d", "op/x", [TensorSpec(to_device(value, "NCHW", "NC1HWC0"), Format.NC1HWC0,
                                                           (1, 16, 4, 4))])
    golden = tmp_path / "golden.npy"
    np.save(golden, np.ones((1, 4, 4, 8), np.float32))  # fewer elements
    with pytest.raises(UsageError, match=r"golden.npy is \[1,4,4,8\] \(128 elements\) but .* is \[1,16,4,4\] "
                                         r"\(256 elements, from NC1HWC0\)"):
        nc.compare_pair(str(golden), f"{dump}:output:0")
    np.save(golden, np.ones((4, 64), np.float32))  # same element count, but not a layout of it
    with pytest.raises(UsageError, match=r"is \[1,16,4,4\] \(256 elements, from NC1HWC0\) but golden.npy is "
                                         r"\[4,64\] \(256 elements\); they cannot be compared element by element"):
        nc.compare_pair(f"{dump}:output:0", str(golden))


def _noisy(rng, array: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    return (array + rng.standard_normal(array.shape).astype(np.float32) * 1e-2).astype(np.float32)


# --- 2. FFTS+ names: `_lxslice<k>` and `..._sgt_graph_<n>_` --------------------------------------------
def test_sgt_and_lxslice_dump_names_match_their_graph_ops_like_msaccucmp(
    make_case, reference_tool: Path  # type: ignore[no-untyped-def]
) -> None:
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    rng = np.random.default_rng(3)
    case = make()
    for name, op_type, field in (("sgt/Add", "Add", "partition0_rank1_new_sub_graph1_sgt_graph_0_sgt/Add"),
                                 ("lx/Mul", "Mul", "lx/Mul_lxslice0"), ("plain/Relu", "Relu", "plain/Relu")):
        value = rng.standard_normal(32).astype(np.float32)
        case.golden(name, 0, value)
        case.op(name, op_type, outputs=[nd_desc((32,))], original=[name])
        case.dump(op_type, field, [], [TensorSpec(_noisy(rng, value))])
    ours = case.run_ours()
    assert ours == case.run_reference(reference_tool)
    assert [row[7] for row in ours[1:]] == ["sgt/Add:output:0", "lx/Mul:output:0", "plain/Relu:output:0"]


def test_dump_op_key_rules() -> None:
    from precision_tool.analysis.compare.matching import dump_op_key

    assert dump_op_key("a_b_lxslice3", with_graph=True) == "a_b"
    assert dump_op_key("a_lxslice1_b", with_graph=True) == "a_b"
    assert dump_op_key("a_lxslice1_b", with_graph=False) is None  # not at the end: not an op's dump
    assert dump_op_key("a_b_lxslice12", with_graph=False) == "a_b"
    assert dump_op_key("p0_sgt_graph_3_conv_Relu", with_graph=False) == "conv_Relu"
    assert dump_op_key("p0_sgt_graph_3", with_graph=False) == "p0_sgt_graph_3"


def test_npu_vs_npu_matches_sgt_and_lxslice_names(make_case) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.analysis.compare import network_compare as nc
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, _, _, read_rows = make_case
    case = make()
    right = case.root / "right"
    right.mkdir()
    value = np.arange(16, dtype=np.float32)
    case.dump("Add", "p0_sgt_graph_0_net/Add", [], [TensorSpec(value)])
    case.dump("Add", "net/Add", [], [TensorSpec(value)], folder=right)
    case.dump("Mul", "net/Mul_lxslice1", [], [TensorSpec(value)])
    case.dump("Mul", "net/Mul", [], [TensorSpec(value)], folder=right)
    nc.run_specs([nc.RunSpec("n", str(case.dump_dir), "r.csv", right_dir=str(right))], case.root, workers=1,
                 threshold=0.98)
    rows = read_rows(case.root / "r.csv")
    assert sorted(r[8] for r in rows[1:]) == ["net_Add:output:0", "net_Mul:output:0"]
    assert all(r[10] == "1.000000" for r in rows[1:])


# --- 3. fusion-group keys share one namespace --------------------------------------------------------
def test_fusion_groups_are_keyed_like_msaccucmp(make_case, reference_tool: Path) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    rng = np.random.default_rng(6)
    case = make()

    def simple(name: str, golden: str | None, original, **extra) -> None:  # type: ignore[no-untyped-def]
        value = rng.standard_normal(16).astype(np.float32)
        if golden:
            case.golden(golden, 0, value)
        case.op(name, "Relu", [], [nd_desc((16,))], original=original, **extra)
        case.dump("Relu", name, [], [TensorSpec(_noisy(rng, value))])

    simple("a/op", "a/orig", ["a/orig"], _L1_fusion_sub_graph_no=7)  # L1 group of one: no golden
    simple("b/op1", "b/op1", [""])
    simple("b/op2", "b/op2", [""])
    simple("cx", "cx", None)  # no attribute ...
    simple("cy", None, ["cx"])  # ... and an op whose original name is cx: one group
    ours = case.run_ours()
    assert ours == case.run_reference(reference_tool)
    assert [row[2] for row in ours[-2:]] == ["cx,cy", "cx,cy"] and ours[-1][0] == ours[-2][0]


# --- 4. one dump iteration per run -------------------------------------------------------------------
def _two_iterations(make_case, debug_1: bool = False):  # type: ignore[no-untyped-def]
    """debug_0 dumped at iterations 0 and 5 (5 is the negated data); optionally debug_1 the same."""
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    case = make()
    rng = np.random.default_rng(4)
    model = case.dump_dir.parent.parent
    for k in range(3):
        name = f"net/op{k}"
        value = rng.standard_normal(64).astype(np.float32)
        case.golden(name, 0, value)
        case.op(name, "Relu", [], [nd_desc((64,))], original=[name])
        runs = [model] + ([case.data / "npu" / "debug_1" / "dump" / "20240102000000" / "0" / model.name]
                          if debug_1 else [])
        for root in runs:
            for iteration in (0, 5):
                folder = root / "1" / str(iteration)
                folder.mkdir(parents=True, exist_ok=True)
                case.dump("Relu", name, [], [TensorSpec(value if iteration == 0 else -value)], folder=folder)
    case.write_graph()
    return case


def test_vc_compares_one_iteration_and_says_others_exist(make_case, cli) -> None:  # type: ignore[no-untyped-def]
    case = _two_iterations(make_case)
    first = cli("vc", data=case.data)
    assert first.status == 0, first.out + first.err
    assert "iterations 0, 5: comparing iteration 0 only" in first.out + first.err
    assert "3 ops (0 abnormal) · 3 outputs: 3 compared, 0 abnormal" in first.out  # not 6 mixed from two iterations
    fifth = cli("vc", "--step", "5", data=case.data)
    assert fifth.status == 0 and "3 ops (3 abnormal) · 3 outputs: 3 compared, 3 abnormal" in fifth.out
    missing = cli("vc", "--step", "7", data=case.data)
    assert missing.status == 1 and "no dump iteration 7" in missing.out + missing.err


def test_debug_1_is_compared_at_one_common_iteration(make_case) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.config import Settings
    from precision_tool.workspace import Workspace

    case = _two_iterations(make_case, debug_1=True)
    notes: list[str] = []
    specs = nc.workspace_specs(Workspace(case.data), "s", notes, None)
    assert [s.step for s in specs] == [0, 0] and specs[1].npu_vs_npu
    assert any("comparing iteration 0 only" in n for n in notes)
    runs = nc.compare_workspace(Workspace(case.data), Settings(), step=5)
    npu = next(r for r in runs if r.spec.npu_vs_npu)
    assert npu.summary.tensors_compared == 3 and npu.summary.min_output_cosine == pytest.approx(1.0)
    golden = next(r for r in runs if not r.spec.npu_vs_npu)
    assert golden.summary.tensors_compared == 3 and golden.summary.min_output_cosine == pytest.approx(-1.0)


# --- 5. empty tensors ----------------------------------------------------------------------------------
def test_empty_tensors_rows_equal_msaccucmp(make_case, reference_tool: Path) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    case = make()
    for name, shape, dtype in (("empty/Op", (2, 0), np.float32), ("empty2/Op", (3, 0, 4), np.float32),
                               ("empty3/Op", (0, 5), np.float16)):
        case.golden(name, 0, np.zeros(shape, np.float32))
        case.op(name, "Slice", outputs=[nd_desc(shape, "DT_FLOAT16" if dtype == np.float16 else "DT_FLOAT")],
                original=[name])
        case.dump("Slice", name, [], [TensorSpec(np.zeros(shape, dtype))])
    ours = case.run_ours()
    assert ours == case.run_reference(reference_tool)
    assert ours[1][8] == "[2,0]" and ours[1][9] == "1.000000" and ours[2][9] == "1.0"


# --- 6. NPU vs NPU rows --------------------------------------------------------------------------------
def test_npu_vs_npu_csv_equals_msaccucmp(make_case, reference_tool: Path) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, _, _, read_rows = make_case
    case = make()
    right = case.root / "right"
    right.mkdir()
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 16, 4, 4)).astype(np.float32)
    for side, folder in ((0, case.dump_dir), (1, right)):
        y = _noisy(rng, x) if side else x
        case.clock = 1704067200000000
        case.dump("SplitD", "sp/Split", [], [TensorSpec(y, Format.NCHW), TensorSpec(y * 2, Format.NCHW)],
                  folder=folder)
        case.dump("TransData", "td1", [TensorSpec(y, Format.NCHW)],
                  [TensorSpec(to_device(y, "NCHW", "NC1HWC0"), Format.NC1HWC0, (1, 16, 4, 4), address=64 + side)],
                  folder=folder)
        if not side:  # not dumped by the other run
            case.dump("Cast", "cast1", [TensorSpec(y)], [TensorSpec(y.astype(np.float16))], folder=folder)
        else:
            case.clock += 10
        case.dump("Relu", "end/Relu", [TensorSpec(y.reshape(16, 16))], [TensorSpec(np.maximum(y, 0).reshape(-1))],
                  folder=folder)
    out = case.root / "ref"
    out.mkdir()
    subprocess.run([str(reference_tool), "compare", "-m", str(case.dump_dir), "-g", str(right), "-out", str(out)],
                   capture_output=True, text=True, timeout=600)
    reference = read_rows(sorted(out.glob("result_*.csv"))[-1])
    nc.run_specs([nc.RunSpec("n", str(case.dump_dir), "r.csv", right_dir=str(right))], case.root, workers=1,
                 threshold=0.98)
    ours = read_rows(case.root / "r.csv")
    assert len(ours) == len(reference)
    for mine, theirs in zip(ours, reference):
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs):  # equal, or within compare.md's summation-order tolerance
            assert a == b or abs(float(a) - float(b)) <= max(1e-5, 1e-4 * abs(float(b))), (mine, theirs)
    missing = [row for row in ours if row[2] == "cast1"]
    assert len(missing) == 1 and missing[0][1] == "NaN" and missing[0][8] == "NaN"
    assert [row[9] for row in ours if row[8] == "td1:output:0"] == ["[1,1,4,4,16]"]


# --- 7. quantize / dequantize ops ----------------------------------------------------------------------
def test_quant_outputs_and_dequant_inputs_are_skipped_like_msaccucmp(
    make_case, reference_tool: Path  # type: ignore[no-untyped-def]
) -> None:
    from precision_tool.analysis.compare.graph_plan import plan_graph_compare
    from precision_tool.analysis.compare.matching import index_dumps
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    rng = np.random.default_rng(12)
    case = make()
    x = rng.standard_normal(32).astype(np.float32)
    q = rng.integers(-100, 100, 32).astype(np.int8)
    case.golden("in", 0, x)
    case.op("in", "Data", outputs=[nd_desc((32,))])
    case.golden("q/AscendQuant", 0, q)
    case.op("q/AscendQuant", "AscendQuant", ["in:0"], [nd_desc((32,), "DT_INT8")], original=["q/AscendQuant"])
    case.dump("AscendQuant", "q/AscendQuant", [TensorSpec(_noisy(rng, x))], [TensorSpec(q)])
    case.golden("q/AscendQuant2", 0, q)
    case.op("q/AscendQuant2", "AscendQuant", [], [nd_desc((32,), "DT_INT8")], original=["q/AscendQuant2"])
    case.dump("AscendQuant", "q/AscendQuant2", [], [TensorSpec(q)])
    case.golden("d/AscendDequant", 0, x)
    case.op("d/AscendDequant", "AscendDequant", ["q/AscendQuant:0"], [nd_desc((32,), "DT_FLOAT16")],
            original=["d/AscendDequant"])
    case.dump("AscendDequant", "d/AscendDequant", [TensorSpec(q.astype(np.int32))],
              [TensorSpec(_noisy(rng, x).astype(np.float16))])
    ours = case.run_ours()
    assert ours == case.run_reference(reference_tool)
    assert [row[7] for row in ours[2:]] == ["q/AscendQuant:input:0", "NaN", "d/AscendDequant:output:0"]
    plan = plan_graph_compare(case.ops, index_dumps(case.dump_dir, with_graph=True))
    assert any("quantize" in w for w in plan.warnings)


# --- 8. NaN/Inf data never passes ----------------------------------------------------------------------
def test_nan_data_outputs_are_not_reported_as_passing(make_case, cli) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.analysis.results.results import read_result_csv, summarize
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    case = make()
    good = np.arange(1, 17, dtype=np.float32)
    case.golden("good/Op", 0, good)
    case.op("good/Op", "Relu", [], [nd_desc((16,))], original=["good/Op"])
    case.dump("Relu", "good/Op", [], [TensorSpec(good)])
    bad = good.copy()
    bad[3] = np.nan
    case.golden("nan/Op", 0, good)
    case.op("nan/Op", "Mul", ["good/Op:0"], [nd_desc((16,))], original=["nan/Op"])
    case.dump("Mul", "nan/Op", [TensorSpec(good)], [TensorSpec(bad)])
    case.run_ours()
    summary = summarize(read_result_csv(case.root / "ours" / "result.csv"))
    assert summary.nan_data_outputs == 1 and [op.npu_op for op in summary.abnormal_ops] == ["nan/Op"]
    assert summary.first_divergent_op is not None and summary.first_divergent_op.npu_op == "nan/Op"
    shown = cli("vcs", "-f", str(case.root / "ours" / "result.csv"), data=case.data)
    assert shown.status == 0
    assert "every compared output meets the threshold" not in shown.out
    assert "1 output(s) hold NaN/Inf data, so they have no cosine: counted as compared and abnormal" in shown.out
    assert "NaN/Inf data" in shown.out.split("first divergent op")[1]


def test_output_desc_without_attributes_is_paired_by_index_with_a_warning(make_case) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.analysis.compare.graph_plan import plan_graph_compare
    from precision_tool.analysis.compare.matching import index_dumps
    from precision_tool.formats.ge import ge_graph as g
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, read_rows = make_case
    case = make()
    outs = [np.full(8, k + 1, np.float32) for k in range(3)]
    for k, value in enumerate(outs):
        case.golden("multi/Split", k, value)
    case.op("multi/Split", "SplitV", [], [nd_desc((8,), _datadump_origin_name="multi/Split"),
                                          g.TensorDesc(dtype="DT_FLOAT", layout="ND", shape=(8,), attrs={}),
                                          nd_desc((8,), _datadump_origin_name="multi/Split",
                                                  _datadump_origin_output_index=2)], original=["multi/Split"])
    case.dump("SplitV", "multi/Split", [], [TensorSpec(v) for v in outs])
    plan = plan_graph_compare(case.ops, index_dumps(case.dump_dir, with_graph=True))
    assert any("output descs without attributes" in w and "multi/Split" in w for w in plan.warnings)
    rows = case.run_ours()
    assert [row[9] for row in rows[1:]] == ["1.000000"] * 3 and [row[11] for row in rows[1:]] == ["0.000000"] * 3
