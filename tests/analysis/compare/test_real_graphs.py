"""msaccucmp and `vc` on the real graphs of tests/fixtures/real, with dumps written by Ascend's own proto.

The dump bytes come from the class protoc generates from tests/tools/AclDumpMsg.proto (not from the
project's writer); the graphs are the real files as they are (msaccucmp gets a text graph as atc JSON,
as `vc --backend cann` hands it over). Both CSVs are compared cell by cell, numbers as the strings
written. The few rows where the reference gives no usable reason are listed with what each tool says.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.analysis.compare.conftest import read_rows
from tests.tools import real_dumps

pytestmark = pytest.mark.reference


def _run_both(case: real_dumps.RealCase, tmp_path: Path, reference_tool: Path, cli, reference_helpers):  # type: ignore[no-untyped-def]
    run_reference = reference_helpers[0]
    ref_csv = run_reference(reference_tool, case.dump_dir, case.golden_dir, case.graph_json, tmp_path / "ref")
    result = cli("vc", "--backend", "native", "-j", "1", "-lt", str(case.dump_dir), "-rt", str(case.golden_dir),
                 "-g", str(case.graph), data=case.root)
    assert result.status == 0, result.out + result.err
    ours = sorted((case.root / "temp" / "vector_compare").glob("*/result_*.csv"))
    assert len(ours) == 1
    return read_rows(ref_csv), read_rows(ours[0])


def _differences(ref: list[list[str]], ours: list[list[str]]) -> dict[str, tuple[list[str], list[str]]]:
    """TensorIndex (or op name) → (reference row, our row) for every row that differs."""
    assert len(ref) == len(ours)
    assert ref[0] == ours[0]
    out = {}
    for left, right in zip(ref[1:], ours[1:]):
        if left != right:
            out[left[7] if left[7] != "NaN" else left[2]] = (left, right)
    return out


def _only_reason_differs(pair: tuple[list[str], list[str]], ours_says: str) -> None:
    left, right = pair
    assert left[:-1] == right[:-1]
    assert ours_says in right[-1], right[-1]


def test_om_model_csv_agrees_row_for_row(tmp_path: Path, pb2, reference_tool: Path, cli, reference_helpers) -> None:  # type: ignore[no-untyped-def]
    """msit's compiled NMS model (atc JSON): the Transpose inputs are ND with origin_format NCHW (a 4-D
    NPU shape against a 3-D golden) and are compared as dumped, as msaccucmp does."""
    case = real_dumps.om_model_case(pb2, tmp_path / "precision_data")
    ref, ours = _run_both(case, tmp_path, reference_tool, cli, reference_helpers)
    assert len(ref) == 40
    by_index = {row[7]: row for row in ours[1:]}
    transposed = by_index["BatchMultiClassNMS_1203_Input0_TransposeBefore:input:0"]
    assert transposed[8] == "[1,1000,80,4]" and transposed[9] == "1.000000" and transposed[-1] == ""
    differing = _differences(ref, ours)
    # msaccucmp splits input names on every ':' and refuses "onnx::Gather_1764_0:0"; the row is NaN both
    # ways (no golden is named after that Const), ours says why in the project's words.
    assert set(differing) == {"PartitionedCall_Gather_1221_gatherv2_3:input:1"}
    left, right = differing["PartitionedCall_Gather_1221_gatherv2_3:input:1"]
    assert "It only supports op_name:index" in left[-1]
    _only_reason_differs((left, right), "There is no the ground truth dump file")
    assert sum(1 for row in ours[1:] if row[9] not in ("NaN", "")) == 20


@pytest.mark.parametrize("builder, rows", [("gather_case", 8), ("assign_case", 9), ("unique_case", 24)])
def test_ge_build_graphs_csv_identical(tmp_path: Path, pb2, reference_tool: Path, cli, reference_helpers,  # type: ignore[no-untyped-def]
                                       builder: str, rows: int) -> None:
    """hicann/oam-tools' Build graphs: GatherV2D labelled NHWC on 2-D/1-D shapes, a Variable Assign, and
    Unique + GatherV2 inside a partitioned call's sub-graph (four graphs in one file)."""
    case = getattr(real_dumps, builder)(pb2, tmp_path / "precision_data")
    ref, ours = _run_both(case, tmp_path, reference_tool, cli, reference_helpers)
    assert len(ref) == rows
    assert _differences(ref, ours) == {}
    assert any(row[9] not in ("NaN", "") for row in ours[1:])


