"""tf_dump on real tfdbg v1 dumps: every .npy equals TensorFlow's own DebugDumpDir.get_tensor()."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from precision_tool.formats.tf.golden import golden_file_name, scan_golden_dir
from precision_tool.formats.tf.tfdbg_v1 import find_runs


def _check_against_debug_dump_dir(run_dir: Path, golden: Path) -> int:
    """Every numeric DebugIdentity tensor of the run has its golden file with identical values."""
    from tensorflow.python.debug.lib.debug_data import DebugDumpDir

    dump = DebugDumpDir(str(run_dir), validate=False)
    checked = 0
    for datum in dump.dumped_tensor_data:
        value = datum.get_tensor()
        name = golden_file_name(datum.node_name, datum.output_slot, datum.timestamp)
        if not isinstance(value, np.ndarray) or value.dtype.kind in "OSU":
            assert not (golden / name).exists()  # resource handles and strings are skipped
            continue
        ours = np.load(golden / name)
        if value.dtype.name == "bfloat16":
            assert ours.dtype == np.float32
            value = value.astype(np.float32)  # exact: every bf16 is a float32
        assert ours.dtype == value.dtype and ours.shape == value.shape, name
        np.testing.assert_array_equal(ours, value)
        checked += 1
    assert checked == len(list(golden.glob("*.npy")))
    return checked


def test_sess_dump_then_tf_dump_matches_tensorflow(cli, copy_workspace, v1_sess_workspace):
    ws = copy_workspace(v1_sess_workspace)
    result = cli("tf_dump", data=ws)
    assert result.status == 0, result.out + result.err
    runs = find_runs(ws / "tf" / "tf_debug")
    assert len(runs) == 2 and runs[-1].name in result.out  # the last run by default
    golden = ws / "tf" / "dump"
    checked = _check_against_debug_dump_dir(runs[-1].path, golden)
    assert f"written          {checked} " in result.out
    assert "resource handles" in result.out and "string tensors" in result.out
    keys = scan_golden_dir(golden)
    for key in ("conv1_Conv2D.0", "conv1_BiasAdd.0", "conv1_Relu.0", "dense_MatMul.0", "dense_BiasAdd.0",
                "relu_bf16.0", "pool1.0"):
        assert key in keys, key  # tf_config kept the unfused ops
    bf16 = np.load(keys["relu_bf16.0"])
    assert (bf16.view(np.uint32) & 0xFFFF).max() == 0  # a bf16 value held exactly in float32


def test_rerun_force_and_run_selection(cli, copy_workspace, v1_sess_workspace):
    ws = copy_workspace(v1_sess_workspace)
    first = cli("tf_dump", data=ws)
    assert first.status == 0
    golden = ws / "tf" / "dump"
    count = len(list(golden.glob("*.npy")))
    again = cli("tf_dump", data=ws)
    assert again.status == 0 and "written          0 " in again.out and f"already there    {count} " in again.out
    victim = sorted(golden.glob("*.npy"))[0]
    victim.unlink()
    refill = cli("tf_dump", data=ws)
    assert "written          1 " in refill.out and victim.exists()
    forced = cli("tf_dump", "--force", data=ws)
    assert f"written          {count} " in forced.out
    both = cli("tf_dump", "--run", "all", data=ws)
    assert both.status == 0 and f"already there    {count} " in both.out
    assert len(list(golden.glob("*.npy"))) == 2 * count  # the first run's tensors have their own timestamps
    runs = find_runs(ws / "tf" / "tf_debug")
    only_first = cli("tf_dump", "--run", "0", "--out", str(ws / "first"), data=ws)
    assert only_first.status == 0 and runs[0].name in only_first.out
    _check_against_debug_dump_dir(runs[0].path, ws / "first")
    named = cli("tf_dump", "--dir", str(runs[0].path), "--out", str(ws / "named"), data=ws)
    assert named.status == 0
    assert sorted(p.name for p in (ws / "named").iterdir()) == sorted(p.name for p in (ws / "first").iterdir())
    bad = cli("tf_dump", "--run", "7", data=ws)
    assert bad.status == 1 and "the dump holds 2 runs (0 to 1; -1 is the last)" in bad.out


def test_monitored_session_with_estimator_dump(cli, copy_workspace, v1_hook_workspace):
    ws = copy_workspace(v1_hook_workspace)
    result = cli("tf_dump", data=ws)
    assert result.status == 0, result.out
    run = find_runs(ws / "tf" / "tf_debug")[-1]
    assert _check_against_debug_dump_dir(run.path, ws / "tf" / "dump") > 30
    assert "conv1_Conv2D.0" in scan_golden_dir(ws / "tf" / "dump")


def test_tf_dump_runs_the_training_command_when_tf_debug_is_empty(cli, tmp_path):
    ws = tmp_path / "ws"
    result = cli("tf_dump", "python3 tests/analysis/golden_extract/scripts/train_tf1.py sess 1", data=ws)
    assert result.status == 0, result.out + result.err
    assert "is empty: running" in result.out
    assert "conv1_Conv2D.0" in scan_golden_dir(ws / "tf" / "dump")
    again = cli("tf_dump", "python3 tests/analysis/golden_extract/scripts/train_tf1.py sess 1", data=ws)
    assert again.status == 0 and "not running the training command" in again.out


def test_tf_dump_works_where_tensorflow_cannot_be_imported(cli, copy_workspace, v1_sess_workspace,
                                                           v2_workspace, no_tf_pythonpath):
    import subprocess
    import sys

    probe = subprocess.run([sys.executable, "-c", "import tensorflow"], env={"PYTHONPATH": no_tf_pythonpath},
                           capture_output=True, text=True)
    assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr
    for source, name in ((v1_sess_workspace, "v1"), (v2_workspace, "v2")):
        ws = copy_workspace(source, name)
        result = cli("tf_dump", "--run", "all", data=ws, env={"PYTHONPATH": no_tf_pythonpath})
        assert result.status == 0, result.out + result.err
        assert len(list((ws / "tf" / "dump").glob("*.npy"))) > 30
