"""The training side on real TensorFlow 1.15 / Python 3.7 (the NPU adapter's TF1), against the shell on
this machine's TensorFlow 2: a step captured there replays on both bit for bit, a tfdbg v1 dump written
there is read by tf_dump, the NPU replay goes through the adapter stand-in after tf_config, and tf_config
builds the same adapter options on both."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.workspace import Workspace
from tests.capture.conftest import STANDIN, standin_env
from tests.conftest import run_cli
from tests.capture.tf115.conftest import ROOT, TF_VERSION, env_for, run37

pytestmark = [pytest.mark.tf, pytest.mark.slow]
TRAIN_SCRIPTS = ROOT / "tests" / "capture" / "train" / "scripts"
_STAMP = re.compile(r"\.\d+\.npy$")


def _golden(folder: Path) -> dict[str, np.ndarray]:
    return {_STAMP.sub("", path.name): np.load(path) for path in folder.glob("*.npy")}


def _train(workspace: Path, *args: str, standin: bool = False, env: dict[str, str] | None = None):
    extra = {"PYTHONPATH": f"{STANDIN}:{ROOT}"} if standin else {}
    return run_cli("train", *args, data=workspace, env={**extra, **(env or {})})


def test_the_training_side_imports_on_python37_with_only_what_tf115_brings(py37, tmp_path) -> None:
    probe = ("import sys; import precision_tool.tf_config, precision_tool.tf_session, tensorflow as tf; "
             "print(tf.__version__, sys.version_info[:2], sorted(m.split('.')[0] for m in sys.modules "
             "if m.split('.')[0] in ('rich', 'pandas', 'prompt_toolkit', 'ml_dtypes', 'graphviz')))")
    out = run37(py37, tmp_path, "-c", probe).stdout.split("\n")[-2]
    assert out == f"{TF_VERSION} (3, 7) []"


@pytest.fixture(scope="module")
def tf115_capture(py37, tmp_path_factory) -> Path:
    """A TF1 step captured by PrecisionTfSession on TF 1.15 (Python 3.7)."""
    workspace = tmp_path_factory.mktemp("tf115") / "ws"
    run37(py37, workspace, str(TRAIN_SCRIPTS / "capture_tf1.py"), "feed", str(workspace.parent / "record.json"))
    return workspace


def test_a_step_captured_on_tf115_replays_there_and_here_bit_for_bit(py37, tf115_capture, tmp_path) -> None:
    manifest = json.loads((Workspace(tf115_capture).checkpoint_dir / "manifest.json").read_text())
    assert manifest["kind"] == "tf1" and manifest["tensorflow"] == TF_VERSION
    there, here = tmp_path / "there", tmp_path / "here"
    for target in (there, here):
        shutil.copytree(tf115_capture, target)
    proc = _train(there, "-d", "cpu", "--python", py37)
    assert proc.status == 0, proc.out + proc.err
    assert run_cli("train", "-d", "cpu", data=here).status == 0
    on_tf1, on_tf2 = _golden(Workspace(there).golden_dir), _golden(Workspace(here).golden_dir)
    common = set(on_tf1) & set(on_tf2)
    # the forward pass, the gradients and the updates, dumped by both TensorFlows under the same names
    assert {"MatMul.0", "add.0", "Square.0", "loss.0", "gradients_MatMul_grad_MatMul_1.0",
            "GradientDescent_update_w_ApplyGradientDescent.0"} <= common
    assert len(common) >= 0.9 * max(len(on_tf1), len(on_tf2))
    assert [name for name in sorted(common) if on_tf1[name].tobytes() != on_tf2[name].tobytes()] == []
    replay = json.loads((Workspace(there).checkpoint_dir / "replay_cpu.json").read_text())
    assert replay["op_determinism"] is False and replay["seed"] == 2022


def test_a_tfdbg_v1_dump_written_by_tf115_is_read_by_tf_dump(py37, tmp_path) -> None:
    """TF 1.15 keeps ref variables (`conv1/w/read`); the values read back agree with each other."""
    run37(py37, tmp_path, str(ROOT / "tests" / "analysis" / "golden_extract" / "scripts" / "train_tf1.py"), "sess", "1")
    result = run_cli("tf_dump", data=tmp_path)
    assert result.status == 0, result.out + result.err
    golden = _golden(Workspace(tmp_path).golden_dir)
    assert {"conv1_w_read.0", "conv1_Conv2D.0", "conv1_BiasAdd.0", "conv1_Relu.0", "Mean.0"} <= set(golden)
    assert np.array_equal(golden["conv1_Relu.0"], np.maximum(golden["conv1_BiasAdd.0"], 0))
    bias = golden["conv1_BiasAdd.0"] - golden["conv1_Conv2D.0"]
    assert np.allclose(bias, golden["conv1_b_read.0"], atol=1e-6)
    xent = golden["SparseSoftmaxCrossEntropyWithLogits_SparseSoftmaxCrossEntropyWithLogits.0"]
    assert golden["Mean.0"] == pytest.approx(float(xent.mean()), rel=1e-6)
    assert "skipped          1 string tensors" in result.out


def test_the_npu_replay_on_tf115_imports_the_adapter_after_tf_config(py37, tf115_capture, tmp_path) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(tf115_capture, workspace)
    record = tmp_path / "imports.jsonl"
    proc = _train(workspace, "-d", "npu", "-a", "dump|fusion_off", "--python", py37, standin=True,
                  env={"NPU_STANDIN_IMPORT_RECORD": str(record)})
    assert proc.status == 0, proc.out + proc.err
    ws = Workspace(workspace)
    options = json.loads((ws.checkpoint_dir / "replay_npu_options.json").read_text())
    assert options["enable_dump"] is True and options["op_debug_level"] == 4
    assert options["fusion_switch_file"] == str(ws.fusion_off_file.resolve())
    (entry,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert entry["module"] == "npu_bridge.npu_init" and entry["tf_setup_imported"] is True
    assert entry["env"]["DUMP_GRAPH_PATH"] == str(ws.graph_dir(0).resolve())


def test_tf_config_builds_the_same_adapter_options_on_tf115_and_tf2(py37, tmp_path) -> None:
    probe = str(ROOT / "tests" / "capture" / "scripts" / "standin_probe.py")
    maps = {}
    for name, python in (("tf115", py37), ("tf2", sys.executable)):
        ws = tmp_path / name / "pd"
        ws.parent.mkdir()
        env = standin_env(ws) if name == "tf2" else env_for(ws, standin=True)
        proc = subprocess.run([python, probe], env=env, capture_output=True, text=True, timeout=600, cwd=ws.parent)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        maps[name] = json.loads(json.dumps(out).replace(str(tmp_path / name), "<ws>"))
    assert maps["tf115"]["actions"] == maps["tf2"]["actions"]
    assert maps["tf115"]["refused"] == maps["tf2"]["refused"]
