"""msaccucmp's optional CSV columns: OverFlow (-overflow_detection) and OpSequence (-r / -s), written
where msaccucmp writes them and checked against its own CSVs on a real compiled model with dumps made
by Ascend's proto; `vcs` reads both (from either tool) and `vcs --overflow` lists the YES ops."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis.compare.conftest import read_rows
from tests.tools import real_dumps

# msaccucmp refuses the input name "onnx::Gather_1764_0:0" (two colons); the row is NaN both ways
KNOWN_REASON_ROW = "PartitionedCall_Gather_1221_gatherv2_3:input:1"


def _both(tmp_path: Path, pb2, reference_tool: Path, cli, options: list[str], overflow: bool = False):  # type: ignore[no-untyped-def]
    import subprocess

    case = real_dumps.om_model_case(pb2, tmp_path / "precision_data", overflow=overflow)
    out = tmp_path / "ref"
    out.mkdir()
    subprocess.run([str(reference_tool), "compare", "-m", str(case.dump_dir), "-g", str(case.golden_dir), "-f",
                    str(case.graph_json), "-out", str(out), *options], capture_output=True, timeout=600)
    ref_csv = next(out.glob("result_*.csv"))
    result = cli("vc", "--backend", "native", "-j", "1", "-lt", str(case.dump_dir), "-rt", str(case.golden_dir),
                 "-g", str(case.graph), *options, data=case.root)
    assert result.status == 0, result.out + result.err
    ours = next((case.root / "temp" / "vector_compare").glob("*/result_*.csv"))
    return case, ref_csv, read_rows(ref_csv), ours, read_rows(ours), result


def _differing_cells(ref: list[list[str]], ours: list[list[str]]) -> dict[str, list[tuple[str, str, str]]]:
    assert ref[0] == ours[0] and len(ref) == len(ours)
    tensor = ref[0].index("TensorIndex")
    out = {}
    for left, right in zip(ref[1:], ours[1:]):
        cells = [(ref[0][i], a, b) for i, (a, b) in enumerate(zip(left, right)) if a != b]
        if cells:
            out[left[tensor]] = cells
    return out


@pytest.mark.reference
def test_overflow_column_where_msaccucmp_writes_it_and_yes_for_nan(tmp_path: Path, pb2, reference_tool: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """inf and 65504 are YES in both; a NaN in an fp16 tensor is YES here and NO in msaccucmp (it looks at
    the maximum, which NaN hides); int and fp32 tensors are NaN; rows without a tensor are NaN."""
    _, ref_csv, ref, _, ours, result = _both(tmp_path, pb2, reference_tool, cli, ["-overflow_detection"],
                                             overflow=True)
    header = ours[0]
    assert header[header.index("Shape") + 1] == "OverFlow" and "OpSequence" not in header
    differing = _differing_cells(ref, ours)
    assert [c[0] for c in differing.pop(KNOWN_REASON_ROW)] == ["CompareFailReason"]
    assert differing == {
        "PartitionedCall_Gather_1221_gatherv2_3:output:0": [("OverFlow", "NO", "YES")],
        "trans_Cast_7:input:0": [("OverFlow", "NO", "YES")],
    }
    column = header.index("OverFlow")
    by_tensor = {row[header.index("TensorIndex")]: row[column] for row in ours[1:]}
    assert by_tensor["trans_Cast_0:output:0"] == "YES"  # inf
    assert by_tensor["Concat_1211:output:0"] == "YES"  # 65504
    assert by_tensor["trans_Cast_0:input:0"] == "NaN"  # fp32
    assert by_tensor["BatchMultiClassNMS_1203:output:3"] == "NaN"  # int32
    assert by_tensor["trans_Cast_2:output:0"] == "NO"
    assert {row[column] for row in ours[1:] if row[header.index("TensorIndex")] == "NaN"} == {"NaN"}
    assert "OverFlow YES in 11 op(s)" not in result.out  # ops, not tensors, are counted
    assert "OverFlow YES in" in result.out
    # vcs reads msaccucmp's CSV by header name, and lists its YES ops
    shown = cli("vcs", "-f", str(ref_csv), "--overflow", "-l", "20")
    assert shown.status == 0, shown.err
    assert "trans_Cast_0" in shown.out and "Concat_1211" in shown.out
    assert "trans_Cast_7" not in shown.out.split("OverFlow YES in")[1]  # msaccucmp's NO for the NaN


@pytest.mark.reference
@pytest.mark.parametrize("options", [["-r", "5,14,3"], ["-s", "1,3,13,99"], ["-overflow_detection", "-r", ",-1,4"]])
def test_op_sequence_and_selection_as_msaccucmp(tmp_path: Path, pb2, reference_tool: Path, cli, options) -> None:  # type: ignore[no-untyped-def]
    _, ref_csv, ref, _, ours, result = _both(tmp_path, pb2, reference_tool, cli, options)
    assert ours[0][1] == "OpSequence"
    differing = _differing_cells(ref, ours)
    differing.pop(KNOWN_REASON_ROW, None)
    assert differing == {}
    assert 2 < len(ours) < 40
    if "-s" in options:
        assert "ids [99] are past the graph's last op id 18" in result.out
    shown = cli("vcs", "-f", str(ref_csv))
    assert shown.status == 0 and " outputs: " in shown.out


def test_opdebug_records_make_the_op_outputs_yes(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The demo workspace's Opdebug record names gradients/fc2/MatMul_grad/MatMul_1: its output rows are YES
    although the dumped values stay below 65504; its inputs keep the data's verdict."""
    root = tmp_path / "pd"
    assert cli("demo", str(root)).status == 0
    result = cli("vc", "--backend", "native", "-overflow_detection", data=root)
    assert result.status == 0, result.out + result.err
    newest = sorted(p for p in (root / "temp" / "vector_compare").iterdir() if p.is_dir())[-1]
    golden_csv = next(p for p in newest.glob("result_*.csv") if "npu_vs_npu" not in p.name)
    rows = read_rows(golden_csv)
    header = rows[0]
    cells = {r[header.index("TensorIndex")]: r[header.index("OverFlow")] for r in rows[1:]}
    assert cells["gradients/fc2/MatMul_grad/MatMul_1:output:0"] == "YES"
    assert cells["gradients/fc2/MatMul_grad/MatMul_1:input:0"] == "NO"
    assert "[48] gradients/fc2/MatMul_grad/MatMul_1 (MatMulV2): out0" in result.out
    shown = cli("vcs", "--overflow", data=root)
    assert shown.status == 0 and "gradients/fc2/MatMul_grad/MatMul_1" in shown.out


