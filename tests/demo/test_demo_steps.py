"""`demo --steps`: the multi-step demo, built once for this module through the one-shot CLI (`demo --steps 4 DIR
--no-check`), checked on its real files: one dump/<time>/ with iteration folders 0-3,
golden per step in tf/dump/step_<K>/, both loss records; the NPU trains from its own weights; the float16
overflow appears at step 2 only; `vc --step K` against each step's golden finds no divergent op at steps 0
and 1 and names the overflowing MatMul at step 2; the one-line refusals."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precision_tool.demo import steps as step_demo
from precision_tool.formats.ge.ge_graph import load_graph
from precision_tool.formats.loss_record import read_loss
from precision_tool.formats.npu.layouts import from_device
from precision_tool.formats.npu.npu_dump import parse_dump_name, read_dump_header, read_tensor, sanitize_op_name
from precision_tool.formats.tf.golden import golden_key, load_npy, scan_golden_dir
from precision_tool.workspace import Workspace, walk_files
from tests.conftest import run_cli
from tests.demo.conftest import DemoRun, run_demo_cli

STEPS = step_demo.DEFAULT_STEPS
FLOAT16_MAX = 65504.0
OVERFLOW_OP = step_demo.OVERFLOW_OP


@pytest.fixture(scope="module")
def steps_run(tmp_path_factory) -> DemoRun:
    root = tmp_path_factory.mktemp("demo_steps") / "pd"
    proc = run_demo_cli("demo", "--steps", str(STEPS), str(root), "--no-check")
    return DemoRun(root, proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def steps_ws(steps_run) -> Path:
    assert steps_run.status == 0, steps_run.out[-3000:] + steps_run.err[-3000:]
    return steps_run.root


# --- helpers -----------------------------------------------------------------------------------------
def _graph(root: Path) -> Any:
    (path,) = Workspace(root).build_graph_files(0)
    (graph,) = load_graph(path).graphs
    return graph


def _model_dir(root: Path) -> Path:
    """dump/<stamp>/0/<graph name>/1: the folder holding the iteration folders."""
    (stamp,) = [p for p in Workspace(root).dump_root(0).iterdir() if p.is_dir()]
    (device,) = [p for p in stamp.iterdir() if p.is_dir()]
    (graph,) = [p for p in device.iterdir() if p.is_dir()]
    return graph / "1"


def _step_dumps(root: Path, step: int) -> dict[str, Any]:
    found = {}
    for path in walk_files(_model_dir(root) / str(step)):
        name = parse_dump_name(path.name)
        assert name is not None, path
        assert name.op_name not in found, f"step {step}: two dumps for {name.op_name}"
        found[name.op_name] = read_dump_header(path)
    return found


def _logical(dump: Any, tensor: Any, desc: Any) -> np.ndarray:
    array = read_tensor(dump, tensor)
    if desc.layout in ("NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ"):
        array = from_device(array, desc.layout, desc.origin_format, desc.origin_shape,
                            original_format=desc.origin_format if desc.layout != "FRACTAL_NZ" else None)
    return array.reshape(desc.origin_shape) if desc.origin_shape else array


def _golden(root: Path, step: int, name: str, slot: int = 0) -> np.ndarray:
    files = scan_golden_dir(Workspace(root).golden_dir / step_demo.step_dir_name(step))
    return load_npy(files[golden_key(name, slot)])


def _output(root: Path, step: int, op_name: str, slot: int = 0) -> np.ndarray:
    op = next(o for o in _graph(root).ops if o.name == op_name)
    dump = _step_dumps(root, step)[sanitize_op_name(op_name)]
    return _logical(dump, dump.outputs[slot], op.output_descs[slot])


def _vc_step(root: Path, step: int) -> str:
    """`vc --step K` of the NPU dump against step K's golden folder, through the Build graph."""
    ws = Workspace(root)
    (dump,) = [p for p in ws.dump_root(0).iterdir() if p.is_dir()]
    (graph,) = ws.build_graph_files(0)
    result = run_cli("vc", "-lt", str(dump), "-rt", str(ws.golden_dir / step_demo.step_dir_name(step)),
                     "-g", str(graph), "--step", str(step), data=root)
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    return result.out


# --- the command -------------------------------------------------------------------------------------
@pytest.mark.tf
@pytest.mark.slow
def test_demo_steps_builds_and_says_what_it_holds(steps_run) -> None:
    assert steps_run.status == 0, steps_run.out[-3000:] + steps_run.err[-3000:]
    out = steps_run.out
    assert f"golden steps on CPU: {STEPS} steps" in out
    assert f"first float16 overflow: step {step_demo.OVERFLOW_STEP}: {OVERFLOW_OP}" in out
    assert "  the divergence: nothing planted" in out
    assert "tf_dump" in out  # each golden step extracted into its tf/dump/step_<K> (the layout test checks them)
    assert f"Step demo workspace ({STEPS} steps) ready in" in out and "Traceback" not in out + steps_run.err
    assert out.strip().splitlines()[-1].endswith(f"--data {steps_run.root}")