def test_resnet50_graph_csv_agrees_row_for_row(tmp_path: Path, pb2, reference_tool: Path, cli, reference_helpers) -> None:  # type: ignore[no-untyped-def]
    """hicann/ge's ResNet-50 after UB fusion (399 ops): NC1HWC0, FRACTAL_Z, NC1HWC0_C04 and a 1-D NCHW
    bias [64], dumped for a sample of ops at the head and the tail; every other op is a no-dump row."""
    case = real_dumps.resnet_case(pb2, tmp_path / "precision_data")
    ref, ours = _run_both(case, tmp_path, reference_tool, cli, reference_helpers)
    assert len(ref) == 417
    by_index = {row[7]: row for row in ours[1:]}
    assert by_index["trans_Cast_2:output:0"][8] == "[64]" and by_index["trans_Cast_2:output:0"][9] == "1.000000"
    assert by_index["fc1000:input:1"][8] == "[1000,2048,1,1]"  # FRACTAL_Z (128,63,16,16), padding cut
    differing = _differences(ref, ours)
    # FRACTAL_Z_C04 weights: msaccucmp has no converter and leaves the row NaN with an empty reason
    assert set(differing) == {"trans_TransData_1:output:0", "conv1:input:1"}
    for pair in differing.values():
        assert pair[0][-1] == ""
        _only_reason_differs(pair, "FRACTAL_Z_C04")
    compared = sum(1 for row in ours[1:] if row[9] not in ("NaN", ""))
    assert compared == 23


def test_quantized_resnet50_agrees_on_every_row_msaccucmp_writes(tmp_path: Path, pb2, reference_tool: Path, cli,  # type: ignore[no-untyped-def]
                                                                 reference_helpers) -> None:
    """hicann/ge's quantized ResNet-50 (AscendQuant → int8 Conv2D → AscendDequant). msaccucmp's quant filter
    only closes a quantized stretch at a dequantize op with an fp16 output; this graph's dequantize ops
    output fp32, so msaccucmp silently drops every op after the first AscendQuant (174 rows). vc writes
    those rows (and warns that the graph is quantized); every row msaccucmp does write is identical, in
    the same order, inner nodes of multi-to-multi fusions included."""
    case = real_dumps.quant_case(pb2, tmp_path / "precision_data")
    ref, ours = _run_both(case, tmp_path, reference_tool, cli, reference_helpers)
    assert ref[0] == ours[0]
    key = lambda row: (row[0], row[2], row[7])  # noqa: E731
    ours_by_key = {key(row): row for row in ours[1:]}
    assert len(ref) - 1 == 281 and len(ours) - 1 == 455
    assert [ours_by_key[key(row)] for row in ref[1:]] == ref[1:]
    assert [key(r) for r in ours[1:] if key(r) in {key(x) for x in ref[1:]}] == [key(r) for r in ref[1:]]
    extra = [row for row in ours[1:] if key(row) not in {key(x) for x in ref[1:]}]
    assert len(extra) == 174 and extra[0][7] == "res2a_branch2a:input:0"
    inner = [row for row in ref[1:] if "inner node for multi to multi" in row[-1]]
    assert len(inner) == 21
    compared = [row for row in extra if row[9] not in ("NaN", "")]
    assert len(compared) == 8  # the sampled int8/int32 stretch: compared here, dropped by msaccucmp


def test_vc_reads_an_onnx_only_run_as_its_ge_proto_twin(tmp_path: Path, pb2, cli) -> None:  # type: ignore[no-untyped-def]
    """A run whose graph folder holds only GE's ONNX-style Build dump (ge_onnx_*_Build.pbtxt) is compared
    through it, by plain `vc` and with `-g`: the same rows as through its ge_proto twin (oam-tools run 370)."""
    onnx = real_dumps.REAL / "more" / "ge_onnx" / "oam_asys370_ge_onnx_00000001_graph_11_Build.pbtxt"
    case = real_dumps.unique_case(pb2, tmp_path / "precision_data")
    results = case.root / "temp" / "vector_compare"
    plain, whole = [], []
    for graph in (real_dumps.UNIQUE_GRAPH, onnx):
        for old in case.graph.parent.iterdir():
            old.unlink()
        copied = case.graph.parent / graph.name
        copied.write_bytes(graph.read_bytes())
        for rows, args in ((plain, ()), (whole, ("-lt", str(case.dump_dir), "-rt", str(case.golden_dir),
                                                 "-g", str(copied)))):
            result = cli("vc", "-j", "1", *args, data=case.root)
            assert result.status == 0, result.out + result.err
            rows.append(read_rows(next(results.glob("*/result_*.csv"))))
            shutil.rmtree(results)
    # the level-2 ONNX dump drops string-list attributes, so the NetOutput's empty original-names list (GroundTruth
    # `*` in the ge_proto dump) is absent there and the op's own name stands in; it has no dump either way
    for rows in (plain, whole):
        assert len(rows[0]) == len(rows[1]) > 1
        for a, b in zip(*rows):
            if a != b:
                assert a[2] == "Node_Output" and (a[5], b[5]) == ("*", "Node_Output") and a[:5] + a[6:] == b[:5] + b[6:]
    assert len(whole[0]) == 24  # as many as msaccucmp writes (test_ge_build_graphs_csv_identical)
    assert sum(1 for row in whole[1][1:] if row[9] not in ("NaN", "")) >= 4
