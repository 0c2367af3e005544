"""`demo --ranks N`: the N-rank data-parallel demo, built once for this module through the one-shot CLI
(`demo --ranks 8 DIR`, with `ac -c --report`), checked on its real files: the layout, the Build graph's
HcomAllReduce ops, the golden per rank from TensorFlow, the planted fault with numpy; rank-aware
`tf_dump`; the one-line refusals; the single demo untouched."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precision_tool.demo import ranks as rank_demo
from precision_tool.simulate.run_files import GRAPH_FILE_NAME
from precision_tool.formats.ge.ge_graph import load_graph
from precision_tool.formats.tf.golden import golden_key, load_npy, scan_golden_dir
from precision_tool.formats.npu.layouts import from_device
from precision_tool.formats.npu.npu_dump import parse_dump_name, read_dump_header, read_tensor, sanitize_op_name
from precision_tool.workspace import Workspace, walk_files
from tests.demo.conftest import DemoRun, run_demo_cli

pytestmark = [pytest.mark.tf, pytest.mark.slow]

RANKS = 8
THRESHOLD = 0.98
FAULTY, FAULT_OP = rank_demo.planted_rank_fault(RANKS)
TRAINED = ["conv1/kernel", "conv1/bias", "conv2/kernel", "bn2/gamma", "bn2/beta", "fc1/kernel", "fc1/bias",
           "fc2/kernel", "fc2/bias"]


@pytest.fixture(scope="module")
def rank_run(tmp_path_factory) -> DemoRun:
    root = tmp_path_factory.mktemp("demo_ranks") / "pd"
    proc = run_demo_cli("demo", "--ranks", str(RANKS), str(root))
    return DemoRun(root, proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def rank_ws(rank_run) -> Path:
    assert rank_run.status == 0, rank_run.out[-3000:] + rank_run.err[-3000:]
    return rank_run.root


# --- helpers -----------------------------------------------------------------------------------------
def _graph(root: Path) -> Any:
    (path,) = Workspace(root).build_graph_files(0)
    (graph,) = load_graph(path).graphs
    return graph


def _stamp_dir(root: Path) -> Path:
    (stamp,) = [p for p in Workspace(root).dump_root(0).iterdir() if p.is_dir()]
    return stamp


def _rank_dumps(root: Path, rank: int) -> dict[str, Any]:
    found = {}
    for path in walk_files(_stamp_dir(root) / str(rank)):
        name = parse_dump_name(path.name)
        assert name is not None, path
        assert name.op_name not in found, f"rank {rank}: two dumps for {name.op_name}"
        found[name.op_name] = read_dump_header(path)
    return found


def _golden(root: Path, rank: int) -> dict[str, Path]:
    return scan_golden_dir(Workspace(root).golden_dir / rank_demo.rank_dir_name(rank))


def _logical(dump: Any, tensor: Any, desc: Any) -> np.ndarray:
    array = read_tensor(dump, tensor)
    if desc.layout in ("NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ"):
        array = from_device(array, desc.layout, desc.origin_format, desc.origin_shape,
                            original_format=desc.origin_format if desc.layout != "FRACTAL_NZ" else None)
    return array.reshape(desc.origin_shape) if desc.origin_shape else array


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 and nb == 0:
        return 1.0
    return float(a @ b / (na * nb)) if na and nb else 0.0


def _origin(graph: Any, producer: str, slot: int) -> tuple[str, int] | None:
    """The golden tensor of an NPU op output, through Cast/TransData (which carry no origin)."""
    op = next(o for o in graph.ops if o.name == producer)
    if op.type in ("Cast", "TransData"):
        return _origin(graph, *op.data_inputs[0])
    desc = op.output_descs[slot]
    return (desc.origin_name, desc.origin_output_index or 0) if desc.origin_name else None


def _op_cosines(root: Path, rank: int) -> list[tuple[str, list[float], list[float]]]:
    """(op, input cosines, output cosines) vs the rank's golden, for every dumped op in execution order."""
    graph = _graph(root)
    dumps = _rank_dumps(root, rank)
    golden = _golden(root, rank)
    rows = []
    for op in sorted(graph.ops, key=lambda o: o.id):
        dump = dumps.get(sanitize_op_name(op.name))
        if dump is None or op.type in ("Cast", "TransData"):
            continue

        def against(origin: tuple[str, int] | None, tensor: Any, desc: Any) -> float | None:
            if origin is None or golden_key(*origin) not in golden:
                return None
            npu = _logical(dump, tensor, desc)
            return _cos(npu, load_npy(golden[golden_key(*origin)]).reshape(npu.shape))

        ins = [against(_origin(graph, p, s), dump.inputs[k], op.input_descs[k])
               for k, (p, s) in enumerate(op.data_inputs)]
        outs = [against((d.origin_name, d.origin_output_index or 0) if d.origin_name else None, dump.outputs[k], d)
                for k, d in enumerate(op.output_descs)]
        rows.append((op.name, [c for c in ins if c is not None], [c for c in outs if c is not None]))
    return rows


