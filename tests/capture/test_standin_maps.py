"""tf_config against the adapter stand-in: the exact parameter_map, DumpConfig / NPURunConfig / ProfilingConfig
and npu_device global_options for every action, the adapter's own checks passing, and dump|overflow refused
before anything is written."""

from __future__ import annotations

import json

EXPECTED_PROFILING = {"storage_limit": "1000MB", "training_trace": "on", "l2": "on", "hccl": "on", "task_trace": "on",
                      "aicpu": "on", "fp_point": "", "bp_point": "", "aic_metrics": "PipeUtilization", "msproftx": "on"}


def test_dump_and_overflow_together_refused_before_anything_is_written(standin_run):
    _, out, _ = standin_run
    refused = out["refused"]
    for where in ("session", "estimator", "run_config", "tf2"):
        assert refused[where].startswith("UsageError: tf_config action 'dump|overflow'"), where
        assert "E10001" in refused[where] and "run twice" in refused[where]
    assert refused["fusion_both"].startswith("UsageError") and "users_overflow_then_dump" in refused
    assert "already has enable_dump_debug on" in refused["users_overflow_then_dump"]
    assert refused["workspace_exists_after"] is False
    assert refused["ge"].startswith("E10001")  # what GE would have said at run time


def test_session_parameter_map_per_action(standin_run):
    ws, out, _ = standin_run
    d = str(ws / "npu" / "debug_0")
    base = {"use_off_line": ["b", True], "debug_dir": ["s", d]}
    dump = {"enable_dump": ["b", True], "dump_mode": ["s", "all"], "dump_path": ["s", d + "/dump"],
            "op_debug_level": ["i", 4], "dump_step": ["s", "0"]}
    maps = {action: found["session"] for action, found in out["actions"].items()}
    assert maps[""] == base
    assert maps["dump"] == {**base, **dump}
    assert maps["overflow"] == {**base, "enable_dump_debug": ["b", True], "dump_debug_mode": ["s", "all"],
                                "dump_path": ["s", str(ws / "overflow" / "dump")], "op_debug_level": ["i", 4]}
    assert maps["fusion_off"] == {**base, "fusion_switch_file": ["s", str(ws / "fusion" / "fusion_off.cfg")]}
    assert maps["fusion_switch"] == {**base, "fusion_switch_file": ["s", str(ws / "fusion" / "fusion_switch.cfg")]}
    prof = maps["prof"]
    assert set(prof) == {*base, "profiling_mode", "profiling_options"} and prof["profiling_mode"] == ["b", True]
    assert json.loads(prof["profiling_options"][1]) == {"output": d + "/prof", **EXPECTED_PROFILING}
    assert set(maps["dump|fusion_off|prof"]) == {*base, *dump, "fusion_switch_file", "profiling_mode", "profiling_options"}
    assert out["env_dump"] == {**base, **dump}  # PRECISION_TOOL_DUMP=True with action=None


def test_estimator_objects_per_action(standin_run):
    ws, out, _ = standin_run
    d = str(ws / "npu" / "debug_0")
    acts = out["actions"]
    default = {"_enable_dump": False, "_dump_path": None, "_dump_step": None, "_dump_mode": "output",
               "_enable_dump_debug": False, "_dump_debug_mode": "all", "dump_data": "tensor", "dump_layer": None}
    assert acts[""]["dump_config"] == default == acts["prof"]["dump_config"]
    assert acts["dump"]["dump_config"] == {**default, "_enable_dump": True, "_dump_path": d + "/dump",
                                           "_dump_step": "0", "_dump_mode": "all"}
    assert acts["overflow"]["dump_config"] == {**default, "_enable_dump_debug": True,
                                               "_dump_path": str(ws / "overflow" / "dump")}
    # what the adapter's loader hands to the NpuOptimizer from NPURunConfig(dump_config=...)
    assert acts["overflow"]["loaded"] == {"enable_dump": False, "enable_dump_debug": True,
                                          "dump_path": str(ws / "overflow" / "dump"), "dump_mode": "output",
                                          "dump_debug_mode": "all", "dump_data": "tensor"}
    assert acts["dump"]["run_config"] == {"op_debug_level": 4, "_debug_dir": d, "_fusion_switch_file": None}
    assert acts["fusion_switch"]["run_config"]["_fusion_switch_file"] == str(ws / "fusion" / "fusion_switch.cfg")
    profiling = acts["prof"]["profiling"]
    assert profiling["_enable_profiling"] is True
    assert json.loads(profiling["_profiling_options"]) == {"output": d + "/prof", **EXPECTED_PROFILING}
    assert acts[""]["profiling"] is None


