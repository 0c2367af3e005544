"""Every "nothing to compare" says what to run: `tf_dump` when tfdbg dumps wait in tf/tf_debug, `train -d cpu`
when a captured step is there instead; in `vc`, in `ac -c`'s answer and in `ni`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]


@pytest.fixture
def no_golden(demo_workspace: Path, tmp_path: Path) -> Path:
    """The demo's workspace as it is before `tf_dump`: tfdbg dumps in tf/tf_debug, no tf/dump."""
    ws = tmp_path / "ws"
    shutil.copytree(demo_workspace, ws, symlinks=True)
    for folder in ("temp", "fix", "tf/dump"):
        shutil.rmtree(ws / folder, ignore_errors=True)
    return ws


def test_vc_ac_and_ni_say_run_tf_dump(no_golden: Path) -> None:
    hint = f"run `tf_dump` to extract the tfdbg dumps already in {no_golden / 'tf' / 'tf_debug'}"
    vc = run_cli("vc", data=no_golden)
    assert vc.status == 0, vc.out + vc.err
    assert hint in vc.out + vc.err
    ni = run_cli("ni", "bn2/FusedBatchNormV3", data=no_golden)
    assert f"  Compared     no golden tensors yet: {hint}" not in ni.out  # vc compared NPU with NPU: its table
    assert f"    no golden tensors yet: {hint}" in ni.out
    assert "  Tensors  NPU dumps in the origin layout (device padding cut), no golden tensors yet: " + hint in ni.out
    ac = run_cli("ac", "-c", data=no_golden)
    answer = ac.out.split("answer ─")[1].splitlines()
    assert answer[1] == f"no golden tensors to judge the NPU by: {hint}", answer
    assert answer[2].startswith("debug_0 vs debug_1: first divergent op [16] bn2/FusedBatchNormV3")


def test_ni_before_any_comparison_and_a_captured_step_says_train(no_golden: Path) -> None:
    shutil.rmtree(no_golden / "tf" / "tf_debug")  # only the step PrecisionTfSession captured is left
    hint = f"run `train -d cpu` to replay the step captured in {no_golden / 'tf' / 'checkpoints'} on CPU"
    ni = run_cli("ni", "bn2/FusedBatchNormV3", data=no_golden)
    assert ni.status == 0, ni.out + ni.err
    assert f"  Compared     no golden tensors yet (then `ac -c` compares the whole network): {hint}" in ni.out
    vc = run_cli("vc", data=no_golden)
    assert hint in vc.out + vc.err
