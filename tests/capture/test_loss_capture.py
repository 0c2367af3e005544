"""Loss records from real trainings (scripts/loss_capture.py, real TensorFlow, tf_config's hooks): every training
step's loss lands in the side's loss record as the script saw it; the NPU machine (the adapter stand-in) writes
npu/debug_0/loss.csv; a record that cannot be written is one warning and the training goes on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.formats.loss_record import read_loss
from precision_tool.workspace import Workspace
from tests.capture.conftest import STANDIN, standin_env

pytestmark = [pytest.mark.tf]
SCRIPT = Path(__file__).parent / "scripts" / "loss_capture.py"


def _train(workspace: Path, mode: str, npu: bool = False, **env: str) -> dict:
    variables = standin_env(workspace, **env)
    if not npu:  # the golden side: the checkout alone on the path, no adapter
        variables["PYTHONPATH"] = variables["PYTHONPATH"].replace(str(STANDIN), "").lstrip(":")
    record = workspace.parent / f"{mode}.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), mode, str(record)], env=variables, capture_output=True,
                          text=True, timeout=300, cwd=workspace.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(record.read_text())


def _as_float32(values: list[float]) -> list[float]:
    return [float(np.float32(v)) for v in values]


def test_precision_tf_session_records_every_training_step_golden(tmp_path):
    ws = tmp_path / "pd"
    seen = _train(ws, "session")
    points = read_loss(Workspace(ws).golden_loss_file)
    assert [p.step for p in points] == [0, 1, 2, 3, 4]
    assert [p.loss for p in points] == _as_float32(seen["losses"])
    assert not Workspace(ws).loss_file(0).exists()
    # the capture knows which step it took: the replay records its loss there
    manifest = json.loads((Workspace(ws).checkpoint_dir / "manifest.json").read_text())
    assert manifest["step"] == 0
    assert [f["name"] for f in manifest["fetches"]].count("mean_squared_error/value:0") == 1


def test_on_the_npu_machine_the_record_is_npu_debug_0(tmp_path):
    ws = tmp_path / "pd"
    seen = _train(ws, "session", npu=True)
    points = read_loss(Workspace(ws).loss_file(0))
    assert [p.loss for p in points] == _as_float32(seen["losses"])
    assert not Workspace(ws).golden_loss_file.exists()


def test_runs_without_the_train_op_are_not_steps(tmp_path):
    ws = tmp_path / "pd"
    seen = _train(ws, "eval")
    assert [p.loss for p in read_loss(Workspace(ws).golden_loss_file)] == _as_float32(seen["losses"])


def test_loss_hook_records_a_monitored_session(tmp_path):
    ws = tmp_path / "pd"
    seen = _train(ws, "hook")
    points = read_loss(Workspace(ws).golden_loss_file)
    assert [p.step for p in points] == list(range(5))
    assert [p.loss for p in points] == _as_float32(seen["losses"])


def test_sess_dump_records_the_named_loss_and_gradient_norm(tmp_path):
    ws = tmp_path / "pd"
    seen = _train(ws, "named", PRECISION_TOOL_LOSS="objective", PRECISION_TOOL_GRAD_NORM="grad_norm:0")
    points = read_loss(Workspace(ws).golden_loss_file)
    assert [p.loss for p in points] == _as_float32(seen["losses"])
    assert [p.grad_norm for p in points] == _as_float32(seen["norms"])


def test_a_loss_name_the_graph_lacks_is_one_warning_and_training_goes_on(tmp_path):
    ws = tmp_path / "pd"
    seen = _train(ws, "named", PRECISION_TOOL_LOSS="no_such_tensor")
    assert len(seen["losses"]) == 5
    said = [w for w in seen["warnings"] if "PRECISION_TOOL_LOSS" in w]
    assert len(said) == 1 and "no_such_tensor" in said[0]
    assert not Workspace(ws).golden_loss_file.exists()


def test_a_record_that_cannot_be_written_warns_once_and_training_goes_on(tmp_path):
    ws = tmp_path / "pd"
    Workspace(ws).golden_loss_file.mkdir(parents=True)  # a folder where the record goes
    seen = _train(ws, "session")
    assert len(seen["losses"]) == 5
    said = [w for w in seen["warnings"] if "stopped recording the loss" in w]
    assert len(said) == 1, seen["warnings"]


def test_keras_records_each_batch(tmp_path):
    ws = tmp_path / "pd"
    seen = _train(ws, "keras")
    points = read_loss(Workspace(ws).golden_loss_file)
    assert [p.step for p in points] == list(range(10))  # 2 epochs of 5 batches, counted on
    assert [p.loss for p in points] == pytest.approx(seen["losses"], rel=1e-6)


def test_only_rank_0_records_and_the_switch_turns_recording_off(tmp_path):
    from precision_tool.capture.records.loss_recorder import recording_wanted

    assert recording_wanted({}) and recording_wanted({"RANK_ID": "0"}) and recording_wanted({"RANK": "0"})
    assert not recording_wanted({"RANK_ID": "3"}) and not recording_wanted({"PRECISION_TOOL_LOSS_RECORD": "0"})
    ws = tmp_path / "pd"
    seen = _train(ws, "session", RANK_ID="1")  # another device's process of a multi-device job
    assert len(seen["losses"]) == 5 and not Workspace(ws).golden_loss_file.exists()
    assert (Workspace(ws).checkpoint_dir / "manifest.json").is_file()  # the capture itself goes on
