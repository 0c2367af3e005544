"""Two shortcuts of the engine that must not change a byte: a pair measured again (an op's output read as
the next op's input) takes the first pair's metrics, and the runs of one command overlap on a shared pool."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from precision_tool.analysis.compare import network_compare as nc
from precision_tool.analysis.compare.engine.compare_worker import TINY_PAIR, GroupWorker
from precision_tool.analysis.results.metrics_batch import CopiedMetrics, PendingMetrics
from precision_tool.analysis.results.metrics import ArraySource, compare_arrays
from precision_tool.errors import WorkspaceError


def _pair(worker: GroupWorker, npu: np.ndarray, golden: np.ndarray, npu_file: str,  # type: ignore[no-untyped-def]
          golden_file: str = "golden.npy"):
    return worker._metrics(ArraySource(npu), ArraySource(golden), npu.shape, npu_file, golden_file)


def test_a_repeated_pair_takes_the_queued_pairs_metrics_and_names_its_own_file() -> None:
    rng = np.random.default_rng(3)
    size = 2 * TINY_PAIR  # (smaller pairs skip the shortcut: see the test below)
    golden = rng.standard_normal(size).astype(np.float32)
    npu = (golden + rng.standard_normal(size).astype(np.float32) * 1e-2).astype(np.float16)
    zeros = np.zeros(size, np.float16)
    worker = GroupWorker({}, False)
    first = _pair(worker, npu, golden, "out.bin")
    again = _pair(worker, npu.copy(), golden, "in.bin")  # the same bytes, read from another dump
    zero_first = _pair(worker, zeros, golden, "zero_out.bin", "zero_golden.npy")
    zero_again = _pair(worker, zeros.copy(), golden, "zero_in.bin", "zero_golden.npy")
    assert isinstance(again, CopiedMetrics) and isinstance(zero_again, CopiedMetrics)
    worker._measure_batch()
    for metrics, values, name, golden_name in ((first, npu, "out.bin", "golden.npy"),
                                               (again, npu, "in.bin", "golden.npy"),
                                               (zero_first, zeros, "zero_out.bin", "zero_golden.npy"),
                                               (zero_again, zeros, "zero_in.bin", "zero_golden.npy")):
        expected = compare_arrays(values, golden, shape=values.shape, npu_file=name, golden_file=golden_name)
        assert (metrics.values, metrics.reasons) == (expected.values, expected.reasons), name
    # all-zero NPU data: the reason names the file of each pair, not the first one's
    assert any("zero_in.bin" in reason for reason in zero_again.reasons)
    assert not any("zero_out.bin" in reason for reason in zero_again.reasons)
    # a pair met after its twin was measured gets the twin's finished metrics at once; other bytes do not
    assert _pair(worker, npu.copy(), golden, "late.bin") is first
    assert not isinstance(_pair(worker, npu + np.float16(1), golden, "other.bin"), CopiedMetrics)


def test_a_tiny_repeated_pair_is_measured_again_with_the_same_result() -> None:
    """Up to TINY_PAIR elements the batch measures a pair for less than comparing its bytes with recent ones:
    a repeat is measured again, and its metrics are those of its twin but for the file it names."""
    rng = np.random.default_rng(4)
    golden = rng.standard_normal(TINY_PAIR).astype(np.float32)
    npu = (golden + rng.standard_normal(TINY_PAIR).astype(np.float32) * 1e-2).astype(np.float16)
    worker = GroupWorker({}, False)
    first = _pair(worker, npu, golden, "out.bin")
    again = _pair(worker, npu.copy(), golden, "in.bin")
    assert type(again) is PendingMetrics and again is not first
    worker._measure_batch()
    expected = compare_arrays(npu, golden, shape=npu.shape, npu_file="in.bin", golden_file="golden.npy")
    assert (again.values, again.reasons) == (expected.values, expected.reasons) and again.values == first.values


def _specs(net, names: list[str]) -> list[nc.RunSpec]:  # type: ignore[no-untyped-def]
    return [nc.RunSpec(name, str(net.dump_dir), f"{name}.csv", golden_dir=str(net.golden_dir),
                       graph_path=str(net.graph_txt)) for name in names]


def test_overlapped_runs_write_what_runs_one_by_one_write(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "pd", chain=40, elements=512)
    names = ["a", "b", "c"]
    alone = tmp_path / "alone"
    alone.mkdir()
    for spec in _specs(net, names):
        nc.run_specs([spec], alone, workers=1, threshold=0.98)
    shared = tmp_path / "shared"
    shared.mkdir()
    runs = nc.run_specs(_specs(net, names), shared, workers=2, threshold=0.98)
    assert [run.spec.label for run in runs] == names
    for name in names:
        assert (shared / f"{name}.csv").read_bytes() == (alone / f"{name}.csv").read_bytes()


def test_a_run_that_cannot_be_planned_still_lets_the_run_in_flight_finish(tmp_path: Path, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "pd", chain=40, elements=512)
    specs = _specs(net, ["a", "b"])
    specs.append(nc.RunSpec("gone", str(tmp_path / "no_such_dump"), "gone.csv", golden_dir=str(net.golden_dir)))
    out = tmp_path / "out"
    out.mkdir()
    try:
        nc.run_specs(specs, out, workers=2, threshold=0.98)
    except WorkspaceError as error:
        assert "no_such_dump" in str(error)
    else:
        raise AssertionError("a run without its dump folder must fail")
    assert (out / "a.csv").is_file() and (out / "b.csv").is_file()  # b was in flight when "gone" failed
    assert not list(out.glob("*.partial"))


def test_an_output_read_again_as_the_next_input_gives_msaccucmps_rows(make_case, reference_tool: Path,  # type: ignore[no-untyped-def]
                                                                        monkeypatch) -> None:
    """A small tensor's bytes met again with the same golden (an output dumped again as its consumer's input)
    take the first pair's metrics: queued or already measured (a later batch), and measured again when the
    first pair's reasons name its own file (all-zero data). The rows are msaccucmp's, and those the general
    way writes, batch by batch."""
    from precision_tool.analysis.compare import network_compare as nc
    from precision_tool.analysis.compare.engine.worker_tasks import run_batch
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    rng = np.random.default_rng(11)
    case = make()
    previous, previous_npu = None, None
    for k in range(6):
        name = f"op{k}"
        golden = rng.standard_normal(48).astype(np.float32)
        npu = np.zeros(48, np.float16) if k == 2 else golden.astype(np.float16)  # op2's NPU output all zero
        case.golden(name, 0, golden)
        case.op(name, "Add", [f"{previous}:0"] if previous else [], outputs=[nd_desc((48,))], original=[name])
        case.dump("Add", name, [TensorSpec(previous_npu)] if previous else [], [TensorSpec(npu)])
        previous, previous_npu = name, npu
    # the same bytes once more, dumped as int16: another kind of tensor, so measured on their own
    case.op("as_int", "Cast", [f"{previous}:0"], outputs=[nd_desc((48,))], original=["as_int"])
    case.golden("as_int", 0, rng.standard_normal(48).astype(np.float32))
    case.dump("Cast", "as_int", [TensorSpec(previous_npu.view(np.int16))], [TensorSpec(previous_npu)])
    ours = case.run_ours()
    assert ours == case.run_reference(reference_tool)
    # op2's output and op3's input, each naming its own file
    assert sum("All the data is zero" in row[-1] for row in ours) == 2
    spec = nc.RunSpec("case", str(case.dump_dir), "r.csv", golden_dir=str(case.golden_dir),
                      graph_path=str(case.graph_txt))
    plan, golden_files = nc.plan_run(spec)
    texts = {}
    for shortcut in (True, False):
        worker = GroupWorker(golden_files, False)
        with monkeypatch.context() as patch:
            if not shortcut:
                patch.setattr(GroupWorker, "_small_pair", lambda self, *args: None)
            # two batches: op3's input meets op2's output measured already, op1's meets op0's still queued
            texts[shortcut] = [run_batch(worker, part)[0] for part in (plan.groups[:3], plan.groups[3:])]
    assert texts[True] == texts[False]
