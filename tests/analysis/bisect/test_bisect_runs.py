"""`bisect precision` on the demo and `bisect fusion` on `demo --bad-fusion`: real simulated NPU rounds
(`train -d sim`), compared with the demo's golden tensors, through the CLI as a user types it."""

from __future__ import annotations

import csv
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli, run_demo_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]
ROUND_COMMAND = Path(__file__).resolve().parent / "scripts" / "round_command.py"


def _copy(demo_workspace: Path, tmp_path: Path, keep_fix: bool = False) -> Path:
    """A copy of the session's demo, without the fix `ac -c` wrote (so the search has something to find)."""
    ws = tmp_path / "ws"
    shutil.copytree(demo_workspace, ws, symlinks=True)
    if not keep_fix:
        (ws / "fix" / "ops_info.json").unlink()
    return ws


def _rounds(ws: Path) -> list[dict[str, str]]:
    (folder,) = sorted((ws / "temp" / "bisect").iterdir())
    with (folder / "rounds.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def bad_fusion(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bad_fusion") / "ws"
    proc = run_demo_cli("demo", "--bad-fusion", str(root))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "first divergent op [25] fc1/MatMul (MatMulV2)" in proc.stdout
    return root


def test_bisect_precision_on_the_demo_keeps_matmulv2_alone(demo_workspace: Path, tmp_path: Path) -> None:
    ws = _copy(demo_workspace, tmp_path)
    result = run_cli("bisect", "precision", data=ws)
    assert result.status == 0, result.out + result.err
    assert json.loads((ws / "fix" / "ops_info.json").read_text()) == {"black-list": {"to-add": ["MatMulV2"]}}
    assert "bisect precision: MatMulV2 kept in float32: the run passes" in result.out
    assert "not searched: BatchNorm (a kernel verdict" in result.out  # bn2's planted fault: outside its reach
    assert "a linear search" in result.out
    rows = _rounds(ws)
    assert rows[0]["Set"] == "" and rows[0]["Outcome"] == "fail"  # CANN's lists: the float16 overflow
    assert any(r["Set"] == "MatMulV2" and r["Outcome"] == "pass" for r in rows)
    (folder,) = (ws / "temp" / "bisect").iterdir()
    assert json.loads((folder / "result.json").read_text())["kept"] == ["MatMulV2"]
    assert (folder / "round_000" / "verdict.json").is_file() and (folder / "round_000" / "ops_info.json").is_file()
    # the file written passes as it is: a second search has nothing to do
    again = run_cli("bisect", "precision", data=ws)
    assert again.status == 0 and "the run passes the check as it is" in again.out, again.out + again.err


def test_the_users_entries_are_kept(demo_workspace: Path, tmp_path: Path) -> None:
    ws = _copy(demo_workspace, tmp_path)
    mine = {"black-list": {"to-add": ["ReluGrad"]}, "white-list": {"to-remove": ["BatchMatMulV2"]}}
    (ws / "fix" / "ops_info.json").write_text(json.dumps(mine))
    result = run_cli("bisect", "precision", data=ws)
    assert result.status == 0, result.out + result.err
    written = json.loads((ws / "fix" / "ops_info.json").read_text())
    assert written == {"black-list": {"to-add": ["ReluGrad", "MatMulV2"]}, "white-list": {"to-remove": ["BatchMatMulV2"]}}


def test_fresh_searches_without_the_files_entries_and_keeps_them(demo_workspace: Path, tmp_path: Path) -> None:
    ws = _copy(demo_workspace, tmp_path, keep_fix=True)  # ac -c's MatMulV2 is there: nothing to search
    plain = run_cli("bisect", "precision", data=ws)
    assert plain.status == 0 and "--fresh" in plain.out
    fresh = run_cli("bisect", "precision", "--fresh", data=ws)
    assert fresh.status == 0, fresh.out + fresh.err
    assert "MatMulV2 kept in float32" in fresh.out
    assert json.loads((ws / "fix" / "ops_info.json").read_text()) == {"black-list": {"to-add": ["MatMulV2"]}}


