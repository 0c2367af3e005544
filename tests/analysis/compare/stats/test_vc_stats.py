"""`vc`, `vcs` and `ac -c` on runs that dumped statistics CSVs only (dump_data="stats"), through the real CLI:
statistics are compared where tensors are absent, instead of "no NPU dump files"."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from precision_tool.analysis.results.stats_results import STATS_RESULT_HEADER


def _result_csvs(root: Path) -> list[Path]:
    return sorted((root / "temp" / "vector_compare").glob("*/result_*.csv"))


def test_vc_compares_statistics_against_golden_and_the_other_run(stats_workspace, cli):
    root = stats_workspace(both_runs=True)
    result = cli("vc", data=root)
    assert result.status == 0, result.out + result.err
    assert "no NPU dump files" not in result.out + result.err
    # the planted fault (bn2 reads beta one channel late) is the first divergent tensor of both runs' compares
    assert re.search(r"vs golden: statistics compare .*: 222 tensor\(s\): \d+ pass", result.out)
    assert "first divergent tensor: [16] bn2/FusedBatchNormV3:output:0" in result.out
    assert "debug_0 vs debug_1: statistics compare" in result.out
    assert "first divergent tensor: [10] bn2_FusedBatchNormV3:output:0" in result.out
    assert re.search(r"^  \S+ vs golden: statistics: first divergent tensor \[16\] bn2/FusedBatchNormV3:output:0; "
                     r"222 tensor\(s\)", result.out, re.M)
    files = _result_csvs(root)
    assert len(files) == 2
    for path in files:
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
        assert tuple(rows[0]) == tuple(STATS_RESULT_HEADER)
        assert len(rows) == 223
        results = {row[rows[0].index("Result")] for row in rows[1:]}
        assert {"pass", "warning", "error"} <= results


def test_vcs_and_ac_read_a_statistics_result(stats_workspace, cli):
    root = stats_workspace()
    assert cli("vc", data=root).status == 0
    shown = cli("vcs", "-l", "2", data=root)
    assert shown.status == 0, shown.err
    assert "statistics compare" in shown.out
    # the table lists the warning/error rows, the first one being the planted fault
    table = shown.out[shown.out.index("result   max npu/golden"):]
    first_row = table.splitlines()[1]
    assert first_row.startswith("warning") or first_row.startswith("error")
    assert first_row.endswith("[16] bn2/FusedBatchNormV3:output:0 (bn2/FusedBatchNormV3:output:0)")
    assert re.search(r"^\.\.\. \d+ more row\(s\)$", table, re.M)
    overflow = cli("vcs", "--overflow", data=root)
    assert overflow.status == 1 and "has no OverFlow column" in overflow.out + overflow.err
    assert "Traceback" not in overflow.out + overflow.err
    checked = cli("ac", data=root)
    assert checked.status == 0, checked.out + checked.err
    answer = checked.out[checked.out.index("answer ─"):]  # the block ac ends with
    assert "statistics: first divergent tensor [16] bn2/FusedBatchNormV3:output:0" in answer
    assert f"  {_result_csvs(root)[0].parent}" in answer.splitlines()


def test_vc_statistics_ignores_tensor_only_options_out_loud(stats_workspace, cli):
    root = stats_workspace()
    result = cli("vc", "-overflow_detection", data=root)
    assert result.status == 0, result.out + result.err
    assert "-overflow_detection, -r and -s need tensors; they are ignored for a statistics dump" in \
        result.out + result.err


def test_vc_with_one_run_of_statistics_and_one_of_tensors(stats_workspace, cli, demo_workspace):
    """debug_0 dumped statistics, debug_1 tensors: the golden run is compared, the NPU-vs-NPU one is said to be
    impossible (nothing to pair), and vc still succeeds with the rows it could write."""
    root = stats_workspace()
    import shutil

    shutil.copytree(demo_workspace / "npu" / "debug_1", root / "npu" / "debug_1", symlinks=True)
    result = cli("vc", data=root)
    assert result.status == 0, result.out + result.err
    assert "debug_0 vs debug_1: not compared: " in result.out + result.err
    assert "holds statistics CSVs and " in result.out + result.err and "dump_data differs between the runs" in \
        result.out + result.err
    assert len(_result_csvs(root)) == 1
    alone = cli("vc", "-lt", str(root / "npu" / "debug_0" / "dump"), "-rt", str(root / "npu" / "debug_1" / "dump"),
                data=root)
    assert alone.status == 1 and "dump_data differs between the runs" in alone.out + alone.err
    assert "Traceback" not in alone.out + alone.err


def test_pt_on_statistics_says_what_they_are(shared_stats_workspace, cli):
    root = shared_stats_workspace
    op = cli("pt", "bn2/Relu:output:0", data=root)
    assert op.status == 1
    assert 'op bn2_Relu dumped statistics only (dump_data="stats"), no tensors; `ni bn2/Relu` shows them' in op.out + op.err
    csv_file = next((root / "npu" / "debug_0" / "dump").rglob("Relu.bn2_Relu.*.csv"))
    for spelling in (str(csv_file), csv_file.name):
        shown = cli("pt", spelling, data=root)
        assert shown.status == 1 and 'statistics CSV (dump_data="stats")' in shown.out + shown.err
        assert "Traceback" not in shown.out + shown.err
