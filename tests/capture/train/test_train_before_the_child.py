"""What `train` checks before it starts a TensorFlow child (fast: a fake capture, no TensorFlow): a
read-only workspace is one line naming the folder, and `-d all`'s refusal of an old tf_debug says how to
replay the NPU side alone."""

from __future__ import annotations

import pytest

from precision_tool.workspace import Workspace
from tests.users import make_writable_again, read_only_user_command

from .conftest import cli, fake_tf1_capture


def _lines(proc) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]


@pytest.fixture
def captured(tmp_path):
    workspace = tmp_path / "ws"
    Workspace(workspace).checkpoint_dir.mkdir(parents=True)
    fake_tf1_capture(Workspace(workspace).checkpoint_dir)
    yield workspace
    make_writable_again(workspace)


@pytest.mark.parametrize("device", ["cpu", "npu"])
def test_a_read_only_workspace_is_one_line_before_any_tensorflow(captured, device) -> None:
    proc = cli(captured, "train", "-d", device, "-a", "dump", wrap=read_only_user_command)
    _assert_refused(proc, captured, "tf", device)


def test_npu_folders_are_checked_too(captured) -> None:
    """tf/ writable, the rest of the workspace not: the NPU run's own folder is the one named."""

    def tf_writable(command, workspace):
        wrapped = read_only_user_command(command, workspace)
        for path in [workspace / "tf", *(workspace / "tf").rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)
        return wrapped

    proc = cli(captured, "train", "-d", "npu", "-a", "dump", wrap=tf_writable)
    _assert_refused(proc, captured, "npu/debug_0", "npu")


def _assert_refused(proc, workspace, folder: str, device: str) -> None:
    assert proc.returncode != 0
    text = " ".join(line.strip() for line in _lines(proc))
    assert f"cannot write the replay folder {workspace / folder}: Permission denied" in text, text
    assert "Traceback" not in text and "PermissionDeniedError" not in text
    assert "TensorFlow child process" not in text  # refused before the child started
    assert not (Workspace(workspace).checkpoint_dir / f"replay_{device}.json").exists()


def test_all_refused_by_an_old_tf_debug_names_the_npu_only_replay(captured) -> None:
    ws = Workspace(captured)
    ws.tf_debug_dir.mkdir(parents=True)
    (ws.tf_debug_dir / "run_1").mkdir()
    proc = cli(captured, "train", "-d", "all")
    assert proc.returncode != 0
    (line,) = _lines(proc)
    assert line.startswith("train -d all:") and "tf_debug already holds tfdbg dumps" in line
    assert line.endswith("(or `train -d npu` to replay only the NPU side)")
    proc = cli(captured, "train", "-d", "cpu")
    (line,) = _lines(proc)
    assert "already holds" in line and "train -d npu" not in line
