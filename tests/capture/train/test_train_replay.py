"""`train` on real captures: the demo's golden step replayed bit for bit, TF1 feeds and tf.data inputs, a
Keras model, the NPU path through the adapter stand-in, and the one-line refusals."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_tool.capture.step_manifest import FORMAT_VERSION, MANIFEST_NAME
from precision_tool.workspace import Workspace

from .conftest import STANDIN, cli, run_script

pytestmark = [pytest.mark.tf, pytest.mark.slow]
_STAMP = re.compile(r"\.\d+\.npy$")


def _golden_by_name(folder: Path) -> dict[str, Path]:
    """Golden files by '<node>.<slot>' (the µs timestamp of the file name differs between runs)."""
    found: dict[str, Path] = {}
    for path in folder.glob("*.npy"):
        key = _STAMP.sub("", path.name)
        assert key not in found, f"two golden files for {key}"
        found[key] = path
    return found


def _lines(proc) -> list[str]:
    """What the one-shot printed (errors go to stdout with the rest), blank lines left out."""
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]


def _replay_report(workspace: Path, device: str = "cpu") -> dict:
    return json.loads((Workspace(workspace).checkpoint_dir / f"replay_{device}.json").read_text())


def _fetch(report: dict, name: str) -> dict:
    (entry,) = [f for f in report["fetches"] if f["name"] == name]
    return entry


# --- the demo: bit for bit ------------------------------------------------------------------------------
def test_demo_replay_reproduces_every_golden_tensor_bit_for_bit(demo_copy) -> None:
    ws = Workspace(demo_copy)
    manifest = json.loads((ws.checkpoint_dir / MANIFEST_NAME).read_text())
    assert manifest["kind"] == "tf1" and manifest["trigger"] == "train_op" and manifest["checkpoint"] == "model"
    original = demo_copy / "golden_before"
    shutil.move(str(ws.golden_dir), original)
    shutil.move(str(ws.tf_debug_dir), demo_copy / "tf_debug_before")

    # --data relative to where the user stands (the replay's child runs in the workspace, not there)
    proc = cli(Path(demo_copy.name), "train", "-d", "cpu", "-a", "dump", cwd=demo_copy.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (demo_copy / demo_copy.name).exists()

    before, after = _golden_by_name(original), _golden_by_name(ws.golden_dir)
    assert len(before) > 100 and set(after) == set(before)
    for key, path in before.items():
        old, new = np.load(path), np.load(after[key])
        assert (old.dtype, old.shape) == (new.dtype, new.shape), key
        assert old.tobytes() == new.tobytes(), f"{key} differs after the replay"
    loss = _fetch(_replay_report(demo_copy), "loss/Mean:0")
    assert loss["same_as_captured"] is True
    assert "loss/Mean:0 = " in proc.stdout and f"{len(before)} golden tensors" in proc.stdout


def test_cpu_replay_refuses_a_workspace_that_already_holds_golden_dumps(demo_copy) -> None:
    proc = cli(demo_copy, "train", "-d", "cpu")
    assert proc.returncode != 0
    (line,) = _lines(proc)
    assert "tf/tf_debug already holds tfdbg dumps" in line and "mv " in line
    assert "tf/dump already holds golden .npy files" in line and line.count("mv ") == 2  # both, in one line
    assert not (Workspace(demo_copy).checkpoint_dir / "replay_cpu.json").exists()


# --- TF1: which step, what is saved, what the replay computes ------------------------------------------------
def _expected_loss(start: dict, x: list, y: list) -> float:
    """The first step's loss with dropout off, from the starting weights (float64)."""
    pred = np.asarray(x, np.float64) @ np.asarray(start["w"], np.float64) + np.asarray(start["b"], np.float64)
    return float(np.mean((pred - np.asarray(y, np.float64)) ** 2))


