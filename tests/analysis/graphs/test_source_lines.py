"""Where each op was made in the user's code (the demo's network.py plays the user's model): `ni OP` shows
the line of each original TF op, `ni -a` the whole stack, `ac -c` names the line under the first divergent
op and in the answer, `vcs --source` in each panel; a workspace without the record, or with a damaged one,
says so in one line. Through the one-shot CLI on the demo's real files (its golden run recorded them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import DemoRun, run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

NETWORK = Path(__file__).resolve().parents[3] / "precision_tool" / "demo" / "network.py"


def _line_of(needle: str, after: int = 0) -> int:
    return next(n for n, line in enumerate(NETWORK.read_text().splitlines(), 1) if needle in line and n > after)


def test_ni_shows_the_line_that_made_the_op(demo_workspace: Path) -> None:
    shown = run_cli("ni", "bn2/FusedBatchNormV3", data=demo_workspace)
    assert shown.status == 0, shown.out + shown.err
    lines = shown.out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("Source"))
    assert f"network.py:{_line_of('v1.nn.fused_batch_norm(')} in build_model()" in lines[at]
    assert "v1.nn.fused_batch_norm(h, gamma, beta" in lines[at + 1]
    # a fused op: the line of each of its original ops
    fused = run_cli("ni", "conv1/Conv2D", data=demo_workspace).out
    for code in ('tf.nn.conv2d(x, kernel, 1, "SAME", name="Conv2D")', 'tf.nn.bias_add(h, bias, name="BiasAdd")',
                 'tf.nn.relu(h, name="Relu")'):
        assert f"network.py:{_line_of(code)} in build_model()" in fused and code in fused


def test_ni_a_shows_the_whole_stack(demo_workspace: Path) -> None:
    shown = run_cli("ni", "-a", "gradients/fc2/MatMul_grad/MatMul_1", data=demo_workspace).out
    assert f"network.py:{_line_of('optimizer.compute_gradients(')} in build_training_graph()" in shown
    assert "tensorflow/python/ops/math_grad.py" in shown  # the frames inside TensorFlow too


def test_without_the_record_or_with_a_damaged_one_ni_says_so(demo_workspace: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ws"
    shutil.copytree(demo_workspace, copy, ignore=shutil.ignore_patterns("temp"))
    record = copy / "tf" / "source" / "op_sources.json"
    record.write_text('{"format": "precision_tool.op_sources", "version": 1, "files": 3}')
    damaged = run_cli("ni", "bn2/FusedBatchNormV3", data=copy)
    assert damaged.status == 0 and "Traceback" not in damaged.out + damaged.err
    assert f"{record}" in damaged.out and "missing or mistyped fields" in damaged.out
    record.unlink()
    missing = run_cli("ni", "bn2/FusedBatchNormV3", data=copy)
    assert missing.status == 0
    assert "not recorded: the golden run was captured without tf_config.sess_dump" in missing.out


def test_ac_c_and_vcs_name_the_line_of_the_first_divergent_op(demo_run: DemoRun, demo_workspace: Path) -> None:
    made = f"made at network.py:{_line_of('v1.nn.fused_batch_norm(')} in build_model(): h, _, _ = v1.nn.fused_batch_norm("
    out = demo_run.out  # the demo ran `ac -c --report`
    divergent = out.index("first divergent op: [16] bn2/FusedBatchNormV3 (BatchNorm; golden")
    assert out[divergent:].splitlines()[1].strip().startswith(made)
    answer = out[out.index("\nanswer "):]
    verdict = answer.index("first divergent op: [16] bn2/FusedBatchNormV3 (BatchNorm), out0")
    assert answer[verdict:].splitlines()[1].strip().startswith(made)
    shown = run_cli("vcs", "--source", "-l", "2", data=demo_workspace)
    assert shown.status == 0, shown.out + shown.err
    panel_rows = [line.strip("│ ") for line in shown.out.splitlines() if line.startswith("│ made at")]
    assert panel_rows[0].startswith(f"made at network.py:{_line_of('v1.nn.fused_batch_norm(')} in build_model()")
    relu = _line_of('h = tf.nn.relu(h, name="Relu")', after=_line_of("v1.nn.fused_batch_norm("))  # bn2/Relu
    assert panel_rows[1].startswith(f"made at network.py:{relu} in build_model()")
    assert "│ made at" not in run_cli("vcs", "-l", "2", data=demo_workspace).out  # only when asked
