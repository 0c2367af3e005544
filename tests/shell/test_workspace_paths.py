"""One workspace path: however the user names the workspace (`--data ./ws`, `.`, `../x/ws`, a symlink, or
`data DIR` in the shell), every child process (the replay's TensorFlow child, `train`'s) works on that same
folder, and the answers are the ones an absolute path gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]


@pytest.fixture
def places(demo_workspace: Path, tmp_path: Path) -> dict[str, Path]:
    """A copy of the demo workspace at x/ws, a sibling folder y/ to stand in, and a symlink link → x/ws."""
    ws = tmp_path / "x" / "ws"
    shutil.copytree(demo_workspace, ws, symlinks=True)
    shutil.rmtree(ws / "temp", ignore_errors=True)  # the session demo's results: each test makes its own
    (tmp_path / "y").mkdir()
    (tmp_path / "link").symlink_to(ws)
    return {"tmp": tmp_path, "x": tmp_path / "x", "ws": ws, "y": tmp_path / "y"}


# (how the workspace is named, from where) for each way a user names it
FORMS = {
    "./ws": ("./ws", "x"),
    ".": (".", "ws"),
    "../x/ws": ("../x/ws", "y"),
    "symlink": ("link", "tmp"),
}


def _no_nested_workspace(ws: Path) -> None:
    """The child of an earlier version resolved a relative path a second time, from inside the workspace."""
    assert not (ws / "ws").exists() and not (ws / "x").exists() and not (ws / "link").exists()


@pytest.mark.parametrize("form", FORMS)
def test_ac_c_gives_the_kernel_and_precision_verdicts_however_the_workspace_is_named(places, form) -> None:
    data, where = FORMS[form]
    result = run_cli("--data", data, "ac", "-c", cwd=places[where])
    out = result.out + result.err
    assert result.status == 0, out[-3000:]
    assert "replay [16] bn2/FusedBatchNormV3 (BatchNorm): KERNEL" in out
    assert "replay [48] gradients/fc2/MatMul_grad/MatMul_1 (MatMulV2): PRECISION" in out
    assert "CANNOT REPLAY" not in out
    _no_nested_workspace(places["ws"])


@pytest.mark.parametrize("form", [".", "../x/ws"])
def test_replay_works_from_a_relative_workspace(places, form) -> None:
    data, where = FORMS[form]
    result = run_cli("--data", data, "replay", "16", "-q", cwd=places[where])
    assert result.status == 0, result.out + result.err
    assert "bn2/FusedBatchNormV3 (BatchNorm): KERNEL" in result.out
    # the reproducer lands in the workspace the user named, under its absolute path
    assert str(places["ws"] / "fix" / "repro_debug_0_16_bn2_FusedBatchNormV3") in result.out.replace(
        str(places["tmp"] / "link"), str(places["ws"]))
    _no_nested_workspace(places["ws"])


@pytest.mark.parametrize("form", FORMS)
def test_data_dir_in_the_shell_then_replay(places, form) -> None:
    data, where = FORMS[form]
    result = run_cli(stdin=f"data {data}\nreplay 48 -q\n", cwd=places[where])
    assert result.status == 0, result.out + result.err
    assert "(MatMulV2): PRECISION" in result.out, result.out
    shown = places["tmp"] / "link" if form == "symlink" else places["ws"]
    assert f"workspace: {shown}" in result.out  # absolute, as the children get it
    _no_nested_workspace(places["ws"])


@pytest.mark.parametrize("form", ["../x/ws", "symlink"])
def test_train_cpu_from_a_relative_or_symlinked_workspace(places, form) -> None:
    data, where = FORMS[form]
    ws = places["ws"]
    shutil.move(str(ws / "tf" / "dump"), places["tmp"] / "golden_before")  # train -d cpu writes them anew
    shutil.move(str(ws / "tf" / "tf_debug"), places["tmp"] / "tf_debug_before")
    result = run_cli("--data", data, "train", "-d", "cpu", cwd=places[where])
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    assert len(list((ws / "tf" / "dump").glob("*.npy"))) > 100
    _no_nested_workspace(ws)
