"""`vc -s/-r` on the demo workspace with no other option: the NPU-vs-golden run goes through its Build graph;
the debug_0-vs-debug_1 run, matched by op name, is left out with a note instead of refusing the whole command."""

from __future__ import annotations

import csv
import shutil

from tests.conftest import run_cli


def test_vc_select_on_the_workspace_compares_the_graph_run_and_says_what_it_left_out(demo_workspace, tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(demo_workspace, root, symlinks=True)
    shutil.rmtree(root / "temp", ignore_errors=True)
    result = run_cli("vc", "-s", "16", data=root)
    assert result.status == 0, result.out + result.err
    assert "debug_0 vs debug_1: not compared: -r/-s pick ops by graph id and this run is matched by op name" \
        in result.out + result.err
    [csv_path] = sorted((root / "temp" / "vector_compare").glob("*/result_*.csv"))
    with open(csv_path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:2] == ["Index", "OpSequence"]
    assert {row[rows[0].index("NPUDump")] for row in rows[1:]} == {"bn2/FusedBatchNormV3"}
    assert not list((root / "temp" / "vector_compare").glob("*/result_*_npu_vs_npu.csv"))
    assert "first divergent op [16] bn2/FusedBatchNormV3" in result.out