def test_npu_device_global_options_per_action(standin_run):
    ws, out, _ = standin_run
    d = str(ws / "npu" / "debug_0")
    acts = out["actions"]
    base = acts[""]["tf2"]
    assert base["debug_dir"] == d and base["enable_dump"] == "0"  # the adapter's defaults otherwise
    assert acts["dump"]["tf2"] == {**base, "enable_dump": "1", "dump_path": d + "/dump", "dump_step": "0",
                                   "dump_mode": "all", "op_debug_level": "4"}
    assert acts["overflow"]["tf2"] == {**base, "enable_dump_debug": "1", "dump_debug_mode": "all",
                                       "dump_path": str(ws / "overflow" / "dump"), "op_debug_level": "4"}
    assert acts["fusion_off"]["tf2"] == {**base, "fusion_switch_file": str(ws / "fusion" / "fusion_off.cfg")}
    prof = acts["prof"]["tf2"]
    assert {k: v for k, v in prof.items() if k != "profiling_options"} == {
        **{k: v for k, v in base.items() if k != "profiling_options"}, "enable_profiling": "1"}
    assert json.loads(prof["profiling_options"]) == {"output": d + "/prof", **EXPECTED_PROFILING}
    # op_debug_level is deprecated in TF2: the adapter warns when it hands it over, as it would on a device
    assert "op_debug_level" in acts["dump"]["tf2_printed"]
    assert out["env_dump_tf2"] == acts["dump"]["tf2"]


def test_folders_files_and_graph_variables(standin_run):
    ws, out, stderr = standin_run
    assert out["env"] == {"DUMP_GE_GRAPH": "2", "DUMP_GRAPH_LEVEL": "3",
                          "DUMP_GRAPH_PATH": str(ws / "npu" / "debug_0" / "graph"), "NPU_DUMP_GRAPH": "true",
                          "PYTHONHASHSEED": "2022"}
    assert out["files"] == ["fusion/fusion_off.cfg", "fusion/fusion_switch.cfg", "npu/debug_0/run_config.json"]
    # the last helper called (TF2, dump by the environment flag) recorded its options under the TF1 names
    record = json.loads((ws / "npu" / "debug_0" / "run_config.json").read_text())
    assert record["side"] == "npu" and record["written_by"] == "npu_device_dump_config"
    assert {k: record["npu_options"][k] for k in ("enable_dump", "dump_mode", "dump_step", "op_debug_level")} == {
        "enable_dump": True, "dump_mode": "all", "dump_step": "0", "op_debug_level": 4}
    assert record["software"]["cann"] is None and record["env"]["PRECISION_TOOL_DUMP"] == "True"
    assert set(out["dirs"]) == {".", "npu", "npu/debug_0", "npu/debug_0/graph", "npu/debug_0/dump",
                                "npu/debug_0/prof", "overflow", "overflow/dump", "fusion"}
    assert json.loads((ws / "fusion" / "fusion_off.cfg").read_text()) == {
        "Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
    assert "no fusion pass is known yet" in stderr and "PRECISION_TOOL_DUMP=True: dump on" in stderr


def test_loss_scale_callback_reads_the_npu_optimizer(standin_run):
    _, out, _ = standin_run
    assert out["loss_scale_lines"] == [
        "PrecisionTool: step 0, loss_scale=1024.000, last_step_finite=True, loss=2.5",
        "PrecisionTool: step 1, loss_scale=512.000, last_step_finite=False"]
