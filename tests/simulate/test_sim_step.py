"""`train -d sim` end to end: a user's TF1 script captured with PrecisionTfSession, its golden step
(`train -d cpu`), the simulated NPU run (`train -d sim`), then `ac -c` on it — real TensorFlow runs in
fresh processes, the CLI as a user types it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.capture.train.conftest import child_env, cli

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "attention_step.py"

pytestmark = [pytest.mark.tf, pytest.mark.slow]


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    """A workspace holding the captured step of scripts/attention_step.py and its golden tensors."""
    ws = tmp_path_factory.mktemp("sim_ws")
    proc = subprocess.run([sys.executable, str(SCRIPT), "1024", str(ws / "record.json")], env=child_env(ws),
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    golden = cli(ws, "train", "-d", "cpu")
    assert golden.returncode == 0, golden.stdout + golden.stderr
    return ws


def test_train_sim_writes_a_simulated_run_that_ac_checks(captured: Path) -> None:
    ws = captured
    sim = cli(ws, "train", "-d", "sim")
    assert sim.returncode == 0, sim.stdout + sim.stderr
    assert "npu/debug_0 is a SIMULATED NPU run" in sim.stdout
    marker = json.loads((ws / "npu" / "debug_0" / "simulated.json").read_text())
    assert marker["simulated"] is True and marker["precision_mode"] == "allow_mix_precision"
    assert marker["float16_ops"] > 100 and marker["dump_files"] == marker["tasks"]
    record = json.loads((ws / "npu" / "debug_0" / "run_config.json").read_text())  # beside the run's dumps
    assert record["side"] == "npu" and record["simulated"] is True and record["written_by"] == "train -d sim"
    assert record["npu_options"]["precision_mode"] == "allow_mix_precision" and record["dropout"] is None
    graph = next((ws / "npu" / "debug_0" / "graph").glob("*_Build.txt")).read_text()
    for npu_type in ("BatchMatMulV2", "SoftmaxV2", "Erf", "GatherV2D", "UnsortedSegmentSumD", "ApplyAdamD"):
        assert f'type: "{npu_type}"' in graph, npu_type
    check = cli(ws, "ac", "-c")
    assert check.returncode == 0, check.stdout + check.stderr
    out = check.stdout
    assert "(SIMULATED NPU run) vs golden" in out
    # what float16 does to this network, found by itself: layer norm's variance gradient (a sum whose
    # terms cancel) loses its precision in float16; the replay says so and writes the block list
    answer = out[out.index("answer ─"):]
    assert "first divergent op: [" in answer and "PRECISION" in answer
    assert (ws / "fix" / "ops_info.json").is_file()


def test_train_sim_honours_the_block_list_it_finds(captured: Path) -> None:
    """fix/ops_info.json (what ac -c wrote) changes the lists: its op types compute in float32."""
    ws = captured
    ops_info = ws / "fix" / "ops_info.json"
    ops_info.parent.mkdir(exist_ok=True)
    ops_info.write_text(json.dumps({"black-list": {"to-add": ["ReduceSumD", "BatchMatMulV2"]}}))
    sim = cli(ws, "train", "-d", "sim", "-a", "overflow")
    assert sim.returncode == 0, sim.stdout + sim.stderr
    report = json.loads((ws / "tf" / "checkpoints" / "replay_sim.json").read_text())
    assert report["mixlist"] == str(ops_info) and report["action"] == "overflow"
    debug = ws / "npu" / f"debug_{report['debug_id']}"
    graph = next((debug / "graph").glob("*_Build.txt")).read_text()
    block = graph[graph.index('type: "BatchMatMulV2"'):][:3000]
    assert "DT_FLOAT16" not in block.split("op {")[0]
    assert not (debug / "dump").exists()  # -a overflow: records only


def test_train_sim_refuses_two_actions_in_one_line(captured: Path) -> None:
    proc = cli(captured, "train", "-d", "sim", "-a", "dump|overflow")
    assert proc.returncode != 0
    assert ("train -d sim -a dump|overflow: the simulated NPU takes one of dump, overflow, with fusion_off or "
            "fusion_switch (the workspace's switch file) if you like, e.g. \"dump|fusion_switch\""
            in (proc.stdout + proc.stderr).strip().splitlines())


def test_a_keras_capture_is_simulated_with_the_golden_runs_op_names(tmp_path) -> None:
    """PrecisionKerasCapture's step: the graph Keras traces for it, derived and computed, compared by name
    with the golden tensors `train -d cpu` dumps through tfdbg v2."""
    import csv

    keras_script = ROOT / "tests" / "capture" / "train" / "scripts" / "capture_keras.py"
    proc = subprocess.run([sys.executable, str(keras_script), "capture", str(tmp_path / "record.json")],
                          env=child_env(tmp_path), capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert cli(tmp_path, "train", "-d", "cpu").returncode == 0
    sim = cli(tmp_path, "train", "-d", "sim")
    assert sim.returncode == 0, sim.stdout + sim.stderr
    assert "npu/debug_0 is a SIMULATED NPU run" in sim.stdout
    checked = cli(tmp_path, "ac", "-c")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "(SIMULATED NPU run) vs golden" in checked.stdout
    result = next((tmp_path / "temp" / "vector_compare").glob("*/result_*[0-9].csv"))
    rows = {row["GroundTruth"]: row for row in csv.DictReader(open(result, newline=""))}
    fused = rows["sequential_1/dense_1/MatMul,sequential_1/dense_1/BiasAdd"]  # MatMulBiasAddFusionPass
    assert fused["OpType"] == "MatMulV2" and float(fused["CosineSimilarity"]) > 0.999
    compared = [row for row in rows.values() if row["CosineSimilarity"] not in ("NaN", "")]
    assert len(compared) > 20 and all(float(row["CosineSimilarity"]) > 0.99 for row in compared)
    assert any(name.startswith("gradient_tape/") for name in rows)  # the backward pass matched by name too


CONTROL_FLOW_SCRIPT = """
import sys
import precision_tool.tf_config
import tensorflow as tf
from precision_tool.tf_session import PrecisionTfSession
v1 = tf.compat.v1
v1.disable_control_flow_v2()
g = tf.Graph()
with g.as_default():
    x = v1.placeholder(tf.float32, [4], name="x")
    w = v1.get_variable("w", [4], initializer=v1.ones_initializer())
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * w, lambda: x - w)
    loss = tf.reduce_sum(y * y)
    train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    init = v1.global_variables_initializer()
s = PrecisionTfSession(graph=g)
s.run(init)
s.run([train, loss], feed_dict={"x:0": [1.0, 2.0, 3.0, 4.0]})
"""


def test_control_flow_is_refused_in_one_line(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-c", CONTROL_FLOW_SCRIPT], env=child_env(tmp_path), capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sim = cli(tmp_path, "train", "-d", "sim")
    assert sim.returncode != 0
    last = (sim.stdout + sim.stderr).strip().splitlines()[-1]
    assert last.startswith("train -d sim: ") and "control flow and function calls" in last and "not simulated" in last, last
