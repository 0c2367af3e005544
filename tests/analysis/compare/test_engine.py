"""The engine without the reference: resume, bad input, summaries, old CSV headers, cp, ac, big tensors."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.compare import network_compare as nc
from precision_tool.analysis.results.metrics import FileSource, compare_arrays, compare_sources, leaf_ranges, tree_sum
from precision_tool.analysis.results import digest_cache
from precision_tool.analysis.results.digest_cache import summarize_result_csv
from precision_tool.analysis.results.results import (
    ResultReader, read_result_csv, read_result_text, summarize,
)
from precision_tool.config import Settings
from precision_tool.workspace import Workspace


def _spec(net, name: str = "r.csv") -> nc.RunSpec:  # type: ignore[no-untyped-def]
    return nc.RunSpec("test", str(net.dump_dir), name, golden_dir=str(net.golden_dir), graph_path=str(net.graph_txt))


def test_interrupt_then_resume_gives_the_same_csv(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    """Ctrl-C (a KeyboardInterrupt in the run loop) leaves a valid .partial CSV; --resume finishes it to the
    very bytes an uninterrupted run writes."""
    net = make_net(tmp_path / "pd", chain=30, elements=512)
    whole_dir = tmp_path / "whole"
    whole_dir.mkdir()
    nc.run_specs([_spec(net)], whole_dir, workers=2, threshold=0.98)
    whole = (whole_dir / "r.csv").read_bytes()

    workspace = Workspace(tmp_path / "ws")
    cut_dir = workspace.new_result_dir()

    def interrupt(label: str, done: int, total: int) -> None:
        if done >= 12:
            raise KeyboardInterrupt

    with pytest.raises(nc.CompareInterrupted) as caught:
        nc.run_specs([_spec(net)], cut_dir, workers=2, threshold=0.98, progress=interrupt)
    assert "--resume" in str(caught.value)
    partial = cut_dir / "r.csv.partial"
    assert not (cut_dir / "r.csv").exists()
    rows = list(csv.reader(partial.open(newline="")))
    assert rows[0][0] == "Index" and 1 < len(rows) < whole.count(b"\r\n")
    assert summarize(read_result_csv(partial)).complete is False
    # a hard kill may also leave half a line: resume cuts it
    with partial.open("ab") as handle:
        handle.write(b"40,Add,chain/op_x,float16,0,chain")
    assert nc.interrupted_result_dir(workspace) == cut_dir
    runs = nc.run_specs(nc.read_run_file(cut_dir), cut_dir, workers=2, threshold=0.98, resume=True)
    assert (cut_dir / "r.csv").read_bytes() == whole
    assert runs[0].summary.complete


def test_corrupt_dump_becomes_a_row_and_the_run_goes_on(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "pd", corrupt=True)
    out = tmp_path / "out"
    out.mkdir()
    runs = nc.run_specs([_spec(net)], out, workers=1, threshold=0.98)
    table = read_result_csv(runs[0].csv_path)
    corrupt = [r for r in table.rows if r.npu_op == "corrupt/Op"]
    assert len(corrupt) == 1
    assert str(net.corrupt) in corrupt[0].reason and "truncated" in corrupt[0].reason
    assert any(r.npu_op == "relu1/Relu" and r.cosine < 0.9 for r in table.rows)


def test_golden_without_graph_falls_back_to_names_and_says_so(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "pd")
    out = tmp_path / "out"
    out.mkdir()
    warnings: list[str] = []
    spec = nc.RunSpec("names", str(net.dump_dir), "r.csv", golden_dir=str(net.golden_dir))
    runs = nc.run_specs([spec], out, workers=1, threshold=0.98, on_warning=warnings.append)
    assert any("by op name only" in w for w in warnings)
    rows = {r.tensor_index: r for r in read_result_csv(runs[0].csv_path).rows}
    assert rows["relu1_Relu:output:0"].cosine == pytest.approx(0.56316, abs=1e-5)
    assert rows["missing_golden_Op:output:0"].reason.startswith("[missing_golden_Op] There is no the ground truth")
    assert rows["dense_MatMul:output:0"].cosine > 0.99  # FRACTAL_NZ → ND without a graph


def test_npu_vs_npu_by_op_name(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    left = make_net(tmp_path / "a", seed=1)
    right = make_net(tmp_path / "b", seed=1)
    out = tmp_path / "out"
    out.mkdir()
    spec = nc.RunSpec("npu", str(left.dump_dir), "r.csv", right_dir=str(right.dump_dir))
    runs = nc.run_specs([spec], out, workers=1, threshold=0.98)
    text = runs[0].csv_path.read_text()
    assert text.startswith("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,Address,TensorIndex,")
    table = read_result_csv(runs[0].csv_path)
    compared = [r for r in table.rows if r.values["MaxAbsoluteError"] not in ("NaN",)]
    assert compared and all(r.values["MaxAbsoluteError"] in ("0.000000", "nan") for r in compared)


def test_old_leftop_rightop_csv_is_read_by_header(tmp_path: Path) -> None:
    path = tmp_path / "result_1.csv"
    path.write_text(
        "Index,LeftOp,RightOp,TensorIndex,CosineSimilarity,MaxAbsoluteError,CompareFailReason\r\n"
        "0,a,a,a:input:0,0.999,0.1,\r\n0,a,a,a:output:0,0.5,1.2,\r\n"
        "1,b,b,b:input:0,0.5,1.2,\r\n1,b,b,b:output:0,0.4,1.5,\r\n"
    )
    summary = summarize(read_result_csv(path), 0.98)
    assert [op.npu_op for op in summary.abnormal_ops] == ["a", "b"]
    assert summary.first_divergent_op is not None and summary.first_divergent_op.npu_op == "a"
    assert summary.first_failure is not None and not summary.first_failure.is_graph_input


def test_rows_read_piece_by_piece_are_those_of_the_whole_text(tmp_path: Path) -> None:
    # a ResultReader fed piece by piece must give the rows and problems (with their line numbers) of
    # reading the whole CSV at once
    text = ("Index,NPUDump,GroundTruth,TensorIndex,CosineSimilarity,MaxAbsoluteError,CompareFailReason\r\n"
            "0,a,a,a:input:0,0.999,0.1,\r\n0,a,a,a:output:0,0.5,1.2,\r\n"
            '1,b,b,b:output:0,abc,1.5,"two\r\nlines"\r\n'
            "2,c,c,c:output:0,0.99\r\n")
    whole = read_result_text(text, tmp_path / "r.csv")
    lines = text.split("\r\n")
    pieces = ["\r\n".join(lines[:1]) + "\r\n", "\r\n".join(lines[1:3]) + "\r\n",
              "\r\n".join(lines[3:5]) + "\r\n", lines[5] + "\r\n"]
    assert "".join(pieces) == text
    reader = ResultReader(tmp_path / "r.csv")
    for piece in pieces:
        reader.feed(piece)
    table = reader.table()
    assert table.header == whole.header
    assert [(r.tensor_index, r.cosine == r.cosine and r.cosine, r.reason, r.cells) for r in table.rows] == \
        [(r.tensor_index, r.cosine == r.cosine and r.cosine, r.reason, r.cells) for r in whole.rows]
    assert table.problems == whole.problems and len(table.problems) == 2
    # a record's line is its last (the 'abc' row spans lines 4-5); the short row is line 6
    assert "line 5" in table.problems[0] and "line 6" in table.problems[1]
    with pytest.raises(Exception, match="empty"):
        ResultReader(tmp_path / "r.csv").table()


def test_a_runs_summary_is_that_of_its_csv_read_back(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "pd", corrupt=True)
    out = tmp_path / "out"
    out.mkdir()
    run = nc.run_specs([_spec(net)], out, workers=2, threshold=0.98)[0]
    again = summarize(read_result_csv(run.csv_path), 0.98)
    assert repr(run.summary) == repr(again)  # (repr: NaN != NaN)
    assert run.summary.abnormal_ops and run.summary.tensors_not_compared


@pytest.mark.parametrize("variant", ["labelled", "overflow", "range", "npu_vs_npu", "one_worker"])
def test_the_workers_digest_summarises_as_the_csv_read_back(variant: str, demo_workspace: Path,
                                                             tmp_path: Path) -> None:
    """vc summarises the rows from what the workers digested as they wrote them (RowDigest), not by reading
    its CSV back: every field of the summary must be what reading the CSV gives, for each kind of CSV."""
    import dataclasses

    from precision_tool.analysis.compare.compare_runs import workspace_labeller

    workspace = Workspace(demo_workspace)
    spec = nc.workspace_specs(workspace, "digest", [])[0]
    spec = dataclasses.replace(spec, csv_name="r.csv", **{
        "labelled": {}, "one_worker": {},
        "overflow": {"overflow_detection": True},
        "range": {"op_range": "1,60,2"},
        "npu_vs_npu": {"right_dir": spec.npu_dir, "golden_dir": None},
    }[variant])
    labeller = workspace_labeller(workspace)
    run = nc.run_specs([spec], tmp_path, workers=1 if variant == "one_worker" else 2, threshold=0.98,
                       labels=labeller)[0]
    again = summarize(read_result_csv(run.csv_path), 0.98, name_only=spec.name_only, labels=labeller(spec))
    assert repr(run.summary) == repr(again)
    held = summarize_result_csv(run.csv_path, 0.98, name_only=spec.name_only, labels=labeller(spec),
                                cache_dir=tmp_path / "cache")  # vc's own digest, held in this process
    assert repr(held) == repr(again)
    assert not (tmp_path / "cache" / "digests").exists()
    digest_cache._WRITTEN.clear()  # (as in another process: vcs after a one-shot vc)
    cells_only = summarize_result_csv(run.csv_path, 0.98, name_only=spec.name_only, labels=labeller(spec))
    assert repr(cells_only) == repr(again)
    for _ in range(2):  # the digest read, then the one kept (vcs, ac)
        kept = summarize_result_csv(run.csv_path, 0.98, name_only=spec.name_only, labels=labeller(spec),
                                    cache_dir=tmp_path / "cache")
        assert repr(kept) == repr(again)
    assert list((tmp_path / "cache" / "digests").glob("*.json"))
    assert run.summary.ops and run.summary.tensors_compared
    if variant == "overflow":
        assert run.summary.overflow_column and run.summary.overflow_ops
    if variant == "npu_vs_npu":
        assert run.summary.npu_vs_npu
    else:
        assert run.summary.abnormal_ops and run.summary.labelled and run.summary.tensors_not_compared


@pytest.mark.parametrize("text", [
    # msaccucmp's older header (LeftOp/RightOp), no MaxAbsoluteError column
    "Index,LeftOp,RightOp,TensorIndex,CosineSimilarity,CompareFailReason\r\n"
    "0,a,a,a:input:0,0.999,\r\n0,a,a,a:output:0,0.5,\r\n1,b,b,NaN,NaN,no dump\r\n",
    # a cut row, a metric that is not a number, NaN/inf data, a reason over two lines, OverFlow with spaces
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,CosineSimilarity,"
    "MaxAbsoluteError,KullbackLeiblerDivergence,CompareFailReason\r\n"
    "0,Add,a,float16,1,a,float32,a:input:0,[2], NO ,0.999,0.1,0.0,\r\n"
    "0,Add,a,float16,1,a,float32,a:output:0,[2], YES ,nan,inf,abc,\r\n"
    '1,Mul,b,float16,1,b,float32,b:output:0,[2],NO,0.2,1.5,0.1,"two\r\nlines"\r\n'
    "2,Mul,c,float16,1,c,float32,c:output:0\r\n"
    "3,Mul,d,NaN,NaN,d,NaN,NaN,NaN,YES,NaN,NaN,NaN,no dump\r\n",
    # two Address columns (NPU vs NPU), rows of one op apart
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,Address,TensorIndex,Shape,CosineSimilarity,"
    "MaxAbsoluteError,CompareFailReason\r\n"
    "0,Add,a,float16,1,a,float16,2,a:output:0,[2],0.97,0.2,\r\n1,Add,b,float16,1,b,float16,2,b:output:0,[2],1.0,0,\r\n"
    "0,Add,a,float16,1,a,float16,2,a:input:0,[2],0.99,0.1,\r\n",
])
def test_a_summary_read_cell_by_cell_is_that_of_the_table(text: str, tmp_path: Path) -> None:
    """summarize_result_csv (vcs, ac: no TensorRecord per row) gives what summarize(read_result_csv) gives."""
    path = tmp_path / "result_1.csv"
    path.write_bytes(text.encode())
    for threshold in (0.98, 0.5):
        whole = summarize(read_result_csv(path), threshold)
        assert repr(summarize_result_csv(path, threshold)) == repr(whole)
        for _ in range(2):  # the digest read, then the one kept: its problems too
            assert repr(summarize_result_csv(path, threshold, cache_dir=tmp_path / "cache")) == repr(whole)
        assert whole.ops
        if "OverFlow" in text:
            assert whole.problems and whole.overflow_ops and whole.nan_data_outputs
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(Exception, match="empty"):
        summarize_result_csv(tmp_path / "empty.csv")


def test_first_failing_tensor_being_an_input_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "result_2.csv"
    path.write_text(
        "Index,NPUDump,GroundTruth,TensorIndex,CosineSimilarity\r\n"
        "0,a,a,a:input:0,0.2\r\n0,a,a,a:output:0,0.3\r\n"
    )
    summary = summarize(read_result_csv(path), 0.98)
    assert summary.first_failure is not None and summary.first_failure.is_graph_input
    assert summary.first_divergent_op is None


def test_leaves_follow_numpys_pairwise_tree() -> None:
    rng = np.random.default_rng(0)
    for n in (129, 1000, 100_003):
        a = (rng.standard_normal(n) * 1000).astype(np.float32)
        parts = [a[s:e].sum() for s, e in leaf_ranges(n, 128)]
        assert tree_sum(n, parts, 128) == a.sum()


def test_file_source_streams_a_large_tensor_with_little_memory(tmp_path: Path) -> None:
    """A 64 MB pair read from files in 4 MB leaves gives exactly the in-memory results."""
    n = 1 << 24
    rng = np.random.default_rng(1)
    y = rng.standard_normal(n, dtype=np.float32)
    x = y + np.float32(1e-3)
    for name, array in (("x", x), ("y", y)):
        array.tofile(tmp_path / name)
    in_memory = compare_arrays(x, y, leaf=1 << 20)
    del x, y
    streamed = compare_sources(FileSource(str(tmp_path / "x"), 0, np.dtype(np.float32), n),
                               FileSource(str(tmp_path / "y"), 0, np.dtype(np.float32), n),
                               shape=(n,), leaf=1 << 20)
    assert streamed == in_memory


def test_cli_vc_vcs_cp_ac(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    ran = cli("ac", "-c", "-l", "2", data=net.root)
    assert ran.status == 0, ran.out + ran.err
    assert "first divergent op: [3] relu1/Relu" in ran.out
    shown = cli("vcs", "-c", "0.5", data=net.root)
    assert shown.status == 0 and "bool/Op" in shown.out and "relu1/Relu" not in shown.out.split("first")[0]
    dump = next(p for p in net.dump_dir.iterdir() if ".relu1_Relu." in p.name)
    golden = next(p for p in net.golden_dir.iterdir() if p.name.startswith("relu1_Relu.0."))
    pair = cli("cp", f"{dump}:input:0", f"{dump}:input:0", "-s", data=net.root)
    assert pair.status == 0, pair.err
    assert re.search(r"allclose\s+True", pair.out) and "CosineSimilarity" in pair.out
    assert list((net.root / "temp" / "tensor_compare").glob("*.txt"))
    converted = cli("cp", f"{dump}:output:0", str(golden), data=net.root)
    assert converted.status == 0 and "NC1HWC0 [1,1,8,8,16] converted to NCHW [1,4,8,8]" in converted.out
    dense = next(p for p in net.dump_dir.iterdir() if ".dense_MatMul." in p.name)
    bad = cli("cp", str(golden), f"{dense}:output:0", data=net.root)
    assert bad.status == 1 and "cannot be compared" in bad.out + bad.err
    missing = cli("vcs", "-f", str(tmp_path / "nope"), data=net.root)
    assert missing.status == 1 and "does not exist" in missing.out + missing.err


def test_empty_workspace_is_one_clear_line(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("vc", data=tmp_path)
    assert result.status == 1
    lines = [line for line in (result.out + result.err).splitlines() if line.strip()]
    assert len(lines) == 1 and "no NPU dumps" in lines[0]


def test_compare_workspace_api_for_the_demo(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    runs = nc.compare_workspace(Workspace(net.root), Settings(ROOT_DIR=str(net.root), WORKERS=1))
    assert len(runs) == 1
    assert runs[0].csv_path.name == f"result_{runs[0].csv_path.parent.name}.csv"
    assert runs[0].summary.first_divergent_op is not None
    assert runs[0].summary.first_divergent_op.npu_op == "relu1/Relu"


def test_the_pool_replaces_a_worker_that_exits_and_does_not_wait_on_the_result_pipe(
        tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    """The local pool's worker-maintenance thread wakes on a worker's exit, not on each result (CPython's
    spins while a result waits to be read): a worker that exits is still replaced, and the pool goes on."""
    import os
    import time

    from precision_tool.analysis.compare.compare_runs import plan_run
    from precision_tool.analysis.compare.engine.compare_executors import PoolExecutor, SerialExecutor
    from precision_tool.analysis.compare.engine.worker_tasks import WorkerSetup

    net = make_net(tmp_path / "pd", chain=12, elements=256)
    plan, golden = plan_run(_spec(net))
    setup = WorkerSetup(golden, False, token="t")
    expected = "".join(result[0] for result in SerialExecutor().results(setup, plan.groups))
    executor = PoolExecutor(2)
    try:
        assert "".join(result[0] for result in executor.results(setup, plan.groups)) == expected
        pool = executor._pool
        assert pool._outqueue._reader not in pool._get_sentinels()
        before = {p.pid for p in pool._pool}
        pool.apply_async(os._exit, (0,))  # a worker ends in a task (not while holding the task queue's lock)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and {p.pid for p in pool._pool} >= before:
            time.sleep(0.05)
        assert len(pool._pool) == 2 and {p.pid for p in pool._pool} != before  # replaced
        assert executor.keeps_workers(len(plan.groups))  # the same pool takes the next (small) plan
        assert "".join(result[0] for result in executor.results(setup, plan.groups)) == expected
    finally:
        executor.close()


def _where(_: int) -> tuple[int, tuple[int, ...]]:
    import os
    import time

    time.sleep(0.02)  # (long enough that every worker takes some of the tasks)
    return os.getpid(), tuple(sorted(os.sched_getaffinity(0)))


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="no CPU affinity calls here")
def test_the_pools_workers_each_keep_to_one_core_of_their_own(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    """On a machine (or container) that lets this process use several cores, each worker of the local pool
    keeps to one of them, the next worker to the next core; the parent stays free."""
    import os

    from precision_tool.analysis.compare.compare_runs import plan_run
    from precision_tool.analysis.compare.engine.compare_executors import PoolExecutor
    from precision_tool.analysis.compare.engine.worker_tasks import WorkerSetup

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("this process may use one core only")
    net = make_net(tmp_path / "pd", chain=4, elements=64)
    plan, golden = plan_run(_spec(net))
    executor = PoolExecutor(2)
    try:
        list(executor.results(WorkerSetup(golden, False, token="t"), plan.groups))
        seen = dict(executor._pool.map(_where, range(40), chunksize=1))
    finally:
        executor.close()
    assert len(seen) == 2 and sorted(seen.values()) == [(cores[0],), (cores[1],)]
    assert sorted(os.sched_getaffinity(0)) == cores
