"""The same-step check (analysis/checks/same_step.py; `ac`'s "same step" section) on real demo workspaces.

Three demos are built with the one-shot CLI (`demo DIR --no-check`, a real TensorFlow golden step and the
simulated NPU run): the normal one, one whose NPU runs start from other weights (`--npu-start
other-weights`) and one fed another batch (`--npu-start other-data`). Other cases rewrite one NPU dump of
a copy of the normal demo with the project's own dump writer (formats/npu/npu_dump_write.py): the dumped
input of the op that first reads a weight gets other values, or the same values rounded to float16.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.checks.same_step import same_step_check
from precision_tool.formats.npu.npu_dump import read_dump_header, read_tensor
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
from precision_tool.workspace import Workspace
from tests.conftest import run_cli, run_demo_cli


def _build(tmp_path_factory: pytest.TempPathFactory, name: str, *extra: str) -> Path:
    root = tmp_path_factory.mktemp("same_step") / name
    proc = run_demo_cli("demo", str(root), "--no-check", *extra)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return root


@pytest.fixture(scope="module")
def normal_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory, "normal")


@pytest.fixture(scope="module")
def other_weights_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory, "other_weights", "--npu-start", "other-weights")


@pytest.fixture(scope="module")
def other_data_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory, "other_data", "--npu-start", "other-data")


def _copy(root: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(root, target, ignore=shutil.ignore_patterns("temp"))
    return target


def _reader_dump(root: Path, source: str) -> tuple[Path, int]:
    """The dump file (and input slot) the check reads `source` from."""
    report = same_step_check(Workspace(root))
    assert report is not None
    check = next(c for c in report.checks if c.source == source)
    dump_dir = Workspace(root).newest_dump_dir(0)
    assert dump_dir is not None
    safe = check.reader.replace("/", "_")
    path = next(p for p in dump_dir.rglob("*") if p.is_file() and f".{safe}." in p.name)
    return path, check.reader_input


def _rewrite_input(path: Path, slot: int, change) -> None:  # type: ignore[no-untyped-def]
    """Write the dump again with the project's writer: input `slot` replaced by change(its array)."""
    dump = read_dump_header(path)
    specs: dict[str, list[TensorSpec]] = {"input": [], "output": []}
    for tensor in dump.tensors:
        array = read_tensor(dump, tensor)
        if tensor.kind == "input" and tensor.index == slot:
            array = change(array)
        specs[tensor.kind].append(TensorSpec(array, format=tensor.format, original_shape=tensor.original_shape,
                                             origin_name=tensor.origin_name,
                                             origin_output_index=tensor.origin_output_index))
    write_dump(path, op_name=dump.op_name, inputs=specs["input"], outputs=specs["output"],
               dump_time_us=dump.name.timestamp_us if dump.name else 0)


def test_normal_demo_is_the_same_step(normal_demo: Path) -> None:
    report = same_step_check(Workspace(normal_demo))
    assert report is not None and report.same_step is True
    assert report.count("input") == 2 and report.count("weight") == 9  # input, labels; 9 variables
    assert {c.source for c in report.checks} >= {"input", "labels", "conv1/kernel", "bn2/gamma", "fc2/bias"}
    assert not report.unchecked
    result = run_cli("ac", "-c", data=normal_demo)
    assert result.status == 0, result.out[-2000:] + result.err[-2000:]
    line = next(line for line in result.out.splitlines() if line.startswith("same step:"))
    assert line.startswith("same step: yes — same inputs, same weights (2 input(s), 9 weight(s) checked)")
    assert "both runs computed the same step" in line
    # placed right after the comparison, before the overflow check and the answer
    assert result.out.index("same step:") < result.out.index("overflow:") < result.out.index("answer")
    assert "Traceback" not in result.out + result.err
    result = run_cli("vc", data=normal_demo)  # vc says nothing of the step when it is the same
    assert result.status == 0 and "same step" not in result.out


