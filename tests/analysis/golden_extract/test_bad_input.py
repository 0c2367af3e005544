"""tf_dump on missing, empty, damaged, mixed dumps and a full disk: one clear line, no half files."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from precision_tool.formats.tf.tfdbg_v1 import find_runs
from precision_tool.formats.tf.tfdbg_v2 import trace_files

ROOT = Path(__file__).resolve().parents[3]


def test_missing_and_empty_tf_debug_say_how_to_dump(cli, tmp_path):
    missing = cli("tf_dump", data=tmp_path / "ws")
    assert missing.status == 1 and "sess_dump" in missing.out and "Traceback" not in missing.out + missing.err
    (tmp_path / "ws" / "tf" / "tf_debug").mkdir(parents=True)
    empty = cli("tf_dump", data=tmp_path / "ws")
    assert empty.status == 1 and "no tfdbg dumps" in empty.out and "sess_dump" in empty.out


def test_dump_root_found_above_and_device_folder(cli, copy_workspace, v1_sess_workspace, tmp_path):
    ws = copy_workspace(v1_sess_workspace)
    # the precision_data/tf folder instead of tf_debug: the runs are found below it
    above = cli("tf_dump", "--dir", str(ws / "tf"), "--out", str(tmp_path / "a"), data=ws)
    assert above.status == 0 and "tf_debug (tfdbg v1)" in above.out
    run = find_runs(ws / "tf" / "tf_debug")[-1]
    device = next(run.path.glob("_tfdbg_device_*"))
    inside = cli("tf_dump", "--dir", str(device), "--out", str(tmp_path / "b"), data=ws)
    assert inside.status == 0 and run.name in inside.out
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(p.name for p in (tmp_path / "b").iterdir())


def test_truncated_event_file_is_named_and_skipped(cli, copy_workspace, v1_sess_workspace):
    ws = copy_workspace(v1_sess_workspace)
    run = find_runs(ws / "tf" / "tf_debug")[-1]
    victim = next(run.path.rglob("Conv2D_0_DebugIdentity_*"))
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    result = cli("tf_dump", data=ws)
    assert result.status == 1
    text = " ".join(result.out.split())
    assert "Conv2D_0_DebugIdentity" in text and "skipped" in text and "Traceback" not in text
    golden = ws / "tf" / "dump"
    assert "conv1_Relu.0" in " ".join(p.name for p in golden.iterdir())
    assert not list(golden.glob("conv1_Conv2D.0.*"))


def test_truncated_v2_trace_file_keeps_the_records_before(cli, copy_workspace, v2_workspace):
    ws = copy_workspace(v2_workspace)
    traces = trace_files(ws / "tf" / "tf_debug")[0]
    full = cli("tf_dump", "--run", "all", "--out", str(ws / "full"), data=ws)
    data = traces.read_bytes()
    traces.write_bytes(data[: len(data) - 100])
    cut = cli("tf_dump", "--run", "all", data=ws)
    assert full.status == 0 and cut.status == 1
    assert traces.name in " ".join(cut.out.split()) and "cut short" in cut.out
    written = {p.name for p in (ws / "tf" / "dump").iterdir()}
    assert written and written < {p.name for p in (ws / "full").iterdir()}


def test_mixed_v1_and_v2_asks_for_format(cli, tmp_path, copy_workspace, v1_sess_workspace, v2_workspace):
    ws = copy_workspace(v1_sess_workspace)
    import shutil

    shutil.copytree(v2_workspace / "tf" / "tf_debug", ws / "tf" / "tf_debug" / "v2")
    mixed = cli("tf_dump", data=ws)
    assert mixed.status == 1 and "--format v1" in mixed.out and "tfdbg v2" in mixed.out
    v1 = cli("tf_dump", "--format", "v1", data=ws)
    v2 = cli("tf_dump", "--format", "v2", "--out", str(tmp_path / "v2"), data=ws)
    assert v1.status == 0 and "(tfdbg v1)" in v1.out
    assert v2.status == 0 and "(tfdbg v2)" in v2.out


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, like a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))


def test_full_disk_stops_without_half_files(copy_workspace, v1_sess_workspace):
    ws = copy_workspace(v1_sess_workspace)
    proc = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(ws),
                           "tf_dump"], capture_output=True, text=True, preexec_fn=_limit_file_size,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "NO_COLOR": "1",
                               "PYTHONDONTWRITEBYTECODE": "1"}, timeout=120)  # no cut .pyc files
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no room to write" in proc.stdout and "stopped" in proc.stdout
    golden = ws / "tf" / "dump"
    assert not [p for p in golden.iterdir() if not p.name.endswith(".npy")]  # no temp files left
    assert list(golden.iterdir())  # what fitted was written before the stop
    for path in golden.iterdir():
        np.load(path)  # every file there is complete
    retry = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(ws),
                            "tf_dump"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                                                                             "COLUMNS": "200"})
    assert retry.returncode == 0 and "already there" in retry.stdout


def test_tf_dump_names_what_is_wrong_with_dir_out_and_the_training_command(cli, tmp_path):
    """--dir that does not exist, --out that is a file, a training command that dumps nothing."""
    result = cli("tf_dump", "--dir", str(tmp_path / "absent"), data=tmp_path)
    assert result.status == 1 and result.out.startswith(f"{tmp_path / 'absent'} does not exist: check the path")
    result = cli("tf_dump", "python3 -c pass", data=tmp_path)
    assert result.status == 1
    assert "ran but wrote no tfdbg dumps into" in result.out and "sess_dump" in result.out


def test_summary_prints_a_long_golden_folder_whole(cli, v1_sess_workspace, copy_workspace):
    ws = copy_workspace(v1_sess_workspace, "long")
    out = ws / ("a_golden_folder_whose_name_is_longer_than_any_terminal_line_" * 2) / "golden"
    result = cli("tf_dump", "--out", str(out), data=ws, env={"COLUMNS": "80"})
    assert result.status == 0
    assert f"  golden folder    {out}\n" in result.out  # one line in a pipe: never cut, never wrapped
    assert "…" not in result.out
