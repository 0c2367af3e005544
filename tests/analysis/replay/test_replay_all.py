"""`replay --all` and `ac -c --precheck` on the demo, on real TensorFlow: every compute op replayed from its
own NPU inputs by a pool of children, the planted kernel fault ranked first by its own error, the ops after
it inheriting theirs, a child that crashes costing one op; and on a real Dask cluster. (The ranking in the
report: tests/analysis/report/test_report_replay_all.py.)"""

from __future__ import annotations

import csv
import math
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

KERNEL_OP = "bn2/FusedBatchNormV3"
PRECISION_OP = "gradients/fc2/MatMul_grad/MatMul_1"
NOT_COMPUTED = ("Data", "Variable", "Const")


def _ranked(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _ranking_path(out: str) -> Path:
    match = re.search(r"^ranking: (\S+ranked\.csv);", out, re.M)
    assert match, out[-3000:]
    return Path(match.group(1))


def _compute_ops(workspace: Path) -> dict[str, str]:
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.workspace import Workspace

    index = GraphIndex(Workspace(workspace))
    index.load()
    return {e.name: e.type for e in index.entries() if e.debug_id == 0 and e.type not in NOT_COMPUTED}


@pytest.fixture(scope="module")
def replayed_all(replay_ws: Path):  # type: ignore[no-untyped-def]
    result = run_cli("replay", "--all", "-j", "2", data=replay_ws, timeout=900)
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    return result


def test_every_compute_op_is_ranked_and_the_planted_fault_is_first(replay_ws: Path, replayed_all) -> None:
    rows = _ranked(_ranking_path(replayed_all.out))
    ranked = [r for r in rows if r["Rank"]]
    ops = _compute_ops(replay_ws)
    # every compute op once; nothing the NPU does not compute; none that could not be replayed
    assert sorted(r["Op"] for r in rows) == sorted(ops)
    assert len(ranked) == len(rows)
    first = ranked[0]
    assert (first["Op"], first["Verdict"], first["Rank"]) == (KERNEL_OP, "kernel", "1")
    assert float(first["ErrorRatio"]) > 100 and first["Baseline"] == "float16 replay"
    # far from what float16 itself does: every op not blamed sits near 1 or below
    others = [float(r["ErrorRatio"]) for r in ranked[1:]]
    assert max(others) < 10, ranked[1:4]
    # the overflow float16 itself makes is not the NPU's fault: judged against the float16 replay
    precision = next(r for r in ranked if r["Op"] == PRECISION_OP)
    assert precision["Verdict"] == "precision" and int(precision["InfNanApart"]) > 0
    assert math.isfinite(float(precision["ErrorRatio"]))
    # the ten metrics against the float32 replay, as msaccucmp names them
    assert float(first["CosineSimilarity"]) < 0.9 and first["KullbackLeiblerDivergence"] != ""
    # the forward ops after the fault compute correctly on their own inputs: they inherit
    verdicts = {r["Op"]: r["Verdict"] for r in ranked}
    for op in ("bn2/Relu", "pool2/MaxPool", "fc1/MatMul", "fc2/MatMul"):
        assert verdicts[op] == "inherited", (op, verdicts[op])
    assert [op for op, v in verdicts.items() if v == "kernel"] == [KERNEL_OP]


def test_the_table_shows_the_worst_first_and_the_findings_further_down(replayed_all) -> None:
    out = replayed_all.out
    assert re.search(r"replay --all \(npu/debug_0\): (\d+) of \1 compute ops replayed on CPU from their own NPU "
                     r"inputs \(\d+ data, variables and constants left out\) by 1 TensorFlow process on this "
                     r"machine", out), out[:600]
    assert re.search(r"1 KERNEL, 1 PRECISION, \d+ INHERITED, \d+ OK", out)
    rows = re.findall(r"^\s*(\d+) │ (\w+)\s+│[^│]+│[^│]+│[^│]+│ \[(\d+)\] (\S+)", out, re.M)
    assert rows[0][:2] == ("1", "KERNEL") and rows[0][3] == KERNEL_OP
    assert len([r for r in rows if int(r[0]) <= 10]) == 10
    # the precision op ranks low (float16 itself overflows there), so it is shown below the ten
    assert any(r[3] == PRECISION_OP and r[1] == "PRECISION" and int(r[0]) > 10 for r in rows), rows
    assert f"replay [16] {KERNEL_OP} (BatchNorm): KERNEL" in out


def test_ac_precheck_says_which_abnormal_ops_inherit(replay_ws: Path) -> None:
    result = run_cli("ac", "-c", "--precheck", data=replay_ws, timeout=900)
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    match = re.search(r"^the comparison's (\d+) abnormal ops: 2 by their own error, (\d+) inherit it from upstream$",
                      result.out, re.M)
    assert match, result.out[-4000:]
    assert int(match.group(2)) == int(match.group(1)) - 2
    assert f"[16] {KERNEL_OP}: its own error explains it (kernel)" in result.out
    assert f"{PRECISION_OP}: its own error explains it (precision)" in result.out
    # the precheck replaced the suspects' replay: each verdict is shown once, before the answer
    assert result.out.count(f"replay [16] {KERNEL_OP} (BatchNorm): KERNEL") == 1
    folder = _ranking_path(result.out).parent
    assert folder.name == "precheck" and folder.parent.parent.name == "vector_compare"
    # the answer takes its verdicts from the precheck
    answer = result.out[result.out.index("answer ─"):]
    assert "KERNEL: on the NPU's own inputs" in answer and "PRECISION:" in answer


def test_the_pool_spreads_the_cases_over_children(replay_ws: Path, replayed_all, tmp_path: Path,
                                                   monkeypatch) -> None:
    """Two real TensorFlow children at once (the demo's 49 cases go to one child by default: a second one
    pays off only past CASES_PER_CHILD cases), each with its own log, the same results as one child."""
    import json
    import shutil

    from precision_tool.analysis.replay import replay_pool
    from precision_tool.child_env import tf_child_env

    source = _ranking_path(replayed_all.out).parent
    cases = sorted(p.parent for p in source.glob("*/case.json") if json.loads(p.read_text())["mode"] == "tf")[:6]
    folders = []
    for case in cases:
        copy = tmp_path / case.name
        shutil.copytree(case, copy)
        (copy / "result.json").unlink()
        text = (copy / "case.json").read_text().replace(str(case), str(copy))
        (copy / "case.json").write_text(text)
        folders.append(str(copy))
    monkeypatch.setattr(replay_pool, "CASES_PER_CHILD", 1)
    done = []
    pool = replay_pool.run_local(folders, 2, tmp_path, str(replay_ws), tf_child_env(replay_ws), None, done.append)
    assert pool.failures == {} and pool.where == "2 TensorFlow processes on this machine"
    assert sum(done) == len(folders) and len(pool.logs) == 2 and all(log.is_file() for log in pool.logs)
    for case, copy in zip(cases, folders):
        mine = json.loads((Path(copy) / "result.json").read_text())
        theirs = json.loads((case / "result.json").read_text())
        assert mine["status"] == theirs["status"] == "ok" and mine["variants"] == theirs["variants"]


def _crashing_python(tmp_path: Path) -> Path:
    wrapper = tmp_path / "crashing-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests" / "crashing_replay_child.py"}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper


def test_a_child_that_crashes_costs_one_op(fresh_ws: Path, tmp_path: Path) -> None:
    """A SIGSEGV in the middle of a chunk: that op fails with the crash, the child starts again on the rest."""
    result = run_cli("replay", "--all", "-j", "1", "--python", str(_crashing_python(tmp_path)), data=fresh_ws,
                     env={"CRASH_ON_CASE": "_17_bn2_Relu"}, timeout=900)
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    rows = _ranked(_ranking_path(result.out))
    failed = [r for r in rows if not r["Rank"]]
    assert [r["Op"] for r in failed] == ["bn2/Relu"]
    assert "was killed by SIGSEGV while replaying this op" in failed[0]["Reason"]
    assert len(rows) == len(_compute_ops(fresh_ws)) and rows[0]["Op"] == KERNEL_OP
    assert "cannot replay 1 op(s):" in result.out
    log = next((_ranking_path(result.out).parent).glob("replay_child_0.log")).read_text()
    assert log.count("$ ") == 2 and "exit -11" in log  # started again once, after the crash


def test_usage_errors_are_one_line(replay_ws: Path) -> None:
    for args, said in ((("replay",), "name at least one op to replay"),
                       (("replay", "--all", KERNEL_OP), "give op names or --all, not both"),
                       (("replay", KERNEL_OP, "-j", "2"), "-j goes with --all"),
                       (("replay", "--all", "-d", "7"), "npu/debug_7 has no Build graph ops to replay")):
        result = run_cli(*args, data=replay_ws)
        assert result.status == 1, args
        lines = [line for line in (result.out + result.err).splitlines() if line.strip()]
        assert len(lines) == 1 and said in lines[0], (args, lines)


def test_replay_all_on_a_dask_cluster(replay_ws: Path, tmp_path: Path) -> None:
    """Each chunk a Dask task whose worker runs the child itself; the same verdicts as the local pool."""
    distributed = pytest.importorskip("distributed")
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # the workers import precision_tool from this checkout
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  env=env) as cluster:
        result = run_cli("replay", "--all", "--scheduler", cluster.scheduler_address, data=replay_ws, timeout=900)
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    assert f"by the Dask cluster at {cluster.scheduler_address} (2 workers, 2 threads)" in result.out
    rows = _ranked(_ranking_path(result.out))
    assert rows[0]["Op"] == KERNEL_OP and all(r["Rank"] for r in rows)
    assert len(rows) == len(_compute_ops(replay_ws))