@pytest.mark.parametrize("args, message", [
    (["--steps", "1"], "--steps 1: give 2 to 16 steps"),
    (["--steps", "17"], "--steps 17: give 2 to 16 steps"),
    (["--steps", "four"], "--steps takes a whole number of steps from 2 to 16 (4 shows every stage), not 'four'"),
    (["--steps", "4", "--ranks", "2"], "--steps and --ranks do not go together"),
    (["--steps", "4", "--fixed"], "--steps and --fixed do not go together"),
    (["--steps", "4", "--npu-start", "other-data"], "give it without --model, --ranks, --steps and --fixed"),
])
def test_demo_steps_refuses_bad_values_in_one_line(tmp_path, args, message) -> None:
    root = tmp_path / "pd"
    proc = run_demo_cli("demo", *args, str(root))
    assert proc.returncode == 1
    text = (proc.stdout + proc.stderr).strip()
    assert message in text and len(text.splitlines()) == 1, text
    assert not root.exists()


# --- the layout ---------------------------------------------------------------------------------------
@pytest.mark.tf
@pytest.mark.slow
def test_layout_one_dump_with_an_iteration_per_step_and_a_golden_folder_per_step(steps_ws) -> None:
    ws = Workspace(steps_ws)
    assert ws.debug_ids() == [0] and len(ws.build_graph_files(0)) == 1
    model = _model_dir(steps_ws)
    assert sorted(p.name for p in model.iterdir()) == [str(k) for k in range(STEPS)]
    names = [sorted(_step_dumps(steps_ws, k)) for k in range(STEPS)]
    assert all(n == names[0] for n in names) and len(names[0]) > 50  # every step dumps every task
    runs = sorted(p.name for p in ws.tf_debug_dir.iterdir() if p.name.startswith("run_"))
    assert len(runs) == STEPS
    assert not list(ws.golden_dir.glob("*.npy"))  # golden per step only: no flat step beside them
    folders = sorted(p.name for p in ws.golden_dir.iterdir())
    assert folders == sorted(step_demo.step_dir_name(k) for k in range(STEPS))
    counts = {len(scan_golden_dir(ws.golden_dir / name)) for name in folders}
    assert counts == {148}


@pytest.mark.tf
@pytest.mark.slow
def test_loss_records_of_both_runs(steps_ws) -> None:
    ws = Workspace(steps_ws)
    golden, npu = read_loss(ws.golden_loss_file), read_loss(ws.loss_file(0))
    assert [p.step for p in golden] == [p.step for p in npu] == list(range(STEPS))
    assert all(p.loss_scale == step_demo.LOSS_SCALE for p in golden + npu)
    assert all(math.isfinite(p.loss) and math.isfinite(p.grad_norm) for p in golden)
    # tf_dump's run K is golden step K: the extracted loss tensor is the loss the step recorded
    for p in golden:
        assert float(_golden(steps_ws, p.step, "loss/Mean")) == pytest.approx(p.loss, rel=1e-6)
    # the NPU follows the golden run closely until its gradient overflows at step 2; its loss is NaN after
    overflow = step_demo.OVERFLOW_STEP
    for g, n in zip(golden[:overflow + 1], npu[:overflow + 1]):
        assert n.loss == pytest.approx(g.loss, rel=1e-2)
    assert all(n.grad_norm == pytest.approx(g.grad_norm, rel=5e-2) for g, n in zip(golden[:overflow], npu))
    assert math.isinf(npu[overflow].grad_norm)
    assert all(math.isnan(p.loss) for p in npu[overflow + 1:])
    # the NPU's record is the loss its dumps hold, step by step
    for p in npu:
        dumped = _output(steps_ws, p.step, "loss/Mean").reshape(-1)[0]
        assert np.array_equal(np.float32(p.loss), dumped, equal_nan=True)


@pytest.mark.tf
@pytest.mark.slow
def test_npu_steps_start_from_the_npu_runs_own_weights(steps_ws) -> None:
    """Step k+1's weight input is what step k's ApplyGradientDescent wrote, not the golden weights."""
    graph = _graph(steps_ws)
    update = next(o for o in graph.ops if o.type == "ApplyGradientDescent" and "update_fc1/kernel/" in o.name)
    for step in range(step_demo.OVERFLOW_STEP):
        written = _output(steps_ws, step, update.name)
        after = _step_dumps(steps_ws, step + 1)[sanitize_op_name(update.name)]
        read = _logical(after, after.inputs[0], update.input_descs[0])
        assert np.array_equal(read, written)
        golden_next = _golden(steps_ws, step + 1, "fc1/MatMul/ReadVariableOp")
        assert not np.array_equal(read, golden_next)  # float16 steps drift: not the golden weights
        a, b = read.astype(np.float64).ravel(), golden_next.astype(np.float64).ravel()
        assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) > 0.9999  # but close to them


