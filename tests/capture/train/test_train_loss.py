"""Loss records through `train`: a real TF1 training through PrecisionTfSession records each step's loss into
tf/loss.csv; `train -d cpu` puts its replay's loss at the captured step, `train -d npu` (the adapter stand-in)
and `train -d sim` theirs into npu/debug_N/loss.csv; `loss` then compares the step both recorded."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precision_tool.formats.loss_record import read_loss
from precision_tool.workspace import Workspace

from .conftest import STANDIN, cli, run_script

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def test_training_records_every_step_and_each_replay_its_step(tmp_path) -> None:
    record = run_script(tmp_path, "capture_tf1.py", "feed")
    ws = Workspace(tmp_path)
    trained = read_loss(ws.golden_loss_file)
    assert [(p.step, p.loss) for p in trained] == [(s, float(np.float32(v))) for s, v in enumerate(record["losses"])]

    proc = cli(tmp_path, "train", "-d", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    replay = json.loads((ws.checkpoint_dir / "replay_cpu.json").read_text())
    assert replay["loss"]["tensor"] == "loss:0" and replay["loss"]["step"] == 0
    assert f"loss {replay['loss']['value']:.6g} (loss:0) of step 0 recorded in {ws.golden_loss_file}" in proc.stdout
    golden = read_loss(ws.golden_loss_file)
    # the replay (dropout off) is the golden step 0 now; the steps it did not run stay as trained
    assert golden[0].loss == replay["loss"]["value"] and golden[1:] == trained[1:]

    proc = cli(tmp_path, "train", "-d", "npu", "-a", "dump", extra_path=str(STANDIN))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (npu,) = read_loss(ws.loss_file(0))
    assert npu.step == 0 and npu.loss == pytest.approx(golden[0].loss, rel=1e-6)
    shown = cli(tmp_path, "loss")
    assert "golden and NPU agree within LOSS_TOLERANCE 0.01 at the one step both recorded" in shown.stdout

    proc = cli(tmp_path, "train", "-d", "sim")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (simulated,) = read_loss(ws.loss_file(1))
    assert f"of step 0 recorded in {ws.loss_file(1)}" in proc.stdout
    assert simulated.loss == pytest.approx(golden[0].loss, rel=0.01)  # float16 matmuls: close, not equal
