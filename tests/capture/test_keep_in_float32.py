"""tf_config.keep_in_float32: the fix/ops_info.json a replay writes, applied through the adapter's
modify_mixlist option — on a real TF1 session config and on the npu_device stand-in (TF2), in fresh
processes (tf_config must be imported before TensorFlow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.capture.conftest import standin_env

pytestmark = pytest.mark.tf

PROBE = r"""
import json, sys
import precision_tool.tf_config as c
from precision_tool.errors import ConfigError, UsageError
import npu_device
path = sys.argv[1]
config = c.session_dump_config(None, action="dump")
custom_op = config.graph_options.rewrite_options.custom_optimizers[0]
c.keep_in_float32(custom_op, path)
kept = c.session_dump_config(None, action="dump").graph_options.rewrite_options.custom_optimizers[0]
kept.parameter_map["precision_mode"].s = b"allow_mix_precision_bf16"
c.keep_in_float32(kept, path)
c.keep_in_float32(npu_device, path)
options = npu_device.global_options()
errors = []
for call in (lambda: c.keep_in_float32(custom_op, path + ".missing"), lambda: c.keep_in_float32(object(), path)):
    try:
        call()
    except (ConfigError, UsageError) as exc:
        errors.append(str(exc))
print(json.dumps({
    "tf1": {k: custom_op.parameter_map[k].s.decode() for k in ("modify_mixlist", "precision_mode")},
    "kept_mode": kept.parameter_map["precision_mode"].s.decode(),
    "tf2": {"modify_mixlist": options.modify_mixlist.value, "precision_mode": options.precision_mode.value},
    "errors": errors}))
"""


def test_keep_in_float32_sets_modify_mixlist_and_a_mixed_precision_mode(tmp_path: Path):
    ops_info = tmp_path / "fix" / "ops_info.json"
    ops_info.parent.mkdir()
    ops_info.write_text(json.dumps({"black-list": {"to-add": ["MatMulV2"]}}))
    proc = subprocess.run([sys.executable, "-c", PROBE, str(ops_info)], env=standin_env(tmp_path / "pd"),
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["tf1"] == {"modify_mixlist": str(ops_info), "precision_mode": "allow_mix_precision"}
    assert out["kept_mode"] == "allow_mix_precision_bf16"  # a mixed mode the user chose stays
    assert out["tf2"] == {"modify_mixlist": str(ops_info), "precision_mode": "allow_mix_precision"}
    assert out["errors"][0].startswith(f"keep_in_float32: {ops_info}.missing does not exist; `ni -c OP`")
    assert out["errors"][1].startswith("keep_in_float32 needs the NpuOptimizer custom_op")