@pytest.mark.tf
@pytest.mark.slow
def test_the_weight_gradient_grows_past_float16_at_step_2_only(steps_ws) -> None:
    overflow = step_demo.OVERFLOW_STEP
    for step in range(STEPS - 1):
        golden = np.abs(_golden(steps_ws, step, OVERFLOW_OP)).max()  # float32, loss-scaled
        npu = _output(steps_ws, step, OVERFLOW_OP)
        assert npu.dtype == np.float16
        if step < overflow:
            assert golden < FLOAT16_MAX and np.isfinite(npu).all(), (step, golden)
        else:
            assert golden > 1.05 * FLOAT16_MAX and np.isinf(npu).any(), (step, golden)


# --- compared step by step ----------------------------------------------------------------------------
@pytest.mark.tf
@pytest.mark.slow
def test_vc_step_by_step_steps_0_and_1_pass_step_2_names_the_overflowing_matmul(steps_ws) -> None:
    for step in range(step_demo.OVERFLOW_STEP):
        out = _vc_step(steps_ws, step)
        assert "first divergent op none; 94 ops (0 abnormal)" in out, out[-2000:]
    out = _vc_step(steps_ws, step_demo.OVERFLOW_STEP)
    assert f"first divergent op: [48] {OVERFLOW_OP} (MatMulV2; golden {OVERFLOW_OP}) — its outputs fail (NaN/Inf " \
           "data) while its inputs pass" in out, out[-3000:]
    csv = re.search(r"NPU vs golden: first divergent op .*: (\S+\.csv)$", out, re.M).group(1)
    shown = run_cli("vcs", "-f", csv, data=steps_ws)
    assert shown.status == 0 and f"first divergent op: [48] {OVERFLOW_OP}" in shown.out
    # the step after: the weights the overflow wrote are NaN, so the step's inputs fail first
    out = _vc_step(steps_ws, step_demo.OVERFLOW_STEP + 1)
    assert "first divergent op none (inputs fail first:" in out, out[-2000:]


# --- compared in one vc (needs the golden-per-step comparison of `vc --step all`, docs/steps.md) ------------
@pytest.mark.tf
@pytest.mark.slow
def test_ac_compares_every_step_and_names_step_2_then_its_op(steps_ws, tmp_path) -> None:
    import shutil

    root = tmp_path / "pd"
    shutil.copytree(steps_ws, root, symlinks=True)  # ac writes results and fix/: leave the module's copy as built
    result = run_cli("ac", "-c", data=root)
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    assert f"steps 0, 1, 2, 3: step 2 diverges first, first divergent op [48] {OVERFLOW_OP}" in result.out
    answer = result.out[result.out.rindex("answer ─"):]
    assert f"first divergent op: [48] {OVERFLOW_OP} (MatMulV2)" in answer
    # the loss curves part one step later (step 3's loss comes from the weights step 2 updated): both are named
    assert "loss curves part first at step 3" in result.out and "TF_DUMP_STEP='2|3'" in result.out


@pytest.mark.tf
@pytest.mark.slow
def test_precheck_replays_the_diverging_step_and_the_report_holds_its_curves(steps_ws, tmp_path) -> None:
    """`ac -c --precheck --report`: every op replayed from step 2's own dumps and golden, the overflow its own
    (float16's) error, the ops after it inheriting; the page holds the step heat map and both loss curves."""
    import re
    import shutil

    root = tmp_path / "pd"
    shutil.copytree(steps_ws, root, symlinks=True)
    result = run_cli("ac", "-c", "--precheck", "--report", data=root, timeout=900)
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    # every op, from step 2's own golden too (a TF input no NPU input stands for is fed from it)
    assert "replay --all (npu/debug_0, step 2): 79 of 79 compute ops replayed" in result.out
    assert f"[48] {OVERFLOW_OP}: its own error explains it (precision)" in result.out
    assert re.search(r"the comparison's (\d+) abnormal ops: 1 by their own error, (\d+) inherit it", result.out)
    page = Path(re.findall(r"^\s+(/\S+/report\.html)\s*$", result.out, re.M)[-1]).read_text()
    for part in ('id="steps-heatmap"', 'id="ranking-chart"', 'id="loss-advice"', "TF_DUMP_STEP=&#39;2|3&#39;"):
        assert part in page, part


@pytest.mark.tf
@pytest.mark.slow
def test_replay_of_one_op_takes_the_step_asked_for(steps_ws, tmp_path) -> None:
    """`replay OP --step N`: the overflow is there at step 2 only (its dump and golden of that step)."""
    import shutil

    root = tmp_path / "pd"
    shutil.copytree(steps_ws, root, symlinks=True)
    for step, verdict in ((0, "OK"), (2, "PRECISION")):
        result = run_cli("replay", OVERFLOW_OP, "--step", str(step), "-q", data=root)
        assert result.status == 0, result.out[-3000:] + result.err[-3000:]
        assert f"replay [48] {OVERFLOW_OP} (MatMulV2): {verdict}\n" in result.out, (step, result.out[-2000:])