def test_column_options_refuse_clearly(tmp_path: Path, make_net, cli) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    both = cli("vc", "-r", "1,-1,1", "-s", "3", data=net.root)
    assert both.status == 1 and "-s/--select and -r/--range do not go together" in both.out + both.err
    for bad, says in ((["-r", "a,2,1"], "'a' is not a number"), (["-r", "1,2"], "give START,END,STEP"),
                      (["-r", "0,-1,1"], "START 0 is outside"), (["-s", "x"], "'x' is not an op id"),
                      (["-s", "999"], "past the graph's last op id")):
        result = cli("vc", "--backend", "native", *bad, data=net.root)
        assert result.status == 1, (bad, result.out, result.err)
        assert says in result.out + result.err and "Traceback" not in result.err
    import shutil

    outside = tmp_path / "copied_dump"  # not a workspace dump: no Build graph is found for it
    shutil.copytree(net.dump_dir, outside)
    by_name = cli("vc", "--backend", "native", "-lt", str(outside), "-rt", str(net.golden_dir), "-r", "1,-1,1",
                  data=net.root)
    assert by_name.status != 0 and "-g GRAPH" in by_name.out + by_name.err
    cann = cli("vc", "--backend", "cann", "-overflow_detection", data=net.root,
               env={"PRECISION_TOOL_CONFIG": str(tmp_path / "none.py")})
    assert cann.status != 0 and "Traceback" not in cann.err
    plain = cli("vc", "--backend", "native", data=net.root)
    assert plain.status == 0
    no_column = cli("vcs", "--overflow", data=net.root)
    assert no_column.status == 1 and "has no OverFlow column" in no_column.out + no_column.err


@pytest.mark.reference
def test_overflow_column_npu_vs_npu_as_msaccucmp(tmp_path: Path, pb2, reference_tool: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Two NPU runs of the real om model (one overflowing): the same header and rows as msaccucmp's
    NPU-vs-NPU CSV, except the two fp16 tensors holding NaN (YES here, NO there)."""
    import subprocess

    left = real_dumps.om_model_case(pb2, tmp_path / "a" / "precision_data", overflow=True)
    right = real_dumps.om_model_case(pb2, tmp_path / "b" / "precision_data")
    out = tmp_path / "ref"
    out.mkdir()
    subprocess.run([str(reference_tool), "compare", "-m", str(left.dump_dir), "-g", str(right.dump_dir), "-out",
                    str(out), "-overflow_detection"], capture_output=True, timeout=600)
    ref = read_rows(next(out.glob("result_*.csv")))
    result = cli("vc", "--backend", "native", "-j", "1", "-lt", str(left.dump_dir), "-rt", str(right.dump_dir),
                 "-overflow_detection", data=left.root)
    assert result.status == 0, result.out + result.err
    ours = read_rows(next((left.root / "temp" / "vector_compare").glob("*/result_*.csv")))
    assert ours[0].count("Address") == 2 and ours[0][ours[0].index("Shape") + 1] == "OverFlow"
    assert len(ref) == len(ours) == 34
    differing = _differing_cells(ref, ours)
    assert set(differing) == {"PartitionedCall_Gather_1221_gatherv2_3:output:0", "trans_Cast_7:input:0"}
    assert all(cells == [("OverFlow", "NO", "YES")] for cells in differing.values())
