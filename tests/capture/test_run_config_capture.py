"""Run-config records from real captures: two runs of one training script (real TensorFlow, tf_config's
hooks) with another precision_mode, seed and dropout rate; `config-diff` and `ac` show what differs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.capture.conftest import ROOT
from tests.conftest import run_cli

SCRIPT = Path(__file__).parent / "scripts" / "run_config_capture.py"


def _capture(workspace: Path, seed: int, mode: str, rate: float) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("PRECISION_TOOL_", "TF2_"))}
    env.update({"PYTHONPATH": str(ROOT), "PRECISION_DATA": str(workspace), "TF_CPP_MIN_LOG_LEVEL": "2",
                "PRECISION_TOOL_SEED": str(seed), "MY_API_KEY": "do-not-record", "TF_VAR_region": "terraform's"})
    env.pop("PRECISION_TOOL_CONFIG", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), mode, str(rate)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=workspace.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def two_captures(tmp_path_factory) -> tuple[Path, Path]:
    a = tmp_path_factory.mktemp("run_a") / "precision_data"
    b = tmp_path_factory.mktemp("run_b") / "precision_data"
    _capture(a, 1, "allow_mix_precision", 0.5)
    _capture(b, 7, "force_fp32", 0.25)
    return a, b


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def test_each_side_records_beside_its_dumps(two_captures):
    a, _ = two_captures
    golden, npu = _read(a / "tf" / "run_config.json"), _read(a / "npu" / "debug_0" / "run_config.json")
    assert golden["side"] == "golden" and golden["written_by"] == "PrecisionTfSession"
    assert golden["seeds"] == {"seed": 1, "seed_from": "PRECISION_TOOL_SEED", "op_determinism": False,
                               "python_hash_seed": "1"}
    assert [entry["rate"] for entry in golden["dropout"]] == [0.5]
    assert golden["software"]["tensorflow"] and golden["software"]["cann"] is None  # no toolkit: unknown
    assert golden["npu_options"] == {}
    assert npu["side"] == "npu" and npu["written_by"] == "update_custom_op"
    assert npu["npu_options"]["precision_mode"] == "allow_mix_precision"
    assert npu["npu_options"]["enable_dump"] is True and npu["npu_options"]["dump_mode"] == "all"
    assert npu["dropout"] is None  # the session config alone shows no graph
    for record in (golden, npu):
        assert record["env"]["TF_ENABLE_ONEDNN_OPTS"] == "0"
        assert "MY_API_KEY" not in record["env"] and "TF_VAR_region" not in record["env"]


def test_config_diff_shows_precision_mode_seed_and_dropout(two_captures):
    a, b = two_captures
    result = run_cli("config-diff", str(a), str(b))
    assert result.status == 0, result.err
    out = result.out
    assert "A golden" in out and "B npu/debug_0" in out
    for row in ("NPU option: precision_mode", "allow_mix_precision", "force_fp32", "seed: seed", "dropout: dropout",
                "0.25"):
        assert row in out, out
    assert "dump_path" not in out and "DUMP_GRAPH_PATH" not in out  # where files go differs, no number does
    only_npu = run_cli("config-diff", "-s", "npu", str(a), str(b)).out
    assert "precision_mode" in only_npu and "A golden" not in only_npu


def test_ac_shows_a_golden_npu_difference_and_nothing_without_one(two_captures, tmp_path):
    a, b = two_captures
    quiet = run_cli("ac", data=a)
    assert "run config" not in quiet.out + quiet.err  # same process, same seed: nothing to show
    mixed = tmp_path / "precision_data"
    shutil.copytree(a, mixed)
    shutil.copy(b / "npu" / "debug_0" / "run_config.json", mixed / "npu" / "debug_0" / "run_config.json")
    shown = run_cli("ac", data=mixed)
    assert "run config: the golden and NPU runs differ in" in shown.out, shown.out + shown.err
    assert "seed: seed" in shown.out and "precision_mode" not in shown.out  # the golden run has no NPU options


def test_a_damaged_record_is_one_line_in_config_diff_and_in_ac(two_captures, tmp_path):
    a, _ = two_captures
    broken = tmp_path / "precision_data"
    shutil.copytree(a, broken)
    record = broken / "npu" / "debug_0" / "run_config.json"
    record.write_text('{"format": "precision_tool.run_config", "version": 99, "side": "npu"}')
    result = run_cli("config-diff", "-s", "npu", str(a), str(broken))
    assert result.status == 1 and "Traceback" not in result.err
    lines = [line for line in (result.out + result.err).splitlines() if line.strip()]
    assert lines == [f"{record}: format version 99, newer than this precision_tool reads (1); upgrade "
                     "precision_tool to compare it"]
    ac = run_cli("ac", data=broken)
    assert f"run config: {record}: format version 99" in ac.out + ac.err and "Traceback" not in ac.err