def test_other_weights_demo_names_the_weight(other_weights_demo: Path) -> None:
    report = same_step_check(Workspace(other_weights_demo))
    assert report is not None and report.same_step is False
    # every variable the demo initialises at random differs; fc2/bias (zeros) is the same whatever the seed
    assert {c.source for c in report.differing} == {"conv1/kernel", "conv1/bias", "conv2/kernel", "bn2/gamma",
                                                   "bn2/beta", "fc1/kernel", "fc1/bias", "fc2/kernel"}
    assert report.differing[0].source == "conv1/kernel"
    assert all(c.kind == "weight" for c in report.differing)
    result = run_cli("ac", "-c", data=other_weights_demo)
    assert "Traceback" not in result.out + result.err
    verdict = ("same step: NO — weight 'conv1/kernel' differs between the NPU run and the golden (432 of 432 "
               "values, max abs diff")
    assert verdict in result.out
    assert "the comparison cannot be trusted until it is fixed" in result.out
    assert "checkpoint not loaded" in result.out
    # the answer block says it first, above the op it would otherwise blame
    answer = result.out[result.out.index("answer ─"):]
    assert answer.splitlines()[1].startswith("same step: NO — weight 'conv1/kernel'")
    # vc's summary ends with the same verdict line
    result = run_cli("vc", data=other_weights_demo)
    assert result.status == 0, result.out[-2000:] + result.err[-2000:]
    last = result.out.strip().splitlines()[-1]
    assert last.startswith("same step: NO — weight 'conv1/kernel' differs") and last.endswith(
        "(`ac` lists each input and weight that differs)")


def test_other_data_demo_names_the_input(other_data_demo: Path) -> None:
    result = run_cli("ac", data=other_data_demo)
    assert "same step: NO — input 'input' differs between the NPU run and the golden (6,144 of 6,144" in result.out
    assert "other data fed" in result.out
    report = same_step_check(Workspace(other_data_demo))
    assert report is not None and [c.source for c in report.differing] == ["input"]


def test_one_rewritten_weight_is_named_with_its_reader(normal_demo: Path, tmp_path: Path) -> None:
    root = _copy(normal_demo, tmp_path)
    path, slot = _reader_dump(root, "fc2/kernel")
    _rewrite_input(path, slot, lambda a: (a * 1.5).astype(a.dtype))
    report = same_step_check(Workspace(root))
    assert report is not None
    [check] = report.differing
    assert check.source == "fc2/kernel" and check.kind == "weight"
    assert check.differing > 0 and check.max_rel_diff == pytest.approx(0.5, rel=1e-3)
    result = run_cli("ac", data=root)
    assert "same step: NO — weight 'fc2/kernel' differs" in result.out
    assert f"{check.reader} in{check.reader_input}" in result.out


def test_float16_rounding_of_a_weight_is_no_difference(normal_demo: Path, tmp_path: Path) -> None:
    """The first reader of fc1/kernel made to hold it in float16: what the dtype explains is not a difference;
    one element moved by more than its rounding is."""
    root = _copy(normal_demo, tmp_path)
    path, slot = _reader_dump(root, "fc1/kernel")
    _rewrite_input(path, slot, lambda a: a.astype(np.float16))
    report = same_step_check(Workspace(root))
    assert report is not None and report.same_step is True
    check = next(c for c in report.checks if c.source == "fc1/kernel")
    assert check.npu_dtype == "float16" and check.differing == 0

    def one_off(a: np.ndarray) -> np.ndarray:
        a = a.copy()
        a.flat[7] = np.float16(a.flat[7]) + np.float16(0.25)
        return a

    _rewrite_input(path, slot, one_off)
    report = same_step_check(Workspace(root))
    assert report is not None
    [check] = report.differing
    assert check.source == "fc1/kernel" and check.differing == 1
    assert check.max_abs_diff == pytest.approx(0.25, abs=1e-3)


def test_bad_files_are_said_in_one_line(normal_demo: Path, tmp_path: Path) -> None:
    root = _copy(normal_demo, tmp_path)
    path, _slot = _reader_dump(root, "conv2/kernel")
    path.write_bytes(path.read_bytes()[:20])  # a truncated dump
    golden = next((root / "tf" / "dump").glob("fc2_BiasAdd_ReadVariableOp.0.*.npy"))
    golden.write_bytes(b"not a numpy file")
    report = same_step_check(Workspace(root))
    assert report is not None
    unchecked = dict(report.unchecked)
    assert set(unchecked) == {"conv2/kernel", "fc2/bias"}
    assert str(path) in unchecked["conv2/kernel"]
    result = run_cli("ac", data=root)
    assert "Traceback" not in result.out + result.err
    assert "same step: yes — same inputs, same weights (2 input(s), 7 weight(s) checked)" in result.out
    assert "not checked: conv2/kernel" in result.out