def test_ctrl_c_mid_search_and_a_rerun_resumes(demo_workspace: Path, tmp_path: Path) -> None:
    ws = _copy(demo_workspace, tmp_path)
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    proc = subprocess.Popen([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(ws), "bisect",
                             "precision"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 300
    while time.time() < deadline:  # the base round finished: interrupt the next one
        folder = ws / "temp" / "bisect"
        if folder.is_dir() and any(folder.glob("*/round_001")):
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "interrupted" in out + err and not (ws / "fix" / "ops_info.json").exists()
    assert [r["Round"] for r in _rounds(ws)] == ["0"]
    again = run_cli("bisect", "precision", data=ws)
    assert again.status == 0, again.out + again.err
    assert "resuming the search" in again.out and "(from the earlier run)" in again.out
    assert json.loads((ws / "fix" / "ops_info.json").read_text()) == {"black-list": {"to-add": ["MatMulV2"]}}
    assert len(list((ws / "temp" / "bisect").iterdir())) == 1  # the same search, not a new one


def test_a_round_failing_another_way_stops_the_search(demo_workspace: Path, tmp_path: Path) -> None:
    ws = _copy(demo_workspace, tmp_path)
    command = f"{sys.executable} {ROUND_COMMAND}"
    result = run_cli("bisect", "precision", command, data=ws)
    assert result.status != 0
    text = result.out + result.err
    assert "round 0: float32: nothing changed → FAIL: the command failed (exit 3): ERROR: loss is NaN" in text
    assert "failed another way than the first failing round (exit 4: RuntimeError: device out of memory" in text
    assert not (ws / "fix" / "ops_info.json").exists()
    assert [r["Outcome"] for r in _rounds(ws)] == ["fail"]  # the stopping round is not counted


def test_bisect_fusion_names_the_planted_pass(bad_fusion: Path) -> None:
    result = run_cli("bisect", "fusion", data=bad_fusion)
    assert result.status == 0, result.out + result.err
    assert "bisect fusion: MatMulBiasAddFusionPass switched off: the run passes" in result.out
    switch = json.loads((bad_fusion / "fusion" / "fusion_switch.cfg").read_text())["Switch"]
    assert [name for group in switch.values() for name, value in group.items() if value == "off"] == [
        "MatMulBiasAddFusionPass"]
    # the written switch file: the simulated compile skips that pass and the run compares clean
    sim = run_cli("train", "-d", "sim", "-a", "dump|fusion_switch", data=bad_fusion)
    assert sim.status == 0 and "MatMulBiasAddFusionPass off" in sim.out, sim.out + sim.err
    debug = max((bad_fusion / "npu").glob("debug_*"), key=lambda p: int(p.name.split("_")[1]))
    (dump,) = (debug / "dump").iterdir()
    (graph,) = (debug / "graph").glob("*Build.txt")
    vc = run_cli("vc", "-lt", str(dump), "-g", str(graph), data=bad_fusion)
    assert vc.status == 0 and "first divergent op none" in vc.out, vc.out + vc.err


def test_bad_options_are_one_line(demo_workspace: Path, tmp_path: Path) -> None:
    for args, expected in ((("fusion", "--fresh"), "bisect --fresh: it leaves fix/ops_info.json out"),
                           (("precision", "--cosine", "2"), "bisect --cosine 2.0: give a cosine between 0 and 1"),
                           (("precision", "--outputs", ","), "bisect --outputs: name at least one op")):
        result = run_cli("bisect", *args, data=demo_workspace)
        assert result.status != 0 and expected in result.err + result.out, result.out + result.err
        assert "Traceback" not in result.err
    empty = run_cli("bisect", "precision", data=tmp_path)
    assert empty.status != 0 and "bisect: no golden tensors in" in empty.err + empty.out
    # the search ends by writing the switch file: a damaged one is said before any round, never overwritten
    ws = _copy(demo_workspace, tmp_path, keep_fix=True)
    switch = ws / "fusion" / "fusion_switch.cfg"
    switch.parent.mkdir(exist_ok=True)
    switch.write_text("{not json")
    damaged = run_cli("bisect", "fusion", data=ws)
    assert damaged.status != 0 and f"{switch}: is not JSON" in damaged.err + damaged.out, damaged.out + damaged.err
    assert "Traceback" not in damaged.err and switch.read_text() == "{not json"
    assert not (ws / "temp" / "bisect").exists()


def test_a_kernel_fault_is_outside_bisect_precisions_reach(bad_fusion: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(bad_fusion, ws, symlinks=True)
    shutil.rmtree(ws / "temp" / "bisect", ignore_errors=True)
    replay = run_cli("replay", "-d", "2", "-q", "fc1/MatMul", data=ws)  # the fused op's verdict: KERNEL
    assert replay.status == 0 and "KERNEL" in replay.out, replay.out + replay.err
    result = run_cli("bisect", "precision", data=ws)
    assert result.status != 0
    assert "outside bisect precision's reach" in result.out + result.err
    assert [r["Outcome"] for r in _rounds(ws)] == ["kernel"]
    assert json.loads((ws / "fix" / "ops_info.json").read_text()) == {"black-list": {"to-add": ["MatMulV2"]}}


def test_the_check_on_chosen_outputs_and_on_the_loss(demo_workspace: Path, tmp_path: Path) -> None:
    ws = _copy(demo_workspace, tmp_path)
    grad = "gradients/fc2/MatMul_grad/MatMul_1"  # the loss-scaled gradient that overflows in float16
    result = run_cli("bisect", "precision", "--outputs", grad, "--cosine", "0.999", data=ws)
    assert result.status == 0, result.out + result.err
    assert f"round 0: float32: nothing changed → FAIL: {grad}:output:0 cosine NaN/Inf ≤ 0.999" in result.out
    assert "MatMulV2 kept in float32: the run passes" in result.out
    # the step's loss is computed before any gradient: float16's overflow does not show in it
    (ws / "fix" / "ops_info.json").unlink()
    loss = run_cli("bisect", "precision", "--loss-tol", "0.01", data=ws)
    assert loss.status == 0, loss.out + loss.err
    assert "loss within 0.01 (relative) of the golden loss: holds" in loss.out
    assert "the run passes the check as it is" in loss.out


def test_a_failing_simulated_round_stops_the_search_with_its_own_line(demo_workspace: Path, tmp_path: Path) -> None:
    ws = _copy(demo_workspace, tmp_path)
    (ws / "npu" / "sim_device.json").write_text("{not json")
    result = run_cli("bisect", "precision", data=ws)
    assert result.status != 0
    text = result.out + result.err
    assert "round 0: the simulated run failed (exit 2): train -d sim: " in text
    assert "sim_device.json is not the JSON object demo --bad-fusion writes" in text
    assert "Traceback" not in text and not (ws / "fix" / "ops_info.json").exists()
