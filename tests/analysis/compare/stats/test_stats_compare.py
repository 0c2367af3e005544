"""Comparing statistics dumps with golden tensors (the functions `vc`, `vcs` and `ac` use)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from precision_tool.analysis.compare.stats_compare import (
    ERROR, PASS, STATS_RESULT_HEADER, WARNING, compare_statistics, compare_statistics_npu, filter_stats_rows,
    is_stats_result, judge, read_stats_result, stats_only, summarize_stats,
)
from precision_tool.errors import FormatError, WorkspaceError
from precision_tool.formats.npu.stats_dump import StatsRow, array_stats
from precision_tool.render.compare.stats import stats_summary, stats_table
from tests.analysis.compare.stats.stats_helpers import build_graph, stats_dir


def _row(**numbers) -> StatsRow:
    base = dict(kind="output", index=0, data_size=16, data_type="DT_FLOAT", layout="ND", shape=(4,), max=4.0,
                min=1.0, mean=2.5, count=4, nan_count=0, neg_inf_count=0, pos_inf_count=0)
    base.update(numbers)
    return StatsRow(**base)


GOLDEN = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)


@pytest.mark.parametrize("numbers, result, reason", [
    ({}, PASS, ""),
    ({"max": 4.001}, PASS, ""),  # 0.025%: float16 rounding
    ({"max": 4.2}, WARNING, "max 4.2, golden 4"),
    ({"mean": 6.0}, ERROR, "mean 6, golden 2.5"),
    ({"nan_count": 1, "mean": float("nan")}, ERROR, "NaN count 1, golden 0"),
    ({"pos_inf_count": 1, "max": float("inf"), "mean": float("inf")}, ERROR, "+Inf count 1, golden 0"),
    ({"count": 5}, ERROR, "5 elements, golden 4"),
])
def test_verdicts(numbers, result, reason):
    verdict = judge(_row(**numbers), array_stats(GOLDEN))
    assert verdict.result == result
    assert reason in "; ".join(verdict.reasons)


def test_nan_on_both_sides_is_no_difference():
    golden = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    npu = _row(count=3, max=3.0, min=1.0, mean=float("nan"), nan_count=1)
    assert judge(npu, array_stats(golden)).result == PASS


def test_a_mean_near_zero_is_judged_against_the_datas_scale():
    golden = np.array([-3.0, 3.0, 1e-6, 0.0], dtype=np.float32)
    npu = _row(max=3.0, min=-3.0, mean=5e-7)  # golden mean 2.5e-7: far apart relatively, nothing in scale
    assert judge(npu, array_stats(golden)).result == PASS


def test_stats_only(shared_stats_workspace):
    root = shared_stats_workspace
    assert stats_only(root / "npu" / "debug_0" / "dump")
    assert not stats_only(root / "tf")  # golden .npy only: no statistics CSV


def test_mixed_folder_is_not_stats_only(stats_workspace, cli):
    root = stats_workspace(mixed=True)
    assert not stats_only(root / "npu" / "debug_0" / "dump")
    # vc compares the tensors and says, once, which statistics CSVs it leaves
    stats_files = [p for p in (root / "npu" / "debug_0" / "dump").rglob("*.csv") if p.name != "mapping.csv"]
    result = cli("vc", data=root)
    assert result.status == 0, result.out + result.err
    assert result.out.count(f"{len(stats_files)} statistics CSV(s) beside the tensor dumps are not compared") == 1


def test_compare_through_the_graph_finds_the_op_a_tensor_compare_finds(shared_stats_workspace, demo_workspace,
                                                                     cli, tmp_path: Path):
    root = shared_stats_workspace
    out = tmp_path / "result" / "stats.csv"
    summary = compare_statistics(stats_dir(root), root / "tf" / "dump", build_graph(root), out)
    assert summary.csv_path == out and out.is_file()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp file left
    assert summary.total == summary.passed + summary.warnings + summary.errors + summary.no_golden
    assert summary.passed > 50 and summary.errors > 0 and summary.unreadable == 0
    # the demo's injected error: bn2's output; the tensor compare of the same run names the same op first
    first = summary.first_failing
    assert first is not None and first.tensor_index == "bn2/FusedBatchNormV3:output:0"
    assert first.result == WARNING and "max 4.50391, golden 4.61408" in first.reason
    tensor_vc = cli("vc", data=demo_workspace)
    assert tensor_vc.status == 0, tensor_vc.err
    assert "first divergent op: [16] bn2/FusedBatchNormV3" in tensor_vc.out
    assert first.index == 16
    # every row before it passes or has no golden
    rows = read_stats_result(out)
    before = [r for r in rows if r.index < first.index]
    assert before and all(r.result in (PASS, "no golden") for r in before)
    # a padded layout is compared with the golden's padding zeros counted, as the device counts them
    trans = next(r for r in rows if r.tensor_index == "trans_TransData_0:output:0")
    assert trans.result == PASS and trans.cells["Format"] == "NC1HWC0"
    assert "padding zeros of NC1HWC0" in trans.reason
    assert trans.cells["NPUCount"] == trans.cells["GoldenCount"] == "32768"


def test_result_csv_reads_back_and_filters(shared_stats_workspace, tmp_path: Path):
    root = shared_stats_workspace
    out = tmp_path / "r.csv"
    summary = compare_statistics(stats_dir(root), root / "tf" / "dump", build_graph(root), out)
    with open(out, newline="") as handle:
        header = next(csv.reader(handle))
    assert tuple(header) == STATS_RESULT_HEADER
    assert is_stats_result(out)
    rows = read_stats_result(out)
    again = summarize_stats(rows, out)
    assert (again.total, again.passed, again.warnings, again.errors) == \
        (summary.total, summary.passed, summary.warnings, summary.errors)
    errors = filter_stats_rows(rows, results=[ERROR])
    assert errors and all(r.result == ERROR for r in errors)
    named = filter_stats_rows(rows, name="fc1/matmul")
    assert named and all("fc1/MatMul" in r.npu_dump or "fc1/MatMul" in r.ground_truth for r in named)


def test_without_a_graph_outputs_are_matched_by_op_name(shared_stats_workspace, tmp_path: Path):
    root = shared_stats_workspace
    summary = compare_statistics(stats_dir(root), root / "tf" / "dump", None, tmp_path / "r.csv")
    rows = read_stats_result(tmp_path / "r.csv")
    pool = next(r for r in rows if r.tensor_index == "pool1_MaxPool:output:0")
    assert pool.result == PASS and pool.ground_truth == "pool1_MaxPool:output:0"
    assert summary.notes and "no graph" in summary.notes[0]


def test_an_unreadable_csv_is_a_row_naming_it_and_the_rest_is_compared(stats_workspace, tmp_path: Path):
    root = stats_workspace()
    bad = next(stats_dir(root).glob("MaxPool.pool1_MaxPool.*.csv"))
    bad.write_text("Input/Output,Index,Max Value\nInput,0,twelve\n")
    summary = compare_statistics(stats_dir(root), root / "tf" / "dump", build_graph(root), tmp_path / "r.csv")
    assert summary.unreadable == 1 and summary.unreadable_files[0][0] == str(bad)
    assert "'twelve' is not a number" in summary.unreadable_files[0][1]
    assert summary.passed > 50


def test_nothing_to_compare_is_a_workspace_error(shared_stats_workspace, tmp_path: Path):
    root = shared_stats_workspace
    with pytest.raises(WorkspaceError, match="no golden .npy"):
        compare_statistics(stats_dir(root), tmp_path, None, tmp_path / "r.csv")
    with pytest.raises(WorkspaceError, match="no statistics CSVs"):
        compare_statistics(root / "tf", root / "tf" / "dump", None, tmp_path / "r.csv")
    assert not (tmp_path / "r.csv").exists()


def test_a_tensor_result_csv_is_not_read_as_a_statistics_result(tmp_path: Path):
    path = tmp_path / "result.csv"
    path.write_text("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape\n")
    assert not is_stats_result(path)
    with pytest.raises(FormatError, match="no column Result"):
        read_stats_result(path)


def test_renderers_name_the_first_divergent_tensor(shared_stats_workspace, tmp_path: Path):
    root = shared_stats_workspace
    summary = compare_statistics(stats_dir(root), root / "tf" / "dump", build_graph(root), tmp_path / "r.csv")
    console = Console(width=200, record=True, color_system=None)
    for part in stats_summary(summary, "graph_1 vs golden"):
        console.print(part)
    text = console.export_text()
    assert "first divergent tensor: [16] bn2/FusedBatchNormV3:output:0" in text
    assert "first error: [27] fc1/MatMul:output:0" in text
    assert str(tmp_path / "r.csv") in text
    console = Console(width=200, record=True, color_system=None)
    rows = filter_stats_rows(read_stats_result(tmp_path / "r.csv"), results=[WARNING, ERROR])
    for part in stats_table(rows, limit=3):
        console.print(part)
    table = console.export_text()
    assert "4.50391/4.61408" in table and "[16] bn2/FusedBatchNormV3:output:0" in table
    assert f"... {len(rows) - 3} more row(s)" in table


def test_npu_vs_npu_statistics_find_the_op_the_tensor_compare_finds(stats_workspace, tmp_path: Path):
    root = stats_workspace(both_runs=True)
    left, right = (root / "npu" / f"debug_{n}" / "dump" for n in (0, 1))
    summary = compare_statistics_npu(left, right, tmp_path / "nn.csv")
    rows = read_stats_result(tmp_path / "nn.csv")
    assert summary.total == len(rows) == 222 and summary.no_golden == 0
    first = summary.first_failing
    # the tensor compare of the same runs: "debug_0 vs debug_1: first divergent op [16] bn2/FusedBatchNormV3"
    assert first is not None and first.tensor_index == "bn2_FusedBatchNormV3:output:0"
    assert "max 4.50391, other run 4.61719" in first.reason
    assert rows[0].cells["GoldenFile"].startswith(str(right))
    console = Console(width=200, record=True, color_system=None)
    for part in [*stats_summary(summary, "debug_0 vs debug_1", "other run"), *stats_table(rows, 2, "other run")]:
        console.print(part)
    text = console.export_text()
    assert f"first divergent tensor: [{first.index}] bn2_FusedBatchNormV3:output:0 (BatchNorm)" in text
    assert "max npu/other" in text and "tensor (other)" in text
    with pytest.raises(WorkspaceError, match="no statistics CSVs"):
        compare_statistics_npu(left, root / "tf", None)