def test_rank_demo_checks_each_rank_against_its_golden(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`demo --ranks 4`: each rank its own batch (golden in tf/dump/rank_<r>, a tf.function's `_arg_input_0_9`),
    the same weights; its planted fault is an all-reduce input, not an input or weight."""
    root = _build(tmp_path_factory, "ranks", "--ranks", "4")
    report = same_step_check(Workspace(root))
    assert report is not None and report.same_step is True and not report.unchecked
    assert {c.rank for c in report.checks} == {0, 1, 2, 3}
    result = run_cli("ac", data=root)
    assert "same step: yes — same inputs, same weights (8 input(s), 36 weight(s) checked on 4 ranks)" in result.out


def test_widedeep_demo_leaves_optimizer_state_unchecked_and_says_so(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`demo --model widedeep --size reduced`: embeddings and dense weights are checked; FTRL's and Adagrad's
    slots are read only by their update ops (no golden tensor): listed as not checked, never as the same."""
    root = _build(tmp_path_factory, "widedeep", "--model", "widedeep", "--size", "reduced")
    report = same_step_check(Workspace(root))
    assert report is not None and report.same_step is True
    assert report.count("input") == 3 and report.count("weight") == 11
    slots = [source for source, why in report.unchecked if why.startswith("optimizer state")]
    assert "wide/embedding/Ftrl" in slots and "deep/embedding/Adagrad" in slots
    result = run_cli("ac", data=root)
    assert "same step: yes — same inputs, same weights (3 input(s), 11 weight(s) checked)" in result.out
    assert "(optimizer state, read only by its update op" in result.out


def test_numbered_dump_names_are_resolved_through_mapping_csv(normal_demo: Path, tmp_path: Path) -> None:
    """A long op name makes the runtime write a numbered file and a mapping.csv row naming it: the check finds
    the reader's dump through it (here the rewritten conv1/kernel reader, renamed to 1234567)."""
    root = _copy(normal_demo, tmp_path)
    path, slot = _reader_dump(root, "conv1/kernel")
    _rewrite_input(path, slot, lambda a: (a + 1).astype(a.dtype))
    real = path.name
    path.rename(path.with_name("1234567"))
    (path.parent / "mapping.csv").write_text(f"1234567,{real}\n")
    report = same_step_check(Workspace(root))
    assert report is not None
    assert [c.source for c in report.differing] == ["conv1/kernel"]
    assert report.differing[0].max_abs_diff == pytest.approx(1.0, abs=1e-6)


def test_swapped_weights_are_told_apart_by_the_golden_graph(normal_demo: Path, tmp_path: Path) -> None:
    """bn2's gamma and beta swapped in the dump of the op that reads them: both have shape [24] and live in the
    scope bn2/, so only the captured golden graph (tf/checkpoints/model.meta: which ReadVariableOp reads which
    variable) tells that each now holds the other's value."""
    root = _copy(normal_demo, tmp_path)
    path, gamma_slot = _reader_dump(root, "bn2/gamma")
    _same_path, beta_slot = _reader_dump(root, "bn2/beta")
    assert _same_path == path
    dump = read_dump_header(path)
    beta = read_tensor(dump, dump.tensor("input", beta_slot))
    gamma = read_tensor(dump, dump.tensor("input", gamma_slot))
    _rewrite_input(path, gamma_slot, lambda _a: beta)
    _rewrite_input(path, beta_slot, lambda _a: gamma)
    report = same_step_check(Workspace(root))
    assert report is not None
    assert {c.source for c in report.differing} == {"bn2/gamma", "bn2/beta"}
    assert {c.golden for c in report.differing} == {"bn2_ReadVariableOp.0", "bn2_ReadVariableOp_1.0"}


def test_vc_keeps_the_answer_until_a_file_it_read_changes(normal_demo: Path, tmp_path: Path) -> None:
    """same_step_cache.py: the answer is kept under temp/cache/same_step and made again when a dump or golden
    file it read, or a folder it looked in, changes; a damaged entry is made again, never trusted."""
    from precision_tool.analysis.checks.same_step_cache import cached_same_step_check

    root = _copy(normal_demo, tmp_path)
    workspace = Workspace(root)
    dump_dir = workspace.newest_dump_dir(0)
    assert dump_dir is not None
    fresh = same_step_check(workspace)
    assert cached_same_step_check(workspace, 0, dump_dir) == fresh
    [entry] = (root / "temp" / "cache" / "same_step").glob("*.json")
    assert fresh is not None and fresh.same_step is True
    kept = entry.read_text()
    assert cached_same_step_check(workspace, 0, dump_dir) == fresh and entry.read_text() == kept

    path, slot = _reader_dump(root, "fc2/kernel")
    _rewrite_input(path, slot, lambda a: (a * 1.5).astype(a.dtype))
    changed = cached_same_step_check(workspace, 0, dump_dir)
    assert changed is not None and [c.source for c in changed.differing] == ["fc2/kernel"]
    assert changed == same_step_check(workspace)

    entry.write_text('{"read": [], "stamps": [], "report": {"checks": [{"bogus": 1}]}}')
    assert cached_same_step_check(workspace, 0, dump_dir) == changed
    result = run_cli("vc", data=root)
    assert result.status == 0, result.out + result.err
    assert "weight 'fc2/kernel' differs" in result.out
