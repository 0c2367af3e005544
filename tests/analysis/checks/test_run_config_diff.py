"""The run-config diff: what counts as a difference between two records, and what never does."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_tool.analysis.checks.run_config_diff import (
    diff_records, golden_against_npu, open_target, pairs_to_compare,
)
from precision_tool.errors import WorkspaceError
from precision_tool.formats.run_config import new_record, read_run_config, write_run_config
from precision_tool.workspace import Workspace

SOFTWARE = {"python": "3.11.7", "tensorflow": "2.21.0", "numpy": "2.4.6", "tf_adapter": None, "cann": None,
            "precision_tool": "0.1.0"}


def _write(path: Path, side: str, *, options=None, seed=2022, env=None, software=None, dropout=None, digests=None):
    data = new_record(side, "test", software={**SOFTWARE, **(software or {})}, npu_options=options or {},
                      file_digests=digests or {}, dropout=dropout,
                      seeds={"seed": seed, "seed_from": "default", "op_determinism": False,
                             "python_hash_seed": str(seed)},
                      env={"TF_ENABLE_ONEDNN_OPTS": "0", **(env or {})})
    return read_run_config(write_run_config(path, data))


def _rows(left, right):
    return {(row.group, row.setting): (row.left, row.right) for row in diff_records(left, right)}


def test_two_npu_runs_differ_in_precision_mode_and_seed(tmp_path):
    a = _write(tmp_path / "a.json", "npu", options={"precision_mode": "allow_mix_precision"}, seed=1)
    b = _write(tmp_path / "b.json", "npu", options={"precision_mode": "force_fp32"}, seed=7)
    assert _rows(a, b) == {("NPU option", "precision_mode"): ("allow_mix_precision", "force_fp32"),
                           ("seed", "seed"): ("1", "7")}


def test_where_files_go_is_no_difference_and_named_files_compare_by_content(tmp_path):
    a = _write(tmp_path / "a.json", "npu", options={"dump_path": "/a/dump", "debug_dir": "/a/debug",
                                                    "modify_mixlist": "/a/fix/ops_info.json"},
               env={"DUMP_GRAPH_PATH": "/a/graph", "PRECISION_DATA": "/a"}, digests={"modify_mixlist": "00ff"})
    b = _write(tmp_path / "b.json", "npu", options={"dump_path": "/b/dump", "debug_dir": "/b/debug",
                                                    "modify_mixlist": "/b/fix/ops_info.json"},
               env={"DUMP_GRAPH_PATH": "/b/graph", "PRECISION_DATA": "/b"}, digests={"modify_mixlist": "00ff"})
    assert _rows(a, b) == {}
    c = _write(tmp_path / "c.json", "npu", options={"modify_mixlist": "/b/fix/ops_info.json"},
               digests={"modify_mixlist": "abcd"})
    assert _rows(a, c)[("NPU option", "modify_mixlist")] == ("ops_info.json (sha256 00ff)",
                                                             "ops_info.json (sha256 abcd)")


def test_golden_against_npu_leaves_out_what_only_the_npu_has(tmp_path):
    golden = _write(tmp_path / "g.json", "golden", env={"TF_ENABLE_ONEDNN_OPTS": "1"})
    npu = _write(tmp_path / "n.json", "npu", options={"precision_mode": "force_fp16"}, software={"cann": "8.0.0"},
                 env={"ASCEND_OPP_PATH": "/opp", "TF_ENABLE_ONEDNN_OPTS": "0"})
    assert _rows(golden, npu) == {("environment", "TF_ENABLE_ONEDNN_OPTS"): ("1", "0")}


def test_same_side_shows_an_option_set_on_one_side_only_and_versions(tmp_path):
    a = _write(tmp_path / "a.json", "npu", software={"cann": "7.0.0", "python": "3.9.1"})
    b = _write(tmp_path / "b.json", "npu", options={"fusion_switch_file": "/x.cfg"},
               software={"cann": "8.0.0", "python": "3.9.18"}, digests={"fusion_switch_file": "missing"})
    rows = _rows(a, b)
    assert rows[("software", "cann")] == ("7.0.0", "8.0.0")
    assert ("software", "python") not in rows  # 3.9 both: patch releases change no kernel
    assert rows[("NPU option", "fusion_switch_file")] == ("unset", "x.cfg (sha256 missing)")


def test_dropout_compares_only_when_both_records_saw_a_graph(tmp_path):
    unknown = _write(tmp_path / "u.json", "golden", dropout=None)
    half = _write(tmp_path / "h.json", "golden", dropout=[{"scope": "dropout", "rate": 0.5}])
    none = _write(tmp_path / "n.json", "golden", dropout=[])
    assert _rows(unknown, half) == {}
    assert _rows(none, half) == {("dropout", "dropout"): ("none", "0.5")}


def test_ac_pairs_the_golden_record_with_debug_0_and_is_quiet_without_records(tmp_path):
    ws = Workspace(tmp_path / "pd")
    assert golden_against_npu(ws) is None
    _write(ws.golden_run_config_file, "golden", seed=1)
    assert golden_against_npu(ws) is None  # the NPU side has no record (an older workspace)
    _write(ws.run_config_file(0), "npu", seed=2)
    pair = golden_against_npu(ws)
    assert [(r.setting, r.left, r.right) for r in pair.differences] == [("seed", "1", "2")]


def test_config_diff_targets(tmp_path):
    a, b = Workspace(tmp_path / "a"), Workspace(tmp_path / "b")
    _write(a.golden_run_config_file, "golden")
    _write(a.run_config_file(0), "npu")
    _write(a.run_config_file(3), "npu", seed=5)
    _write(b.run_config_file(1), "npu")
    first, second = open_target(a.root), open_target(b.root)
    assert first.npu == a.run_config_file(3) and first.npu_name == "npu/debug_3"  # the newest run with one
    pairs, notes = pairs_to_compare(first, second, "both")
    assert [(p[2], p[3]) for p in pairs] == [("A npu/debug_3", "B npu/debug_1")]
    assert notes == [f"golden: not compared, no record in {b.root}"]
    # a record file against a workspace: the workspace's record of the same side
    pairs, _ = pairs_to_compare(open_target(b.run_config_file(1)), open_target(a.root), "golden")
    assert pairs == [(b.run_config_file(1), a.run_config_file(3), "A npu", "B npu")]
    with pytest.raises(WorkspaceError, match=r"/b has no golden record to compare with .*/a/tf/run_config.json"):
        pairs_to_compare(open_target(a.golden_run_config_file), open_target(b.root), "both")
    with pytest.raises(WorkspaceError, match="holds no run-config record"):
        open_target(tmp_path)
    with pytest.raises(WorkspaceError, match="does not exist"):
        open_target(tmp_path / "nowhere")
