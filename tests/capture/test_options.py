"""capture/options.py: the exact maps per action, the refusals, the environment flags, the docs table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from precision_tool.capture import options
from precision_tool.errors import ConfigError, UsageError
from precision_tool.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ws(tmp_path) -> Workspace:
    return Workspace(tmp_path / "pd")


def test_every_action_map_is_the_original_with_our_fixes(ws):
    d = str(ws.root / "npu" / "debug_0")
    base = {"use_off_line": ("b", True), "debug_dir": ("s", d)}
    assert options.plan(ws, "").parameter_map == base
    assert options.plan(ws, "dump", dump_step="0|5").parameter_map == {
        **base, "enable_dump": ("b", True), "dump_mode": ("s", "all"), "dump_path": ("s", d + "/dump"),
        "op_debug_level": ("i", 4), "dump_step": ("s", "0|5")}
    assert options.plan(ws, "overflow").parameter_map == {
        **base, "enable_dump_debug": ("b", True), "dump_debug_mode": ("s", "all"),
        "dump_path": ("s", str(ws.root / "overflow" / "dump")), "op_debug_level": ("i", 4)}
    assert options.plan(ws, "fusion_off").parameter_map == {
        **base, "fusion_switch_file": ("s", str(ws.root / "fusion" / "fusion_off.cfg"))}
    assert options.plan(ws, "fusion_switch").parameter_map == {
        **base, "fusion_switch_file": ("s", str(ws.root / "fusion" / "fusion_switch.cfg"))}
    prof = options.plan(ws, "prof").parameter_map
    assert prof["profiling_mode"] == ("b", True)
    assert json.loads(prof["profiling_options"][1]) == {
        "output": d + "/prof", "storage_limit": "1000MB", "training_trace": "on", "l2": "on", "hccl": "on",
        "task_trace": "on", "aicpu": "on", "fp_point": "", "bp_point": "", "aic_metrics": "PipeUtilization",
        "msproftx": "on"}


def test_estimator_and_tf2_spellings(ws):
    d = str(ws.root / "npu" / "debug_0")
    dump = options.plan(ws, "dump|fusion_off|prof", dump_layer="a/b c")
    assert dump.estimator_kwargs("DumpConfig") == {
        "enable_dump": True, "dump_mode": "all", "dump_path": d + "/dump", "dump_step": "0", "dump_layer": "a/b c"}
    assert dump.estimator_kwargs("NPURunConfig") == {
        "debug_dir": d, "op_debug_level": 4, "fusion_switch_file": str(ws.fusion_off_file)}
    assert set(dump.estimator_kwargs("ProfilingConfig")) == {"enable_profiling", "profiling_options"}
    assert options.plan(ws, "overflow").global_options == {
        "debug_dir": d, "dump_config.enable_dump_debug": True, "dump_config.dump_debug_mode": "all",
        "dump_config.dump_path": str(ws.overflow_root), "op_debug_level": 4}
    assert "use_off_line" not in dump.global_options and dump.folders == (
        ws.debug_dir(0), ws.dump_root(0), ws.fusion_off_file.parent, ws.profiling_dir(0))


@pytest.mark.parametrize("action, words", [
    ("dump|overflow", ["dump|overflow", "E10001", "run twice"]),
    ("overflow|prof|dump", ["E10001"]),
    ("fusion_off|fusion_switch", ["one switch file"]),
    ("dump|bogus", ["unknown action bogus", "fusion_switch"]),
])
def test_refused_actions(ws, action, words):
    with pytest.raises(UsageError) as err:
        options.plan(ws, action)
    assert all(word in str(err.value) for word in words) and "\n" not in str(err.value)
    assert not ws.root.exists()  # nothing written


@pytest.mark.parametrize("step", ["", "a", "5-3", "5-5", "1-2-3", "0||5", "1.5", "-1", "|".join(["1"] * 101)])
def test_bad_dump_step_refused(ws, step):
    with pytest.raises(ConfigError, match="TF_DUMP_STEP"):
        options.plan(ws, "dump", dump_step=step)


@pytest.mark.parametrize("step", ["0", "0|5|10-20", "|".join(map(str, range(100))), "007"])
def test_good_dump_step(ws, step):
    assert options.plan(ws, "dump", dump_step=step).parameter_map["dump_step"] == ("s", step)


def test_dump_step_only_checked_for_dump(ws):
    assert "dump_step" not in options.plan(ws, "overflow", dump_step="x").parameter_map


def test_environment_flags(ws):
    assert options.resolve_actions(None, {"PRECISION_TOOL_DUMP": "True"}) == (frozenset({"dump"}), "PRECISION_TOOL_DUMP")
    assert options.resolve_actions(None, {"PRECISION_TOOL_OVERFLOW": "True", "PRECISION_TOOL_DUMP": "False"}) == (
        frozenset({"overflow"}), "PRECISION_TOOL_OVERFLOW")
    # an explicit action wins over the flags
    assert options.resolve_actions("fusion_off", {"PRECISION_TOOL_DUMP": "True"}) == (frozenset({"fusion_off"}), None)
    assert options.resolve_actions(None, {}) == (frozenset(), None)
    with pytest.raises(UsageError, match="both PRECISION_TOOL_DUMP and PRECISION_TOOL_OVERFLOW"):
        options.plan(ws, None, env={"PRECISION_TOOL_DUMP": "True", "PRECISION_TOOL_OVERFLOW": "1"})
    with pytest.raises(ConfigError, match="PRECISION_TOOL_DUMP='yes'"):
        options.resolve_actions(None, {"PRECISION_TOOL_DUMP": "yes"})


def test_seed_from_env():
    assert options.seed_from_env({}) == 2022 and options.seed_from_env({"PRECISION_TOOL_SEED": " 7 "}) == 7
    for bad in ("x", "-1", str(2**32)):
        with pytest.raises(ConfigError, match="PRECISION_TOOL_SEED"):
            options.seed_from_env({"PRECISION_TOOL_SEED": bad})


def test_graph_dump_env_user_values_win(ws):
    to_set, warnings = options.graph_dump_env(ws, {})
    assert to_set == {"DUMP_GE_GRAPH": "2", "DUMP_GRAPH_LEVEL": "3", "DUMP_GRAPH_PATH": str(ws.graph_dir(0)),
                      "NPU_DUMP_GRAPH": "true"} and warnings == []
    to_set, warnings = options.graph_dump_env(ws, {"DUMP_GE_GRAPH": "1", "DUMP_GRAPH_PATH": "/elsewhere"})
    assert "DUMP_GE_GRAPH" not in to_set and "DUMP_GRAPH_PATH" not in to_set
    assert len(warnings) == 1 and "/elsewhere" in warnings[0]
    _, warnings = options.graph_dump_env(ws, {"DUMP_GE_GRAPH": "3", "DUMP_GRAPH_LEVEL": "4"})
    assert len(warnings) == 2


def test_every_option_says_why_and_where_from(ws):
    for action in options.ACTIONS:
        for option in options.plan(ws, action).options:
            assert option.why and re.match(r"(PT|TFA|GE) ", option.source), option
            assert option.kind in ("b", "i", "s")


def test_docs_table_is_the_generated_one():
    text = (ROOT / "docs" / "capture.md").read_text(encoding="utf-8")
    start, end = text.index(options.TABLE_BEGIN), text.index(options.TABLE_END) + len(options.TABLE_END)
    assert text[start:end] == options.option_table_markdown(), (
        "docs/capture.md's option table is stale: paste precision_tool.capture.options.option_table_markdown()")


def test_a_bisect_rounds_files_reach_the_adapter(ws):
    env = {"PRECISION_TOOL_DUMP": "True", "PRECISION_TOOL_MODIFY_MIXLIST": "/r/ops_info.json",
           "PRECISION_TOOL_FUSION_SWITCH": "/r/fusion_switch.cfg"}
    found = {o.key: o for o in options.plan(ws, None, env=env).options}
    assert found["modify_mixlist"].value == "/r/ops_info.json" and found["modify_mixlist"].tf2 == "modify_mixlist"
    assert found["fusion_switch_file"].value == "/r/fusion_switch.cfg"
    assert all(re.match(r"(PT|TFA|GE) ", o.source) for o in found.values())
    # an action's own switch file wins: one fusion_switch_file per run
    off = [o for o in options.plan(ws, "dump|fusion_off", env=env).options if o.key == "fusion_switch_file"]
    assert [o.value for o in off] == [str(ws.fusion_off_file)]
    assert "modify_mixlist" not in {o.key for o in options.plan(ws, "dump", env={}).options}