def _allreduce_reads(root: Path, variable: str) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Per rank: the all-reduce's input as read, its producer's output, its output (logical layout)."""
    graph = _graph(root)
    op = next(o for o in graph.ops if o.name == rank_demo.allreduce_op_name(variable))
    producer_name, slot = op.data_inputs[0]
    producer = next(o for o in graph.ops if o.name == producer_name)
    reads, produced, outputs = [], [], []
    for rank in range(RANKS):
        dumps = _rank_dumps(root, rank)
        dump, source = dumps[sanitize_op_name(op.name)], dumps[sanitize_op_name(producer_name)]
        reads.append(_logical(dump, dump.inputs[0], op.input_descs[0]))
        produced.append(_logical(source, source.outputs[slot], producer.output_descs[slot]))
        outputs.append(_logical(dump, dump.outputs[0], op.output_descs[0]))
    return reads, produced, outputs


# --- the command -------------------------------------------------------------------------------------
def test_demo_ranks_builds_checks_and_names_the_planted_fault(rank_run) -> None:
    assert rank_run.status == 0, rank_run.out[-3000:] + rank_run.err[-3000:]
    out = rank_run.out
    assert FAULTY == 3 and FAULT_OP == "allreduce/fc1_kernel/HcomAllReduce"
    assert f"  planted fault: rank 3: the input of {FAULT_OP} (HcomAllReduce) was corrupted" in out
    assert f"holds {RANKS} rank folder(s)" in out  # tf_dump said it extracts rank by rank
    assert "ac -c" in out and "Traceback" not in out + rank_run.err
    lines = out.strip().splitlines()
    answer = next(i for i, line in enumerate(lines) if line.startswith("answer ─"))
    assert lines[answer - 1].endswith(f"--data {rank_run.root}"), lines[answer - 3:answer + 1]
    # the answer names the rank and the collective, says what to run next, and counts the other CSVs right
    block = lines[answer + 1:]
    assert block[0] == f"rank 3 went wrong first: an input of [81] {FAULT_OP} (HcomAllReduce)"
    assert f"  do: `vcs --rank 3` lists rank 3's abnormal ops; `ni {FAULT_OP}` shows its tensors on every rank " \
           "against golden" in block
    assert any(line.startswith(f"ranks vs rank 0: all {RANKS} ranks hold the same values on the") and
               "the collective handed every rank the same result, the error included" in line for line in block)
    others = RANKS - 1
    assert f"{2 * others} more result CSVs ({others} more rank(s) against golden, {others} NPU against NPU) in the " \
           "same folder" in "\n".join(block)
    assert block[-2] == "report (one HTML file, opens offline):"


@pytest.mark.parametrize("args, message", [
    (["--ranks", "1"], "--ranks takes a number of ranks from 2 to 64, not 1"),
    (["--ranks", "65"], "--ranks takes a number of ranks from 2 to 64, not 65"),
    (["--ranks", "eight"], "--ranks takes a number of ranks from 2 to 64, not 'eight'"),
    (["--ranks", "4", "--fixed"], "--ranks and --fixed do not go together"),
])
def test_demo_ranks_refuses_bad_values_in_one_line(tmp_path, args, message) -> None:
    root = tmp_path / "pd"
    proc = run_demo_cli("demo", *args, str(root))
    assert proc.returncode == 1
    text = (proc.stdout + proc.stderr).strip()
    assert message in text and len(text.splitlines()) == 1, text
    assert not root.exists()


def test_demo_fixed_refuses_the_rank_demo_in_one_line(rank_ws) -> None:
    before = sorted(str(p) for p in walk_files(rank_ws))
    proc = run_demo_cli("demo", "--fixed", str(rank_ws))
    assert proc.returncode == 1
    text = (proc.stdout + proc.stderr).strip()
    assert "holds the rank demo" in text and len(text.splitlines()) == 1, text
    assert sorted(str(p) for p in walk_files(rank_ws)) == before


def test_planted_rank_fault_is_never_rank_0() -> None:
    assert rank_demo.planted_rank_fault(2) == (1, FAULT_OP)
    assert rank_demo.planted_rank_fault(3)[0] == 2
    assert all(rank_demo.planted_rank_fault(n)[0] == 3 for n in (4, 8, 64))
    with pytest.raises(ValueError):
        rank_demo.planted_rank_fault(65)


# --- the layout ---------------------------------------------------------------------------------------
def test_layout_one_build_graph_and_a_dump_folder_per_rank(rank_ws) -> None:
    ws = Workspace(rank_ws)
    assert [p.name for p in ws.build_graph_files(0)] == [GRAPH_FILE_NAME]
    assert ws.debug_ids() == [0]
    stamp = _stamp_dir(rank_ws)
    assert sorted(p.name for p in stamp.iterdir()) == sorted(str(r) for r in range(RANKS))
    graph = _graph(rank_ws)
    names = None
    for rank in range(RANKS):
        (model_dir,) = (stamp / str(rank)).iterdir()
        assert model_dir.name == graph.name
        files = sorted((stamp / str(rank) / graph.name / "1" / "0").iterdir())
        ops = sorted((n.op_type, n.op_name, n.task_id) for n in map(parse_dump_name, (f.name for f in files)))
        assert names is None or ops == names, f"rank {rank} has other dump files than rank 0"
        names = ops
    assert names is not None and ("HcomAllReduce", sanitize_op_name(FAULT_OP)) in {(t, n) for t, n, _ in names}
    assert sorted(p.name for p in ws.golden_dir.iterdir()) == sorted(f"rank_{r}" for r in range(RANKS))
    assert sorted(p.name for p in ws.tf_debug_dir.iterdir()) == sorted(f"rank_{r}" for r in range(RANKS))
    assert not ws.overflow_root.exists()  # the float16 overflow is off


def test_build_graph_has_an_hcom_allreduce_per_weight_update(rank_ws) -> None:
    graph = _graph(rank_ws)
    by_name = {op.name: op for op in graph.ops}
    updates = [op for op in graph.ops if op.type == "ApplyGradientDescent"]
    allreduces = [op for op in graph.ops if op.type == "HcomAllReduce"]
    assert len(updates) == len(allreduces) == len(TRAINED)
    assert {op.name for op in allreduces} == {rank_demo.allreduce_op_name(v) for v in TRAINED}
    for op in allreduces:
        assert op.attrs["reduction"] == "sum" and op.attrs["group"] == "hccl_world_group"
        assert op.attrs["_ge_attr_op_kernel_lib_name"] == "ops_kernel_info_hccl"
        assert op.original_op_names == [op.name]
        assert op.output_descs[0].origin_name == op.name
        (producer, _slot) = op.data_inputs[0]
        assert by_name[producer].type not in ("Cast", "TransData")  # straight from the gradient op
        assert op.input_descs[0].layout == op.output_descs[0].layout  # reduced in place, no TransData
    for update in updates:  # delta ← RealDiv ← (Cast/TransData) ← HcomAllReduce
        name, _ = update.data_inputs[2]
        while by_name[name].type in ("Cast", "TransData"):
            name = by_name[name].data_inputs[0][0]
        div = by_name[name]
        assert div.type == "RealDiv"
        name = div.data_inputs[0][0]
        while by_name[name].type in ("Cast", "TransData"):
            name = by_name[name].data_inputs[0][0]
        assert by_name[name].type == "HcomAllReduce"
    assert by_name[FAULT_OP].data_inputs[0][0] == rank_demo.FAULT_GRADIENT
    assert not [op for op in graph.ops if op.name.startswith("loss_scale")]  # no loss scale here


# --- golden per rank, from TensorFlow ---------------------------------------------------------------------
def test_golden_per_rank_comes_from_tensorflow(rank_ws) -> None:
    ws = Workspace(rank_ws)
    goldens = [_golden(rank_ws, r) for r in range(RANKS)]
    assert all(set(g) == set(goldens[0]) for g in goldens)
    for rank in range(RANKS):
        assert [p.name for p in (ws.tf_debug_dir / f"rank_{rank}").iterdir() if p.name.startswith("run_")]
    for variable in TRAINED:
        name = rank_demo.allreduce_op_name(variable)
        sums = [load_npy(g[golden_key(name, 0)]) for g in goldens]
        means = [load_npy(g[golden_key(rank_demo.mean_op_name(variable), 0)]) for g in goldens]
        grads = []
        for rank, golden in enumerate(goldens):
            others = [p for k, p in golden.items() if f"allreduce_{rank_demo.variable_key(variable)}_others" in k]
            assert len(others) == 1, others  # the fed placeholder, as tfdbg dumped it
            total = sums[rank]
            own = total - load_npy(others[0])
            grads.append(own)
            np.testing.assert_allclose(means[rank], total / RANKS, rtol=1e-6)
        everyone = np.sum(grads, axis=0)
        for total in sums:  # every rank's golden all-reduce is the sum of all ranks' gradients
            np.testing.assert_allclose(total, everyone, rtol=1e-4, atol=1e-6)
        assert _cos(grads[0], grads[1]) < 0.999  # each rank its own batch


# --- the planted fault, with numpy --------------------------------------------------------------------
def test_faulty_rank_reads_a_corrupted_allreduce_input(rank_ws) -> None:
    reads, produced, _ = _allreduce_reads(rank_ws, rank_demo.FAULT_VARIABLE)
    for rank in range(RANKS):
        golden = load_npy(_golden(rank_ws, rank)[golden_key(rank_demo.FAULT_GRADIENT, 0)])
        assert _cos(produced[rank], golden) >= 0.99  # the gradient op's own output is intact
        read = _cos(reads[rank], golden)
        if rank == FAULTY:
            assert read < THRESHOLD
            assert not np.array_equal(reads[rank], produced[rank])
        else:
            assert read >= 0.99
            np.testing.assert_array_equal(reads[rank], produced[rank])


def test_allreduce_outputs_are_one_sum_on_every_rank(rank_ws) -> None:
    graph = _graph(rank_ws)
    for variable in TRAINED:
        reads, produced, outputs = _allreduce_reads(rank_ws, variable)
        for output in outputs[1:]:
            np.testing.assert_array_equal(output, outputs[0])
        np.testing.assert_array_equal(outputs[0], rank_demo.float16_sum(reads))
        if variable != rank_demo.FAULT_VARIABLE:
            np.testing.assert_array_equal(reads, produced)
        # the weight update's delta is the mean of the ranks' (float16) gradients: the RealDiv's output
        div = next(o for o in graph.ops if o.name == rank_demo.mean_op_name(variable))
        dump = _rank_dumps(rank_ws, 0)[sanitize_op_name(div.name)]
        mean = _logical(dump, dump.outputs[0], div.output_descs[0]).reshape(outputs[0].shape)
        np.testing.assert_allclose(mean, outputs[0].astype(np.float32) / RANKS, rtol=1e-6)
        expected = np.mean(np.asarray(reads, dtype=np.float64), axis=0)
        np.testing.assert_allclose(mean, expected, rtol=2e-2, atol=2e-3 * np.abs(expected).max())


def test_first_divergent_op_is_the_corrupted_allreduce_on_every_rank(rank_ws) -> None:
    for rank in range(RANKS):
        rows = _op_cosines(rank_ws, rank)
        failing = [k for k, (_, _ins, outs) in enumerate(rows) if any(c < THRESHOLD for c in outs)]
        assert failing, f"rank {rank}: nothing diverges"
        name, ins, outs = rows[failing[0]]
        assert name == FAULT_OP, f"rank {rank}: first divergent op {name}"
        assert max(outs) < THRESHOLD  # every rank's all-reduce output diverges
        if rank == FAULTY:
            assert min(ins) < THRESHOLD
        else:
            assert min(ins) >= 0.99
        for before, b_ins, b_outs in rows[:failing[0]]:  # no bn2 fault, no overflow: float16 rounding only
            assert min(b_ins + b_outs, default=1.0) >= 0.99, (rank, before, b_ins, b_outs)
        later = {rows[k][0] for k in failing}
        assert later <= {FAULT_OP, rank_demo.mean_op_name(rank_demo.FAULT_VARIABLE),
                         "GradientDescent/update_fc1/kernel/ResourceApplyGradientDescent"}, later


# --- tf_dump, rank by rank ------------------------------------------------------------------------------
@pytest.fixture()
def tf_debug_copy(rank_ws, tmp_path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(Workspace(rank_ws).tf_debug_dir, Workspace(root).tf_debug_dir)
    return root


def _npy_names(folder: Path) -> set[str]:
    return {re.sub(r"\.\d+\.npy$", "", p.name) for p in folder.iterdir()}


def test_tf_dump_extracts_each_rank_into_its_folder(rank_ws, tf_debug_copy) -> None:
    ws = Workspace(tf_debug_copy)
    proc = run_demo_cli("--data", str(tf_debug_copy), "tf_dump")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"holds {RANKS} rank folder(s)" in proc.stdout and f"{RANKS} rank(s)" in proc.stdout
    assert sorted(p.name for p in ws.golden_dir.iterdir()) == sorted(f"rank_{r}" for r in range(RANKS))
    for rank in range(RANKS):
        mine = ws.golden_dir / f"rank_{rank}"
        theirs = Workspace(rank_ws).golden_dir / f"rank_{rank}"
        assert sorted(p.name for p in mine.iterdir()) == sorted(p.name for p in theirs.iterdir())
        assert re.search(rf"rank {rank}\s+\d+ tensors, \d+ written", proc.stdout)
    again = run_demo_cli("--data", str(tf_debug_copy), "tf_dump")
    assert again.returncode == 0 and "0 written" in again.stdout and "already there" in again.stdout


def test_tf_dump_one_rank_folder_and_out(tf_debug_copy, tmp_path) -> None:
    ws = Workspace(tf_debug_copy)
    proc = run_demo_cli("--data", str(tf_debug_copy), "tf_dump", "--dir", str(ws.tf_debug_dir / "rank_2"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [p.name for p in ws.golden_dir.iterdir()] == ["rank_2"]
    out = tmp_path / "out"
    proc = run_demo_cli("--data", str(tf_debug_copy), "tf_dump", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(f"rank_{r}" for r in range(RANKS))
    assert _npy_names(out / "rank_2") == _npy_names(ws.golden_dir / "rank_2")


def test_tf_dump_refuses_rank_and_run_folders_side_by_side(tf_debug_copy) -> None:
    ws = Workspace(tf_debug_copy)
    run = next(p for p in (ws.tf_debug_dir / "rank_0").iterdir() if p.name.startswith("run_"))
    shutil.copytree(run, ws.tf_debug_dir / run.name)
    proc = run_demo_cli("--data", str(tf_debug_copy), "tf_dump")
    assert proc.returncode == 1
    text = (proc.stdout + proc.stderr).strip()
    assert "both per-rank folders" in text and len(text.splitlines()) == 1, text
    assert not ws.golden_dir.exists()


# --- the single demo is as it was -------------------------------------------------------------------------
def test_single_demo_has_no_ranks(demo_workspace) -> None:
    ws = Workspace(demo_workspace)
    (stamp,) = [p for p in ws.dump_root(0).iterdir() if p.is_dir()]
    assert [p.name for p in stamp.iterdir()] == ["0"]
    assert not [p for p in ws.golden_dir.iterdir() if p.is_dir()]
    graph = _graph(demo_workspace)
    assert not [op for op in graph.ops if op.type in ("HcomAllReduce", "RealDiv")]
    assert len(graph.ops) == 94 and [op.name for op in graph.ops if op.name.startswith("loss_scale/unscale")]