def test_tf1_capture_saves_the_first_training_steps_feeds_and_replays_it_without_dropout(tf1_feed) -> None:
    workspace, record = tf1_feed
    folder = Workspace(workspace).checkpoint_dir
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    inputs = {entry["tensor"]: entry for entry in manifest["inputs"]}
    assert set(inputs) == {"x:0", "y:0", "keep_prob:0"}
    first_x, first_y = record["batches"][0]  # the FIRST step's feeds, not the last run's
    assert np.load(folder / inputs["x:0"]["file"]).tolist() == first_x
    assert np.load(folder / inputs["y:0"]["file"]).tolist() == first_y
    assert float(np.load(folder / inputs["keep_prob:0"]["file"])) == 0.5
    captured_loss = np.load(folder / [f for f in manifest["fetches"] if f["name"] == "loss:0"][0]["file"])
    assert float(captured_loss) == np.float32(record["losses"][0])
    # the capture's run-config record: both dropouts, rate 0.3 a constant, the other computed from keep_prob
    run_config = Workspace(workspace).golden_run_config_file
    captured = json.loads(run_config.read_text())
    assert captured["written_by"] == "PrecisionTfSession"
    assert sorted((e["scope"], e["rate"]) for e in captured["dropout"]) == [("dropout", 0.3),
                                                                         ("dropout_1", "computed")]

    proc = cli(workspace, "train", "-d", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = _replay_report(workspace)
    assert sorted(report["dropout_off"]) == ["dropout", "dropout_1"] and report["dropout_not_switched"] == []
    # the golden tensors are the replay's now, and so is the record: dropout off
    replayed = json.loads(run_config.read_text())
    assert replayed["written_by"] == "train -d cpu" and replayed["side"] == "golden"
    assert sorted((e["scope"], e["rate"]) for e in replayed["dropout"]) == [("dropout", 0.0), ("dropout_1", 0.0)]
    # the checkpoint holds the weights BEFORE the step, and dropout (two kinds) is off in the replay
    assert _fetch(report, "loss:0")["value"] == pytest.approx(_expected_loss(record["start"], first_x, first_y),
                                                              rel=1e-5)
    golden = _golden_by_name(Workspace(workspace).golden_dir)
    assert "loss.0" in golden and "MatMul.0" in golden


def test_saving_the_step_does_not_change_training(tf1_feed, tmp_path) -> None:
    _workspace, record = tf1_feed
    plain = run_script(tmp_path, "capture_tf1.py", "plain_feed")
    assert plain["losses"] == record["losses"] and plain["start"] == record["start"]
    assert not (Workspace(tmp_path).checkpoint_dir / MANIFEST_NAME).exists()


def test_a_capture_that_cannot_be_saved_warns_and_training_goes_on(tf1_feed, tmp_path) -> None:
    _workspace, record = tf1_feed
    finalized = run_script(tmp_path, "capture_tf1.py", "finalized")
    assert finalized["losses"] == record["losses"]
    assert not (Workspace(tmp_path).checkpoint_dir / MANIFEST_NAME).exists()


def test_tf1_iterator_inputs_are_the_batch_the_step_consumed(tf1_iterator) -> None:
    workspace, record = tf1_iterator
    folder = Workspace(workspace).checkpoint_dir
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    from_iterator = {e["tensor"]: e for e in manifest["inputs"] if e["source"] == "iterator"}
    assert set(from_iterator) == {"IteratorGetNext:0", "IteratorGetNext:1"}
    first_x, first_y = record["batches"][0]
    assert np.load(folder / from_iterator["IteratorGetNext:0"]["file"]).tolist() == first_x
    assert np.load(folder / from_iterator["IteratorGetNext:1"]["file"]).tolist() == first_y
    proc = cli(workspace, "train", "-d", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _fetch(_replay_report(workspace), "loss:0")["value"] == pytest.approx(
        _expected_loss(record["start"], first_x, first_y), rel=1e-5)


def test_without_a_train_op_the_first_run_after_initialization_is_captured(tmp_path) -> None:
    record = run_script(tmp_path, "capture_tf1.py", "manual")
    folder = Workspace(tmp_path).checkpoint_dir
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["trigger"] == "variables_initialized"
    # the run reading the starting weights came first after init: it is the captured one (no feeds)
    assert manifest["inputs"] == []
    (fetch,) = manifest["fetches"]
    assert fetch["name"].startswith("w/") and fetch["file"]  # reading the variable w
    assert record["losses"]


# --- Keras ----------------------------------------------------------------------------------------------
def test_keras_capture_and_replay(keras_capture) -> None:
    workspace, record = keras_capture
    folder = Workspace(workspace).checkpoint_dir
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["kind"] == "keras" and (folder / manifest["model"]).is_file()
    (x_entry,) = [e for e in manifest["inputs"] if e["role"] == "x"]
    (y_entry,) = [e for e in manifest["inputs"] if e["role"] == "y"]
    assert np.load(folder / x_entry["file"]).tolist() == record["x"][:4]  # the first batch
    assert np.load(folder / y_entry["file"]).tolist() == record["y"][:4]
    run_config = json.loads(Workspace(workspace).golden_run_config_file.read_text())
    assert run_config["written_by"] == "PrecisionKerasCapture" and run_config["side"] == "golden"
    assert [e["scope"] for e in run_config["dropout"]] == ["drop"]

    proc = cli(workspace, "train", "-d", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = _replay_report(workspace)
    assert report["dropout_off"] == ["drop"]
    kernel1, bias1, kernel2, bias2 = (np.asarray(w, np.float64) for w in record["start"])
    hidden = np.maximum(np.asarray(record["x"][:4], np.float64) @ kernel1 + bias1, 0)
    expected = np.mean((hidden @ kernel2 + bias2 - np.asarray(record["y"][:4])) ** 2)
    assert _fetch(report, "loss")["value"] == pytest.approx(expected, rel=1e-5)
    assert len(_golden_by_name(Workspace(workspace).golden_dir)) > 10


def test_keras_golden_run_dumps_through_tfdbg_v2_and_tf_dump_reads_it(tmp_path) -> None:
    run_script(tmp_path, "capture_keras.py", "golden")
    ws = Workspace(tmp_path)
    assert any(p.name.startswith("tfdbg_events") for p in ws.tf_debug_dir.iterdir())
    proc = cli(tmp_path, "tf_dump")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = set(_golden_by_name(ws.golden_dir))
    assert any(name.endswith("MatMul.0") for name in names), sorted(names)[:20]


# --- the NPU side ---------------------------------------------------------------------------------------
def test_npu_without_the_adapter_is_one_line(tf1_feed) -> None:
    workspace, _record = tf1_feed
    proc = cli(workspace, "train", "-d", "npu")
    assert proc.returncode != 0
    line = _lines(proc)[-1]  # after the note saying the child starts
    assert "npu_bridge does not import in" in line and "set_env.sh" in line


def test_npu_fusion_off_builds_the_adapter_options_in_the_child(demo_copy) -> None:
    record = demo_copy / "adapter_imports.jsonl"
    proc = cli(demo_copy, "train", "-d", "npu", "-a", "dump|fusion_off", extra_path=str(STANDIN),
               env={"NPU_STANDIN_IMPORT_RECORD": str(record)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ws = Workspace(demo_copy)
    _assert_tf_config_came_first(record, "npu_bridge.npu_init", demo_copy)
    options = json.loads((ws.checkpoint_dir / "replay_npu_options.json").read_text())
    assert options["fusion_switch_file"] == str(ws.fusion_off_file.resolve())
    assert ws.fusion_off_file.is_file()
    assert options["enable_dump"] is True and options["dump_mode"] == "all"
    assert Path(options["dump_path"]).resolve().is_relative_to(demo_copy.resolve())
    assert str(ws.fusion_off_file.resolve()) in proc.stdout.replace("\n", "") or "fusion_off.cfg" in proc.stdout
    # the NPU side's run-config record: the options in force, the switch file by its content
    run_config = json.loads(ws.run_config_file(0).read_text())
    assert run_config["side"] == "npu" and run_config["written_by"] == "update_custom_op"
    assert run_config["npu_options"]["fusion_switch_file"] == options["fusion_switch_file"]
    assert len(run_config["file_digests"]["fusion_switch_file"]) == 16


def _assert_tf_config_came_first(record: Path, module: str, workspace: Path) -> None:
    """The adapter (which imports TensorFlow; npu_device reads NPU_DUMP_GRAPH then) was imported after
    tf_config's set-up (capture/tf_setup.py) had set the graph-dump variables and oneDNN off, as a training
    script's `import precision_tool.tf_config` does it."""
    (entry,) = [e for e in map(json.loads, record.read_text().splitlines()) if e["module"] == module]
    assert entry["tf_setup_imported"] is True
    env = entry["env"]
    assert env["NPU_DUMP_GRAPH"] == "true" and env["DUMP_GE_GRAPH"] == "2" and env["DUMP_GRAPH_LEVEL"] == "3"
    assert Path(env["DUMP_GRAPH_PATH"]).resolve() == Workspace(workspace.resolve()).graph_dir(0)
    assert env["TF_ENABLE_ONEDNN_OPTS"] == "0"


def test_a_fetch_the_capture_cannot_save_is_named_and_not_checked(tmp_path) -> None:
    run_script(tmp_path, "capture_tf1.py", "string_fetch")
    manifest = json.loads((Workspace(tmp_path).checkpoint_dir / MANIFEST_NAME).read_text())
    (text,) = [e for e in manifest["fetches"] if e["name"] == "loss_text:0"]
    assert "file" not in text and "pickle" in text["not_saved"]
    proc = cli(tmp_path, "train", "-d", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert "loss_text:0 (not checked against the captured run: the capture could not save its value" in out
    assert "loss:0 = " in out and "(captured run: " in out  # dropout was on in the capture, off in the replay


def test_keras_logs_that_cannot_be_added_warn_and_training_goes_on(tmp_path) -> None:
    record = run_script(tmp_path, "capture_keras.py", "logs_fail")
    assert "PrecisionKerasCapture: the first batch's logs" in " ".join(record["warnings"])
    assert record["batches_done"] == 2  # both batches trained after the failed write


def test_a_python_that_cannot_run_or_has_no_tensorflow_is_one_line(tf1_feed, tmp_path) -> None:
    import subprocess
    import sys

    source, _record = tf1_feed
    workspace = tmp_path / "ws"
    shutil.copytree(Workspace(source).checkpoint_dir, Workspace(workspace).checkpoint_dir)
    proc = cli(workspace, "train", "-d", "cpu", "--python", str(tmp_path / "no_such_python"))
    assert proc.returncode == 1
    line = _lines(proc)[-1]
    assert line.startswith(f"train --python {tmp_path / 'no_such_python'}: cannot run it") and "Traceback" not in proc.stdout
    bare = tmp_path / "bare"  # a Python with nothing installed
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    proc = cli(workspace, "train", "-d", "cpu", "--python", str(bare / "bin" / "python"))
    assert proc.returncode == 1
    assert _lines(proc)[-1].startswith(f"train: TensorFlow is not installed for {bare / 'bin' / 'python'}")
    assert not Workspace(workspace).tf_debug_dir.exists()  # the staging folder went with the failure


# --- refusals before any TensorFlow ---------------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["-d", "cpu", "-a", "overflow"], "on CPU only 'dump' applies"),
    (["-d", "cpu", "-a", "fusion_off"], "fusion_off is NPU-side"),
    (["-a", "dump|overflow"], "E10001"),
    (["-a", "dupm"], "unknown action dupm"),
    (["-d", "gpu"], "-d/--device takes one of: cpu, npu, sim, all"),
])
def test_impossible_options_are_one_line(tmp_path, args, words) -> None:
    proc = cli(tmp_path, "train", *args)
    assert proc.returncode != 0
    lines = _lines(proc)
    assert len(lines) == 1 and words in lines[0], lines


def test_missing_or_newer_or_incomplete_capture_is_one_line(tf1_feed, tmp_path) -> None:
    source, _record = tf1_feed
    proc = cli(tmp_path, "train", "-d", "cpu")
    (line,) = [line for line in _lines(proc) if not line.startswith("warning")]  # the folder is new
    assert proc.returncode != 0 and "no captured step" in line and "PrecisionTfSession" in line

    folder = Workspace(tmp_path).checkpoint_dir
    shutil.copytree(Workspace(source).checkpoint_dir, folder)
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    (folder / MANIFEST_NAME).write_text(json.dumps({**manifest, "version": FORMAT_VERSION + 1}))
    proc = cli(tmp_path, "train", "-d", "cpu")
    assert proc.returncode != 0 and "newer than this precision_tool reads" in _lines(proc)[-1]

    (folder / MANIFEST_NAME).write_text(json.dumps(manifest))
    (folder / manifest["inputs"][0]["file"]).unlink()
    proc = cli(tmp_path, "train", "-d", "cpu")
    assert proc.returncode != 0
    line = _lines(proc)[-1]
    assert "missing" in line and manifest["inputs"][0]["file"] in line


def test_keras_npu_replay_sets_the_tf2_adapter_options(keras_capture, tmp_path) -> None:
    source, _record = keras_capture
    workspace = tmp_path / "ws"
    shutil.copytree(Workspace(source).checkpoint_dir, Workspace(workspace).checkpoint_dir)
    record = tmp_path / "adapter_imports.jsonl"
    proc = cli(workspace, "train", "-d", "npu", "-a", "dump", extra_path=str(STANDIN),
               env={"NPU_STANDIN_IMPORT_RECORD": str(record)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ws = Workspace(workspace)
    _assert_tf_config_came_first(record, "npu_device", workspace)
    options = json.loads((ws.checkpoint_dir / "replay_npu_options.json").read_text())
    assert options["enable_dump"] == "1" and options["dump_mode"] == "all"
    assert Path(options["dump_path"]).resolve().is_relative_to(workspace.resolve())
    assert _replay_report(workspace, "npu")["dropout_off"] == ["drop"]


# --- a failed replay: one line, nothing left behind, the next run not blocked ------------------------------
def test_a_replay_failing_after_its_dump_leaves_no_tf_debug_and_the_retry_runs(tf1_feed, tmp_path) -> None:
    source, _record = tf1_feed
    workspace = tmp_path / "ws"
    ws = Workspace(workspace)
    shutil.copytree(Workspace(source).checkpoint_dir, ws.checkpoint_dir)
    manifest = json.loads((ws.checkpoint_dir / MANIFEST_NAME).read_text())
    loss_file = ws.checkpoint_dir / [f for f in manifest["fetches"] if f["name"] == "loss:0"][0]["file"]
    good = loss_file.read_bytes()
    loss_file.write_bytes(b"not an npy file")  # read after the step ran under tfdbg: the child fails late

    proc = cli(workspace, "train", "-d", "cpu")
    assert proc.returncode != 0
    line = _lines(proc)[-1]
    assert line.startswith("train -d cpu: the replay failed (exit 1): ValueError"), line
    log = ws.temp_dir / "train_replay_cpu.log"
    assert f"the full error output is in {log}" in " ".join(_lines(proc)[-2:]).replace("\n", "")
    assert "Traceback" not in proc.stdout + proc.stderr and "Traceback" in log.read_text()
    assert not ws.tf_debug_dir.exists() and not list((workspace / "tf").glob(".tf_debug*"))

    loss_file.write_bytes(good)
    proc = cli(workspace, "train", "-d", "cpu", env={"PRECISION_TOOL_OP_DETERMINISM": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any(ws.tf_debug_dir.iterdir()) and not list((workspace / "tf").glob(".tf_debug*"))
    assert _replay_report(workspace)["op_determinism"] is True  # the override reaches the child


def test_op_determinism_follows_the_capture_policy(tf1_feed) -> None:
    """No GPU here and no override: off, as tf_config.want_op_determinism decides (the fused softmax
    cross-entropy op stays in a rebuilt graph)."""
    workspace, _record = tf1_feed
    report_file = Workspace(workspace).checkpoint_dir / "replay_cpu.json"
    if not report_file.exists():
        ws = Workspace(workspace)
        for folder in (ws.tf_debug_dir, ws.golden_dir):
            shutil.rmtree(folder, ignore_errors=True)
        assert cli(workspace, "train", "-d", "cpu").returncode == 0
    assert json.loads(report_file.read_text())["op_determinism"] is False


def test_the_tf1_capture_records_where_each_op_was_made_for_the_replayed_golden(tf1_feed) -> None:
    """`train` replays the step from the meta graph, which keeps no Python stacks: PrecisionTfSession
    records them at capture (docs/source-lines.md), so `ni` can name the script's line of a replayed op."""
    from precision_tool.formats.tf.op_sources import read_op_sources, user_frame

    workspace, _record = tf1_feed
    script = Path(__file__).resolve().parent / "scripts" / "capture_tf1.py"
    sources = read_op_sources(Workspace(workspace).op_sources_file)
    assert sources is not None
    frame = user_frame(sources.stack("MatMul") or ())
    line = next(n for n, text in enumerate(script.read_text().splitlines(), 1) if "tf.matmul(x, w)" in text)
    assert frame is not None and frame.path == str(script) and frame.line == line
