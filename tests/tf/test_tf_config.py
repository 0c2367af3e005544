"""tf_config in a fresh process (it must be imported before tensorflow): environment and parameter map."""

from __future__ import annotations

import json

PROBE = r"""
import json, os, sys
import precision_tool.tf_config as c
import tensorflow as tf
from precision_tool.errors import ConfigError, UsageError
config = c.session_dump_config(None, action="dump|fusion_off")
rewrite = config.graph_options.rewrite_options
op = rewrite.custom_optimizers[0]
p = op.parameter_map
over = c.update_custom_op(tf.compat.v1.ConfigProto().graph_options.rewrite_options.custom_optimizers.add(),
                          action="overflow|prof|fusion_switch")
errors = []
for call in (lambda: c.parse_actions("dump|bogus"), lambda: c.estimator_dump_config("dump")):
    try:
        call()
    except (ConfigError, UsageError) as exc:
        errors.append(str(exc))
print(json.dumps({
    "name": op.name, "use_off_line": p["use_off_line"].b, "enable_dump": p["enable_dump"].b,
    "dump_path": p["dump_path"].s.decode(), "dump_step": p["dump_step"].s.decode(),
    "dump_mode": p["dump_mode"].s.decode(), "fusion_switch_file": p["fusion_switch_file"].s.decode(),
    "remapping": rewrite.remapping, "fusion_off_file": c.FUSION_OFF_FILE,
    "overflow": {"enable_dump_debug": over.parameter_map["enable_dump_debug"].b,
                 "dump_debug_mode": over.parameter_map["dump_debug_mode"].s.decode(),
                 "dump_path": over.parameter_map["dump_path"].s.decode(),
                 "fusion_switch_file": over.parameter_map["fusion_switch_file"].s.decode(),
                 "profiling_mode": over.parameter_map["profiling_mode"].b,
                 "profiling_options": json.loads(over.parameter_map["profiling_options"].s)},
    "env": {k: os.environ.get(k) for k in ("TF_ENABLE_ONEDNN_OPTS", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL",
                                           "DUMP_GRAPH_PATH")},
    "meta_optimizer_off": tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer"),
    "errors": errors,
}))
"""

LATE = "import warnings, tensorflow\nwarnings.simplefilter('always')\nimport precision_tool.tf_config\n"


def test_session_dump_config_parameter_map(tmp_path, python_in):
    ws = tmp_path / "ws"
    out = json.loads(python_in(ws, "-c", PROBE).stdout.strip().splitlines()[-1])
    assert out["name"] == "NpuOptimizer" and out["use_off_line"] is True and out["enable_dump"] is True
    assert out["dump_path"] == str(ws / "npu" / "debug_0" / "dump") and (ws / "npu" / "debug_0" / "dump").is_dir()
    assert out["dump_step"] == "0" and out["dump_mode"] == "all"
    assert out["fusion_switch_file"] == out["fusion_off_file"]
    switch = json.loads(open(out["fusion_off_file"]).read())
    assert switch == {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
    assert out["remapping"] == 2  # RewriterConfig.OFF
    over = out["overflow"]
    assert over["enable_dump_debug"] is True and over["dump_debug_mode"] == "all"
    assert over["dump_path"] == str(ws / "overflow" / "dump")
    assert over["fusion_switch_file"].endswith("fusion_switch.json") and over["profiling_mode"] is True
    assert over["profiling_options"]["output"] == str(ws / "profiling")
    assert out["env"] == {"TF_ENABLE_ONEDNN_OPTS": "0", "DUMP_GE_GRAPH": "2", "DUMP_GRAPH_LEVEL": "3",
                          "DUMP_GRAPH_PATH": str(ws / "npu" / "debug_0" / "graph")}
    assert out["meta_optimizer_off"] is True
    assert "unknown action bogus" in out["errors"][0] and "npu_bridge" in out["errors"][1]


def test_importing_after_tensorflow_warns(tmp_path, python_in):
    proc = python_in(tmp_path, "-c", LATE)
    assert "imported after tensorflow" in proc.stderr and "Conv2D" in proc.stderr
