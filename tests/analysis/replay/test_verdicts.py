"""Replay on the demo, on real TensorFlow: each verdict where the demo plants it, the fixes written, the
reproducer run on its own, the results saved, and `ac -c` replaying its suspects."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.analysis.results.metrics import METRIC_NAMES
from tests.conftest import TF_IMPORT_LEFTOVERS, run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

KERNEL_OP = "bn2/FusedBatchNormV3"
PRECISION_OP = "gradients/fc2/MatMul_grad/MatMul_1"


def _verdict(out: str, op: str) -> str:
    match = re.search(rf"replay \[\d+\] {re.escape(op)} \([^)]*\): ([A-Z ]+)\n", out)
    assert match, out[-3000:]
    return match.group(1).strip()


def test_kernel_verdict_writes_a_reproducer_that_runs_alone(replay_ws: Path):
    result = run_cli("replay", KERNEL_OP, data=replay_ws)
    assert result.status == 0, result.err[-2000:]
    assert _verdict(result.out, KERNEL_OP) == "KERNEL"
    assert "output 0 disagrees with TensorFlow in float32 and in float16" in result.out
    # the evidence: float32 and float16 replays both far from the NPU output; the golden replay reproduces golden
    assert re.search(r"out0 bn2/FusedBatchNormV3:0 float16: float32 replay cos 0\.70\d+ err [\d.e+-]+ ✗; "
                     r"float16 replay cos 0\.70\d+ err [\d.e+-]+ ✗; golden cos 0\.70\d+ err [\d.e+-]+ ✗; "
                     r"golden replay cos 1\.000000", result.out)
    assert "in0 conv2/Conv2D:0 vs golden: cos 1.000000" in result.out
    repro = replay_ws / "fix" / "repro_debug_0_16_bn2_FusedBatchNormV3"
    assert f"reproducer for the op's vendor: {repro}" in result.out
    names = sorted(p.name for p in repro.iterdir())
    # x, scale and offset are fed from the dump; the empty mean/variance of training mode are Consts
    assert names == ["graph_float16.pb", "graph_float32.pb", "input_0.npy", "input_1.npy", "input_2.npy",
                     "npu_output_0.npy", "npu_output_1.npy", "npu_output_2.npy", "npu_output_3.npy",
                     "npu_output_4.npy", "replay.json", "run.py"]
    spec = json.loads((repro / "replay.json").read_text())
    assert spec["op"] == KERNEL_OP and spec["tf_nodes"] == [KERNEL_OP]
    assert [f["source"] for f in spec["feeds"]] == ["npu input 0", "npu input 1", "npu input 2"]
    # run.py needs nothing of ours: run it from its own folder, without the checkout on the path
    env = {k: v for k, v in os.environ.items() if k not in TF_IMPORT_LEFTOVERS and k != "PYTHONPATH"}
    for variant in ("float32", "float16"):
        proc = subprocess.run([sys.executable, "run.py", variant], cwd=repro, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines = proc.stdout.strip().splitlines()
        assert len(lines) == 5
        assert re.match(r"bn2/FusedBatchNormV3:0 \(output 0\): cosine 0\.70\d+", lines[0]), lines
        assert all(re.search(r"cosine (1\.000000|0\.99999\d)", line) for line in lines[1:]), lines


def test_precision_verdict_writes_the_block_list(replay_ws: Path):
    result = run_cli("ni", "-c", PRECISION_OP, data=replay_ws)
    assert result.status == 0, result.err[-2000:]
    assert _verdict(result.out, PRECISION_OP) == "PRECISION"
    assert re.search(r"agrees with the float16 replay but not the float32 one: float16 overflows: the float32 "
                     r"result reaches [\d,]+, beyond float16's 65,504 \(\d+ value\(s\) become Inf\)", result.out)
    ops_info = replay_ws / "fix" / "ops_info.json"
    assert json.loads(ops_info.read_text()) == {"black-list": {"to-add": ["MatMulV2"]}}
    assert f'custom_op = precision_tool.tf_config.keep_in_float32(custom_op, "{ops_info}")' in result.out
    assert "npu_scope.keep_dtype_scope()" in result.out
    # a second precision verdict of the same type keeps the file as it is; an unreadable one is left alone
    again = run_cli("replay", PRECISION_OP, "-q", data=replay_ws)
    assert json.loads(ops_info.read_text()) == {"black-list": {"to-add": ["MatMulV2"]}}
    assert "out0" not in again.out  # -q: the verdicts only
    kept = ops_info.read_text()
    ops_info.write_text("{not json")
    damaged = run_cli("replay", PRECISION_OP, "-q", data=replay_ws)
    assert damaged.status == 0 and ops_info.read_text() == "{not json"
    assert re.search(r"fix/ops_info\.json not written: .*ops_info\.json: not JSON .*; it was not changed: fix or "
                     r"remove it, then replay again", damaged.out), damaged.out
    ops_info.write_text(kept)


def test_inherited_names_the_op_where_the_divergence_is_born(replay_ws: Path):
    result = run_cli("replay", "bn2/Relu", "pool2/MaxPool", data=replay_ws)
    assert result.status == 0, result.err[-2000:]
    assert _verdict(result.out, "bn2/Relu") == "INHERITED"
    assert "input 0 (bn2/FusedBatchNormV3:0) already differs from golden (cosine 0.70" in result.out
    assert "look at next: [16] bn2/FusedBatchNormV3 (BatchNorm)" in result.out
    assert _verdict(result.out, "pool2/MaxPool") == "INHERITED"
    assert "look at next: [17] bn2/Relu (Relu)" in result.out  # without a comparison: the producer


def test_ok_for_a_fused_op_and_an_inserted_cast(replay_ws: Path):
    result = run_cli("replay", "conv1/Conv2D", "trans_Cast_0", data=replay_ws)
    assert result.status == 0, result.err[-2000:]
    # conv1/Conv2D replays its three TF ops (Conv2D, BiasAdd, Relu) as one
    assert "replay [8] conv1/Conv2D (Conv2D ← conv1/Conv2D, conv1/BiasAdd, conv1/Relu): OK" in result.out
    assert _verdict(result.out, "trans_Cast_0") == "OK"
    assert "Cast (inserted by the compiler): replayed by numpy from its own input" in result.out


def test_results_are_saved_as_csv_and_json(replay_ws: Path):
    result = run_cli("replay", KERNEL_OP, "bn2/Relu", data=replay_ws)
    assert result.status == 0, result.err[-2000:]
    path = Path(re.search(r"replay results \([\d.]+ s, [\d.]+ s in TensorFlow\): (\S+)", result.out).group(1))
    assert path.parent.parent == replay_ws / "temp" / "replay"
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["OpId", "Op", "OpType", "Verdict", "Output", "TfTensor", "DataType", "Against",
                             "Agrees", *METRIC_NAMES]
    bn = [r for r in rows if r["Op"] == KERNEL_OP]
    assert {(r["Output"], r["Against"]) for r in bn} == {
        (str(k), a) for k in range(5) for a in ("float32 replay", "float16 replay", "golden", "golden replay")}
    first = next(r for r in bn if r["Output"] == "0" and r["Against"] == "float32 replay")
    assert first["Verdict"] == "kernel" and first["Agrees"] == "NO"
    assert 0.70 < float(first["CosineSimilarity"]) < 0.71
    saved = json.loads((path.parent / "replay.json").read_text())
    assert [(v["op"], v["verdict"]) for v in saved] == [(KERNEL_OP, "kernel"), ("bn2/Relu", "inherited")]
    assert saved[1]["upstream"].startswith("[16] bn2/FusedBatchNormV3")


def test_every_op_of_the_demo_replays_and_only_the_planted_ones_are_blamed(replay_ws: Path):
    """One child for all of them; every compute op of debug_0 gets a verdict, none `cannot replay`."""
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.analysis.replay.replay import replay_ops
    from precision_tool.config import Settings
    from precision_tool.workspace import Workspace

    index = GraphIndex(Workspace(replay_ws))
    index.load()
    entries = [e for e in index.entries() if e.debug_id == 0 and e.type not in ("Data", "Variable", "Const")]
    run = replay_ops(index, entries, replay_ws / "temp" / "replay_all", Settings())
    verdicts = {v.case.op_name: v.verdict for v in run.verdicts}
    assert len(verdicts) == len(entries) > 60
    assert [n for n, v in verdicts.items() if v == "cannot replay"] == []
    assert [n for n, v in verdicts.items() if v == "kernel"] == [KERNEL_OP]
    assert [n for n, v in verdicts.items() if v == "precision"] == [PRECISION_OP]
    # optimizer ops (resource variables) replay too
    assert verdicts["GradientDescent/update_conv1/kernel/ResourceApplyGradientDescent"] in ("inherited", "ok")


def test_ac_replays_its_suspects_beside_the_comparison(replay_ws: Path):
    result = run_cli("ac", "-c", data=replay_ws)
    assert result.status == 0, result.err[-2000:]
    assert _verdict(result.out, KERNEL_OP) == "KERNEL"
    assert _verdict(result.out, PRECISION_OP) == "PRECISION"
    # the answer block ends with the result folder, whole on a line of its own
    csv_dir = Path(re.search(r"^results \(`vcs -l N` lists more abnormal ops\):\n  (\S+)$", result.out, re.M).group(1))
    saved = json.loads((csv_dir / "replay" / "replay.json").read_text())
    assert [(v["op"], v["verdict"]) for v in saved] == [(KERNEL_OP, "kernel"), (PRECISION_OP, "precision")]
    assert json.loads((replay_ws / "fix" / "ops_info.json").read_text())["black-list"]["to-add"] == ["MatMulV2"]
    three = run_cli("ac", "-c", "--replay", "3", data=replay_ws)
    assert three.status == 0 and len(re.findall(r"^replay \[\d+\] ", three.out, re.M)) == 3
    assert _verdict(three.out, KERNEL_OP) == "KERNEL"
    none = run_cli("ac", "-c", "--replay", "0", data=replay_ws)
    assert none.status == 0 and "replay [" not in none.out


def test_run_lines_count_the_inherited_when_many_ops_were_replayed() -> None:
    """`ac --replay N` over many ops: the first verdict and every finding in full, the inherited counted."""
    from types import SimpleNamespace

    from precision_tool.render.replay import BRIEF_AFTER, run_lines

    def verdict(n: int, kind: str) -> SimpleNamespace:
        case = SimpleNamespace(op_name=f"op{n}", label=f"[{n}] op{n}", op_type="Add", tf_nodes=[f"op{n}"])
        return SimpleNamespace(case=case, verdict=kind, line="", evidence=(), outputs=(), inputs=(), upstream=None,
                               fixes=(), fp16="none", failed=False)

    kinds = ["kernel"] + ["inherited"] * BRIEF_AFTER + ["precision", "ok"]
    run = SimpleNamespace(verdicts=[verdict(n, k) for n, k in enumerate(kinds)], problems=[], seconds={},
                          csv_path=None)
    texts = [str(getattr(line, "plain", line)) for line in run_lines(run, evidence=False, brief=True)]
    assert [t.split(":")[0] for t in texts[:2]] == ["replay [0] op0 (Add)", "replay [11] op11 (Add)"]
    assert "and 10 INHERITED, 1 OK" in texts[-1]
    assert len(run_lines(run, evidence=False)) == len(kinds)  # `replay OP ...`: every verdict in full
